// One value of the deck checked on its own against its key's kind and
// range, and where it came from (the deck's line and column, or the --set
// argument), for the messages. Internal to config/.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "mosaic/config/impl/deck_schema.hpp"

namespace mosaic::deck {

// Where a value came from, for messages.
struct Origin {
  enum Kind { none, file, override_ } kind = none;
  YAML::Mark mark = YAML::Mark::null_mark();
  std::string text;  // override: the whole --set argument
};

struct BadValue {
  std::string found;
};

// A bad value as a message shows it: 'abc', "an empty list", the quoted
// string "5" where a number was expected (`numeric`).
std::string describe_found(const YAML::Node& n, bool numeric);
// s[from..] is a non-empty run of decimal digits.
bool is_digits(const std::string& s, std::size_t from);
// The whole of s as a double (YAML's .inf, -.inf and .nan too), or nothing.
std::optional<double> parse_double(const std::string& s);
// A number, an integer (exponent form allowed when integral), an unsigned
// 64-bit integer, within k's bounds; each throws BadValue otherwise.
json check_scalar_number(const KeySpec& k, const YAML::Node& n);
json check_integer(const KeySpec& k, const YAML::Node& n);
json check_unsigned64(const YAML::Node& n);
// Validates one value of key k on its own (type and range). Cross-key
// constraints are checked later, per sweep point.
json check_value(const KeySpec& k, const YAML::Node& n, std::string& extra);
// s without leading and trailing blanks and tabs.
std::string trim(const std::string& s);
// A value for a message: a string as it is, anything else as JSON.
std::string compact(const json& j);

}  // namespace mosaic::deck
