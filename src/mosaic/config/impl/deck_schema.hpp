// The deck's schema (docs/INPUT_DECK.md): every key of every section, its
// kind, bounds, choices and default, and the lookups the loader and its
// messages use. Internal to config/: config.hpp is the interface.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mosaic::deck {

using json = nlohmann::json;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::size_t kMaxSweepPoints = 1000000;

enum class Kind { integer, unsigned64, number, choice, string, number_pair, path_list };

struct KeySpec {
  std::string section, name;
  Kind kind = Kind::number;
  // integer / number bounds; an integer's exactly as well (a double rounds
  // 2^63 - 1 up to 2^63, which then passed the range check and wrapped)
  double lo = -kInf, hi = kInf;
  std::int64_t int_lo = 0, int_hi = 0;
  bool lo_open = false, hi_open = false;
  std::vector<std::string> choices;   // choice: the supported values
  std::vector<std::string> reserved;  // choice: recognized, not yet supported
  bool allow_empty = true;            // string
  json def;                           // default; null = required or derived
  bool required = false;
  std::string keyword;  // integer, number: this word is accepted too (`all`, `auto`)

  std::string path() const { return section + "." + name; }

  std::string expected() const;
};

// The deck's sections, and every key of them, in the deck's order.
const std::vector<std::string>& sections();
const std::vector<KeySpec>& schema();
// The key at `path` ("section.name", "section.group.leaf"), nullptr if none.
const KeySpec* find_key(const std::string& path);
bool is_section(const std::string& s);
// The names of a section's keys, in schema order.
std::vector<std::string> keys_of(const std::string& section);
// A key group: a key of a section whose value is itself a mapping of keys
// (output.checkpoint: {dir, every_steps, ...}); its leaves are schema keys
// named "group.leaf". Returns the leaf names of group `path` ("" if `path`
// is not a group).
std::vector<std::string> group_leaves(const std::string& path);
std::string join(const std::vector<std::string>& v, const char* sep = ", ");
// Every key as "section.key", in schema order (did-you-mean's candidates).
std::vector<std::string> all_paths();

}  // namespace mosaic::deck
