// The YAML input deck: schema, overrides, validation and sweep expansion.
// docs/INPUT_DECK.md is the user-facing description of everything here.
#include "mosaic/config/config.hpp"
#include "mosaic/util/did_you_mean.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include <glob.h>

#include <yaml-cpp/yaml.h>

namespace mosaic {
namespace {

using json = nlohmann::json;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::size_t kMaxSweepPoints = 1000000;

// ----------------------------------------------------------------------------
// Schema

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
  std::string keyword;                // integer: this word is accepted too (`all`, `auto`)

  std::string path() const { return section + "." + name; }

  std::string expected() const {
    auto num = [](double v) {
      std::ostringstream os;
      os << v;
      return os.str();
    };
    switch (kind) {
      case Kind::integer: {
        std::string s = "an integer";
        const std::string all = keyword.empty() ? "" : " or " + keyword;
        // The upper limit is the type's (int or int64); say which number it is.
        if (int_hi >= kIntMax) return s + " >= " + std::to_string(int_lo) + " (at most " + std::to_string(int_hi) + ")" + all;
        return s + " in [" + std::to_string(int_lo) + ", " + std::to_string(int_hi) + "]" + all;
      }
      case Kind::unsigned64: return "an unsigned 64-bit integer (0 to 18446744073709551615)";
      case Kind::number: {
        std::string s = "a finite number";
        if (lo == -kInf && hi == kInf) return s;
        if (hi == kInf) return "a number " + std::string(lo_open ? "> " : ">= ") + num(lo);
        return "a number in " + std::string(lo_open ? "(" : "[") + num(lo) + ", " + num(hi) +
               (hi_open ? ")" : "]");
      }
      case Kind::choice: {
        std::string s = "one of ";
        for (std::size_t i = 0; i < choices.size(); ++i) s += (i ? ", " : "") + choices[i];
        return s;
      }
      case Kind::string: return allow_empty ? "a string" : "a non-empty path";
      case Kind::number_pair: return "a list [lo, hi] of two numbers with 0 < lo <= hi";
      case Kind::path_list: return "a non-empty list of .npy file paths, or one path or glob pattern";
    }
    return "";
  }
};

KeySpec integer(const char* sec, const char* name, std::int64_t lo, std::int64_t hi, json def,
                bool required = false) {
  KeySpec k;
  k.section = sec;
  k.name = name;
  k.kind = Kind::integer;
  k.lo = double(lo);
  k.hi = double(hi);
  k.int_lo = lo;
  k.int_hi = hi;
  k.def = std::move(def);
  k.required = required;
  return k;
}
KeySpec number(const char* sec, const char* name, double lo, bool lo_open, double hi,
               bool hi_open, double def) {
  KeySpec k;
  k.section = sec;
  k.name = name;
  k.kind = Kind::number;
  k.lo = lo;
  k.lo_open = lo_open;
  k.hi = hi;
  k.hi_open = hi_open;
  k.def = def;
  return k;
}
KeySpec choice(const char* sec, const char* name, std::vector<std::string> choices,
               const char* def, std::vector<std::string> reserved = {}) {
  KeySpec k;
  k.section = sec;
  k.name = name;
  k.kind = Kind::choice;
  k.choices = std::move(choices);
  k.reserved = std::move(reserved);
  k.def = def;
  return k;
}
KeySpec string_key(const char* sec, const char* name, bool allow_empty, const char* def) {
  KeySpec k;
  k.section = sec;
  k.name = name;
  k.kind = Kind::string;
  k.allow_empty = allow_empty;
  k.def = def;
  return k;
}

const std::vector<std::string>& sections() {
  static const std::vector<std::string> s = {"problem",   "streams", "source",
                                             "algorithm", "run",     "output"};
  return s;
}

const std::vector<KeySpec>& schema() {
  static const std::vector<KeySpec> s = [] {
    std::vector<KeySpec> v;
    v.push_back(integer("problem", "d", 2, kIntMax, nullptr, true));
    v.push_back(integer("problem", "rank", 1, kIntMax, nullptr, true));
    v.push_back(choice("problem", "dtype", {"float", "double"}, "double"));
    v.push_back(choice("streams", "mode", {"weak", "strong"}, "weak"));
    v.push_back(integer("streams", "per_rank", 1, kIntMax, 1));
    v.push_back(integer("streams", "total", 1, kIntMax, nullptr));  // required in strong mode
    v.push_back(choice("source", "type", {"synthetic", "npy"}, "synthetic"));
    v.push_back(integer("source", "rank", 1, kIntMax, nullptr));  // default problem.rank
    v.push_back(number("source", "lambda_max", 0, true, kInf, false, 1.0));
    v.push_back(number("source", "lambda_min", 0, true, kInf, false, 0.1));
    v.push_back(number("source", "noise", 0, true, kInf, false, 0.1));
    {
      KeySpec k;
      k.section = "source";
      k.name = "noise_range";
      k.kind = Kind::number_pair;
      v.push_back(k);  // default: none (homogeneous noise)
    }
    v.push_back(number("source", "drift", -kInf, false, kInf, false, 0.0));
    v.push_back(number("source", "mean_scale", 0, false, kInf, false, 1.0));
    {
      KeySpec k;
      k.section = "source";
      k.name = "paths";
      k.kind = Kind::path_list;
      v.push_back(k);  // default: none; required with type npy
    }
    v.push_back(integer("source", "chunk_rows", 1, kIntMax, 1024));
    v.push_back(choice("algorithm", "covariance_update", {"exact", "first_order"}, "exact"));
    v.push_back(choice("algorithm", "subspace_direction", {"precision", "oja"}, "precision"));
    v.push_back(number("algorithm", "eta_mu", 0, true, 1, true, 0.01));
    v.push_back(number("algorithm", "eta_S", 0, true, 1, true, 0.01));
    v.push_back(number("algorithm", "eta_U", 0, true, 1, true, 0.005));
    v.push_back(number("algorithm", "eta_s", 0, true, 1, true, 0.01));
    v.push_back(number("algorithm", "gamma", 0, false, kInf, false, 1.0));
    v.push_back(number("algorithm", "max_step", 0, true, kInf, false, 1.0));
    {
      // auto: at every block end for float blocked runs, never otherwise
      KeySpec k = integer("algorithm", "reorthonormalize_every", 0, kIntMax, "auto");
      k.keyword = "auto";
      v.push_back(k);
    }
    v.push_back(choice("algorithm", "init", {"data", "random"}, "data"));
    v.push_back(integer("algorithm", "init_samples", 1, kIntMax, nullptr));  // default 2*rank
    v.push_back(number("algorithm", "init_scale", 0, true, kInf, false, 1.0));
    {
      // auto: the measured rule of auto_block_size for the backend
      KeySpec k = integer("algorithm", "block_size", 0, kIntMax, "auto");
      k.keyword = "auto";
      v.push_back(k);
    }
    v.push_back(choice("algorithm", "precision_solve", {"dense", "maintained"}, "dense"));
    v.push_back(integer("algorithm", "refactor_every", 1, kIntMax, 64));
    {
      KeySpec k = integer("run", "steps", 1, kInt64Max, 1000);
      k.keyword = "all";  // npy sources: every row of the shortest file
      v.push_back(k);
    }
    v.push_back(integer("run", "warmup_steps", 0, kInt64Max, 0));
    v.push_back(integer("run", "diagnostics_every", 0, kInt64Max, 0));
    v.push_back(number("run", "progress_every_s", 0, true, kInf, false, 10.0));
    // Verification (run.hpp): what the verdict judges besides the invariants.
    v.push_back(choice("run", "accuracy", {"checked", "throughput_only"}, "checked"));
    v.push_back(number("run", "tracking_threshold", 0, true, 1, false, 0.3));
    v.push_back(number("run", "max_clamped_fraction", 0, false, 1, false, 0.5));
    v.push_back(integer("run", "reference_check_steps", 0, kInt64Max, 200));
    v.push_back(integer("run", "reference_check_stream", 0, kInt64Max, 0));
    {
      KeySpec k;
      k.section = "run";
      k.name = "seed";
      k.kind = Kind::unsigned64;
      k.def = std::uint64_t(1);
      v.push_back(k);
    }
    v.push_back(string_key("run", "restart_from", true, ""));
    v.push_back(string_key("output", "result", false, "mosaic_result.json"));
    v.push_back(string_key("output", "state_dir", true, ""));
    // output.checkpoint: a nested mapping (a key group, see group_of);
    // docs/CHECKPOINT.md.
    v.push_back(string_key("output", "checkpoint.dir", true, ""));
    v.push_back(integer("output", "checkpoint.every_steps", 1, kInt64Max, nullptr));  // default: none
    {
      KeySpec k = number("output", "checkpoint.every_seconds", 0, true, kInf, false, 0);
      k.def = nullptr;  // default: none
      v.push_back(k);
    }
    v.push_back(integer("output", "checkpoint.keep", 1, kIntMax, 2));
    return v;
  }();
  return s;
}

const KeySpec* find_key(const std::string& path) {
  for (const auto& k : schema())
    if (k.path() == path) return &k;
  return nullptr;
}

bool is_section(const std::string& s) {
  return std::find(sections().begin(), sections().end(), s) != sections().end();
}

std::vector<std::string> keys_of(const std::string& section) {
  std::vector<std::string> out;
  for (const auto& k : schema())
    if (k.section == section) out.push_back(k.name);
  return out;
}

// A key group: a key of a section whose value is itself a mapping of keys
// (output.checkpoint: {dir, every_steps, ...}); its leaves are schema keys
// named "group.leaf". Returns the leaf names of group `path` ("" if `path`
// is not a group).
std::vector<std::string> group_leaves(const std::string& path) {
  std::vector<std::string> out;
  if (path.find('.') == std::string::npos) return out;  // a section, not a group
  const std::string prefix = path + ".";
  for (const auto& k : schema())
    if (k.path().compare(0, prefix.size(), prefix) == 0) out.push_back(k.path().substr(prefix.size()));
  return out;
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

// ----------------------------------------------------------------------------
// Did-you-mean

std::vector<std::string> all_paths() {
  std::vector<std::string> v;
  for (const auto& k : schema()) v.push_back(k.path());
  return v;
}

// ----------------------------------------------------------------------------
// Scalar parsing

// Where a value came from, for messages.
struct Origin {
  enum Kind { none, file, override_ } kind = none;
  YAML::Mark mark = YAML::Mark::null_mark();
  std::string text;  // override: the whole --set argument
};

struct BadValue {
  std::string found;
};

std::string describe_found(const YAML::Node& n, bool numeric) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return "an empty value";
    case YAML::NodeType::Sequence: return n.size() == 0 ? "an empty list" : "a list";
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Scalar:
      if (numeric && n.Tag() == "!") return "the quoted string \"" + n.Scalar() + "\"";
      return "'" + n.Scalar() + "'";
  }
  return "?";
}

bool is_digits(const std::string& s, std::size_t from) {
  if (from >= s.size()) return false;
  for (std::size_t i = from; i < s.size(); ++i)
    if (!std::isdigit((unsigned char)s[i])) return false;
  return true;
}

std::optional<double> parse_double(const std::string& s) {
  if (s.empty() || std::isspace((unsigned char)s[0])) return std::nullopt;
  // YAML spellings of infinity and NaN.
  std::string l = s;
  for (auto& c : l) c = char(std::tolower((unsigned char)c));
  if (l == ".inf" || l == "+.inf") return kInf;
  if (l == "-.inf") return -kInf;
  if (l == ".nan") return std::numeric_limits<double>::quiet_NaN();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

json check_scalar_number(const KeySpec& k, const YAML::Node& n) {
  if (!n.IsScalar() || n.Tag() == "!") throw BadValue{describe_found(n, true)};
  const std::string& s = n.Scalar();
  const auto v = parse_double(s);
  if (!v) throw BadValue{describe_found(n, true)};
  const double x = *v;
  bool ok = std::isfinite(x);
  if (ok) ok = k.lo_open ? x > k.lo : x >= k.lo;
  if (ok) ok = k.hi_open ? x < k.hi : x <= k.hi;
  if (!ok) throw BadValue{s};
  return x;
}

json check_integer(const KeySpec& k, const YAML::Node& n) {
  if (!n.IsScalar() || n.Tag() == "!") throw BadValue{describe_found(n, true)};
  const std::string& s = n.Scalar();
  const std::size_t from = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
  long double value;
  if (is_digits(s, from)) {
    value = std::strtold(s.c_str(), nullptr);
  } else {
    // Also accept an integral number in exponent form, e.g. 1e5.
    const auto v = parse_double(s);
    if (!v || !std::isfinite(*v) || std::floor(*v) != *v) throw BadValue{describe_found(n, true)};
    value = *v;
  }
  // long double holds every int64 exactly (and the parsed value to 64 bits).
  if (!(value >= (long double)k.int_lo && value <= (long double)k.int_hi)) throw BadValue{s};
  return std::int64_t(value);
}

json check_unsigned64(const YAML::Node& n) {
  if (!n.IsScalar() || n.Tag() == "!") throw BadValue{describe_found(n, true)};
  const std::string& s = n.Scalar();
  const std::size_t from = (!s.empty() && s[0] == '+') ? 1 : 0;
  if (!is_digits(s, from)) {
    if (!s.empty() && s[0] == '-' && is_digits(s, 1)) throw BadValue{s};
    throw BadValue{describe_found(n, true)};
  }
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str() + from, nullptr, 10);
  if (errno == ERANGE) throw BadValue{s};
  return std::uint64_t(v);
}

// Validates one value of key k on its own (type and range). Cross-key
// constraints are checked later, per sweep point.
json check_value(const KeySpec& k, const YAML::Node& n, std::string& extra) {
  switch (k.kind) {
    case Kind::integer:
      if (!k.keyword.empty() && n.IsScalar() && n.Tag() != "!" && n.Scalar() == k.keyword) return k.keyword;
      return check_integer(k, n);
    case Kind::unsigned64: return check_unsigned64(n);
    case Kind::number: return check_scalar_number(k, n);
    case Kind::choice: {
      if (!n.IsScalar()) throw BadValue{describe_found(n, false)};
      const std::string& s = n.Scalar();
      if (std::find(k.choices.begin(), k.choices.end(), s) != k.choices.end()) return s;
      if (std::find(k.reserved.begin(), k.reserved.end(), s) != k.reserved.end()) {
        extra = "'" + s + "' is reserved but not yet supported; supported: " + join(k.choices);
        throw BadValue{};
      }
      std::vector<std::string> all = k.choices;
      all.insert(all.end(), k.reserved.begin(), k.reserved.end());
      extra = did_you_mean(s, all);
      throw BadValue{"'" + s + "'"};
    }
    case Kind::string: {
      if (n.IsNull()) {
        if (k.allow_empty) return "";
        throw BadValue{describe_found(n, false)};
      }
      if (!n.IsScalar()) throw BadValue{describe_found(n, false)};
      if (n.Scalar().empty() && !k.allow_empty) throw BadValue{"an empty string"};
      return n.Scalar();
    }
    case Kind::number_pair: {
      if (!n.IsSequence() || n.size() != 2) {
        if (n.IsSequence())
          throw BadValue{"a list of " + std::to_string(n.size()) +
                         (n.size() == 1 ? " value" : " values")};
        throw BadValue{describe_found(n, true)};
      }
      KeySpec positive = k;
      positive.kind = Kind::number;
      positive.lo = 0;
      positive.lo_open = true;
      positive.hi = kInf;
      json out = json::array();
      for (std::size_t i = 0; i < 2; ++i) {
        try {
          out.push_back(check_scalar_number(positive, n[i]));
        } catch (const BadValue&) {
          throw BadValue{"[" + (n[0].IsScalar() ? n[0].Scalar() : "...") + ", " +
                         (n[1].IsScalar() ? n[1].Scalar() : "...") + "]"};
        }
      }
      if (out[0].get<double>() > out[1].get<double>())
        throw BadValue{"[" + n[0].Scalar() + ", " + n[1].Scalar() + "] (lo > hi)"};
      return out;
    }
    case Kind::path_list: {
      // One string: a path or glob pattern (expanded when the point is
      // resolved); a list: literal paths. Never empty.
      if (n.IsScalar()) {
        if (n.Scalar().empty()) throw BadValue{"an empty string"};
        return n.Scalar();
      }
      if (!n.IsSequence() || n.size() == 0) throw BadValue{describe_found(n, false)};
      json out = json::array();
      for (std::size_t i = 0; i < n.size(); ++i) {
        if (!n[i].IsScalar() || n[i].Scalar().empty())
          throw BadValue{"a list whose entry " + std::to_string(i) + " is " +
                         (n[i].IsScalar() ? std::string("an empty string") : describe_found(n[i], false))};
        out.push_back(n[i].Scalar());
      }
      return out;
    }
  }
  return nullptr;
}

// ----------------------------------------------------------------------------
// The loader

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::string compact(const json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); }

class Loader {
 public:
  Loader(std::string deck, std::vector<std::string> overrides)
      : deck_(std::move(deck)), overrides_(std::move(overrides)) {}

  std::vector<SweepPoint> load(const std::string& text) {
    read_deck(parse(text));
    apply_overrides();
    check_values();
    return expand();
  }

 private:
  struct Given {
    YAML::Node node;
    Origin origin;
  };
  struct Value {
    json value;
    Origin origin;
    bool explicit_ = false;
  };
  struct SweepEntry {
    std::string path;
    YAML::Node list;
    Origin origin;                 // the key (file) or the --set argument
    std::vector<Value> values;     // checked
  };

  std::string deck_;
  std::vector<std::string> overrides_;
  std::map<std::string, Given> given_;
  std::vector<SweepEntry> sweep_;
  std::map<std::string, Origin> section_origin_;
  std::map<std::string, Value> checked_;
  std::string context_;  // "sweep point 2 of 4 (...): " while resolving a point

  // ---- messages
  Origin at(const YAML::Node& n) const {
    Origin o;
    o.kind = Origin::file;
    o.mark = n.Mark();
    return o;
  }
  std::string where(const Origin& o) const {
    switch (o.kind) {
      case Origin::file:
        if (!o.mark.is_null())
          return deck_ + ":" + std::to_string(o.mark.line + 1) + ":" +
                 std::to_string(o.mark.column + 1);
        return deck_;
      case Origin::override_: return deck_ + ": --set " + o.text;
      case Origin::none: return deck_;
    }
    return deck_;
  }
  [[noreturn]] void fail(const Origin& o, const std::string& what) const {
    throw DeckError(where(o) + ": " + context_ + what);
  }
  [[noreturn]] void fail_value(const Origin& o, const std::string& label, const KeySpec& k,
                               const BadValue& b, const std::string& extra) const {
    if (b.found.empty()) fail(o, label + ": " + extra);
    fail(o, label + ": expected " + k.expected() + ", found " + b.found + extra);
  }
  // A value node's origin: its own mark, or its key's where the value is empty
  // (yaml-cpp marks an empty value at the next token).
  Origin value_origin(const YAML::Node& key, const YAML::Node& value) const {
    return value.IsNull() ? at(key) : at(value);
  }

  // ---- parse
  YAML::Node parse(const std::string& text) {
    std::vector<YAML::Node> docs;
    try {
      docs = YAML::LoadAll(text);
    } catch (const YAML::ParserException& e) {
      Origin o;
      o.kind = Origin::file;
      o.mark = e.mark;
      fail(o, "YAML syntax error: " + e.msg);
    } catch (const YAML::Exception& e) {
      fail(Origin{}, std::string("YAML error: ") + e.what());
    }
    if (docs.size() > 1)
      fail(at(docs[1]), "a deck is a single YAML document, found " + std::to_string(docs.size()));
    if (docs.empty() || docs[0].IsNull()) return YAML::Node(YAML::NodeType::Map);
    if (!docs[0].IsMap())
      fail(at(docs[0]), "expected a mapping of sections (" + join(sections()) +
                            ", sweep), found " + describe_found(docs[0], false));
    return docs[0];
  }

  std::string key_text(const YAML::Node& key) const {
    if (!key.IsScalar()) fail(at(key), "expected a plain key, found " + describe_found(key, false));
    return key.Scalar();
  }

  void read_deck(const YAML::Node& root) {
    std::map<std::string, Origin> seen;
    for (auto it = root.begin(); it != root.end(); ++it) {
      const std::string sec = key_text(it->first);
      check_duplicate(seen, sec, it->first, sec);
      section_origin_[sec] = at(it->first);
      if (sec == "sweep") {
        read_sweep(it->first, it->second);
        continue;
      }
      if (!is_section(sec)) {
        if (find_key(sec))
          fail(at(it->first), "'" + sec + "' is a key path; write it nested, as " +
                                  sec.substr(0, sec.find('.')) + ": {" +
                                  sec.substr(sec.find('.') + 1) + ": ...}");
        std::vector<std::string> valid = sections();
        valid.push_back("sweep");
        fail(at(it->first), "unknown section '" + sec + "'" + did_you_mean(sec, valid) +
                                "; valid sections: " + join(valid));
      }
      const YAML::Node& body = it->second;
      if (body.IsNull()) continue;
      if (!body.IsMap())
        fail(value_origin(it->first, body),
             sec + ": expected a mapping of keys (" + join(keys_of(sec)) + "), found " +
                 describe_found(body, false));
      std::map<std::string, Origin> seen_keys;
      for (auto kt = body.begin(); kt != body.end(); ++kt) {
        const std::string name = key_text(kt->first);
        const std::string path = sec + "." + name;
        check_duplicate(seen_keys, name, kt->first, path);
        if (!find_key(path) && !group_leaves(path).empty()) {
          read_group(path, kt->first, kt->second);
          continue;
        }
        if (!find_key(path))
          fail(at(kt->first), "unknown key '" + path + "'" +
                                  did_you_mean(name, keys_of(sec), sec + ".") + "; valid keys in " +
                                  sec + ": " + join(keys_of(sec)));
        given_[path] = Given{kt->second, value_origin(kt->first, kt->second)};
      }
    }
  }

  // A key group given as a mapping in the deck, e.g. output.checkpoint.
  void read_group(const std::string& path, const YAML::Node& key, const YAML::Node& body) {
    const std::vector<std::string> leaves = group_leaves(path);
    if (body.IsNull()) return;
    if (!body.IsMap())
      fail(value_origin(key, body), path + ": expected a mapping of keys (" + join(leaves) + "), found " +
                                        describe_found(body, false));
    std::map<std::string, Origin> seen;
    for (auto it = body.begin(); it != body.end(); ++it) {
      const std::string name = key_text(it->first);
      const std::string leaf = path + "." + name;
      check_duplicate(seen, name, it->first, leaf);
      if (!find_key(leaf))
        fail(at(it->first), "unknown key '" + leaf + "'" + did_you_mean(name, leaves, path + ".") +
                                "; valid keys in " + path + ": " + join(leaves));
      given_[leaf] = Given{it->second, value_origin(it->first, it->second)};
    }
  }

  void check_duplicate(std::map<std::string, Origin>& seen, const std::string& name,
                       const YAML::Node& key, const std::string& label) const {
    auto [pos, inserted] = seen.emplace(name, at(key));
    if (!inserted)
      fail(at(key), "duplicate key '" + label + "' (first given at line " +
                        std::to_string(pos->second.mark.line + 1) + ")");
  }

  // A sweep key path must name a leaf key of the schema.
  void check_sweep_path(const std::string& path, const Origin& o) const {
    if (find_key(path)) return;
    if (path == "sweep" || path.rfind("sweep.", 0) == 0) fail(o, "the sweep cannot sweep itself");
    if (is_section(path))
      fail(o, "sweep: '" + path + "' is a section, not a key; sweep one of its keys: " + path +
                  "." + join(keys_of(path), (", " + path + ".").c_str()));
    fail(o, "sweep: unknown key path '" + path + "'" + did_you_mean(path, all_paths()) +
                "; a sweep key is a path such as problem.d (see docs/INPUT_DECK.md)");
  }

  void add_sweep(const std::string& path, const YAML::Node& list, const Origin& key_origin,
                 const Origin& value_origin) {
    check_sweep_path(path, key_origin);
    if (!list.IsSequence() || list.size() == 0)
      fail(value_origin, "sweep." + path + ": expected a non-empty list of values, found " +
                             describe_found(list, false));
    for (auto& e : sweep_)
      if (e.path == path) {  // --set replaces a swept key's list in place
        e.list = list;
        e.origin = value_origin;
        return;
      }
    sweep_.push_back(SweepEntry{path, list, value_origin, {}});
  }

  void read_sweep(const YAML::Node& key, const YAML::Node& body) {
    if (body.IsNull()) return;
    if (!body.IsMap())
      fail(value_origin(key, body),
           "sweep: expected a mapping from key paths to lists of values, found " +
               describe_found(body, false));
    std::map<std::string, Origin> seen;
    for (auto it = body.begin(); it != body.end(); ++it) {
      const std::string path = key_text(it->first);
      check_duplicate(seen, path, it->first, "sweep." + path);
      add_sweep(path, it->second, at(it->first), value_origin(it->first, it->second));
    }
  }

  // ---- overrides
  void apply_overrides() {
    for (const std::string& arg : overrides_) {
      Origin o;
      o.kind = Origin::override_;
      o.text = arg;
      const auto eq = arg.find('=');
      if (eq == std::string::npos)
        fail(o, "expected key.path=value (no '=' found), e.g. --set problem.d=512");
      const std::string path = trim(arg.substr(0, eq));
      YAML::Node value;
      try {
        value = YAML::Load(arg.substr(eq + 1));
      } catch (const YAML::Exception& e) {
        fail(o, path + ": the value is not valid YAML: " + e.msg);
      }
      if (path.rfind("sweep.", 0) == 0) {
        add_sweep(path.substr(6), value, o, o);
        continue;
      }
      if (path == "sweep")
        fail(o, "set one swept key at a time: --set sweep.<key.path>=[v1, v2, ...]");
      if (!find_key(path) && !group_leaves(path).empty()) {  // --set output.checkpoint={dir: c, keep: 3}
        if (!value.IsMap())
          fail(o, path + ": expected a mapping of keys (" + join(group_leaves(path)) + "), found " +
                      describe_found(value, false) + "; or set one key, e.g. --set " + path + "." +
                      group_leaves(path).front() + "=...");
        for (auto it = value.begin(); it != value.end(); ++it) {
          const std::string name = it->first.IsScalar() ? it->first.Scalar() : std::string("?");
          if (!find_key(path + "." + name))
            fail(o, "unknown key '" + path + "." + name + "'" + did_you_mean(name, group_leaves(path), path + ".") +
                        "; valid keys in " + path + ": " + join(group_leaves(path)));
          given_[path + "." + name] = Given{it->second, o};
        }
        continue;
      }
      if (!find_key(path)) {
        const auto dot = path.find('.');
        const std::string sec = path.substr(0, dot);
        if (is_section(sec) && dot == std::string::npos)
          fail(o, "'" + sec + "' is a section, not a key; use " + sec + ".<key>=value (keys: " +
                      join(keys_of(sec)) + ")");
        if (is_section(sec)) {
          const std::string name = path.substr(dot + 1);
          fail(o, "unknown key '" + path + "'" + did_you_mean(name, keys_of(sec), sec + ".") +
                      "; valid keys in " + sec + ": " + join(keys_of(sec)));
        }
        std::vector<std::string> valid = sections();
        valid.push_back("sweep");
        fail(o, "unknown key path '" + path + "'" + did_you_mean(path, all_paths()) +
                    "; paths start with one of: " + join(valid));
      }
      given_[path] = Given{value, o};
      // Pinning a swept key with --set removes it from the sweep.
      sweep_.erase(std::remove_if(sweep_.begin(), sweep_.end(),
                                  [&](const SweepEntry& e) { return e.path == path; }),
                   sweep_.end());
    }
  }

  // ---- per-key checks
  void check_values() {
    for (const auto& [path, g] : given_) {
      const KeySpec& k = *find_key(path);
      std::string extra;
      try {
        checked_[path] = Value{check_value(k, g.node, extra), g.origin, true};
      } catch (const BadValue& b) {
        fail_value(g.origin, path, k, b, extra);
      }
    }
    for (auto& e : sweep_) {
      const KeySpec& k = *find_key(e.path);
      for (std::size_t i = 0; i < e.list.size(); ++i) {
        const YAML::Node& n = e.list[i];
        Origin o = e.origin;
        if (o.kind == Origin::file && !n.IsNull()) o.mark = n.Mark();
        std::string extra;
        try {
          e.values.push_back(Value{check_value(k, n, extra), o, true});
        } catch (const BadValue& b) {
          fail_value(o, "sweep." + e.path + "[" + std::to_string(i) + "]", k, b, extra);
        }
      }
    }
    auto swept = [&](const std::string& p) {
      for (const auto& e : sweep_)
        if (e.path == p) return &e;
      return static_cast<const SweepEntry*>(nullptr);
    };
    for (const auto& k : schema()) {
      if (!k.required || checked_.count(k.path()) || swept(k.path())) continue;
      auto sec = section_origin_.find(k.section);
      if (sec == section_origin_.end())
        fail(Origin{}, k.section + ": required section is missing (it must set " +
                           k.path() + ", " + k.expected() + ")");
      fail(sec->second, k.path() + ": required key is missing (expected " + k.expected() + ")");
    }
    // noise and noise_range are mutually exclusive.
    const Origin* noise = nullptr;
    const Origin* range = nullptr;
    if (checked_.count("source.noise")) noise = &checked_["source.noise"].origin;
    if (auto e = swept("source.noise")) noise = &e->origin;
    if (checked_.count("source.noise_range")) range = &checked_["source.noise_range"].origin;
    if (auto e = swept("source.noise_range")) range = &e->origin;
    if (noise && range)
      fail(*range, "source.noise_range: cannot be combined with an explicit source.noise (given at " +
                       where(*noise) + "); give homogeneous noise or a heterogeneous range, not both");
  }

  // ---- expansion and resolution
  std::vector<SweepPoint> expand() {
    std::size_t count = 1;
    for (const auto& e : sweep_) {
      count *= e.values.size();
      if (count > kMaxSweepPoints)
        fail(e.origin, "sweep: more than " + std::to_string(kMaxSweepPoints) + " points");
    }
    // A checkpoint holds the state of one run: no checkpoints, and no
    // restart, across the points of a sweep.
    for (const char* p : {"output.checkpoint.dir", "run.restart_from"}) {
      const auto it = checked_.find(p);
      const bool set = it != checked_.end() && !it->second.value.get<std::string>().empty();
      bool swept = false;
      for (const auto& e : sweep_) swept = swept || e.path == p;
      if ((set || swept) && count > 1)
        fail(set ? it->second.origin : sweep_.front().origin,
             std::string(p) + ": expected a deck without a sweep (a checkpoint holds the state of one run), "
                              "found a sweep of " + std::to_string(count) + " points");
    }
    std::vector<SweepPoint> points;
    points.reserve(count);
    for (std::size_t idx = 0; idx < count; ++idx) {
      // Mixed radix, the last sweep key fastest.
      std::vector<std::size_t> digit(sweep_.size());
      std::size_t rest = idx;
      for (std::size_t j = sweep_.size(); j-- > 0;) {
        digit[j] = rest % sweep_[j].values.size();
        rest /= sweep_[j].values.size();
      }
      std::map<std::string, Value> eff;
      for (const auto& k : schema()) eff[k.path()] = Value{k.def, Origin{}, false};
      for (const auto& [p, v] : checked_) eff[p] = v;
      SweepPoint sp;
      std::string desc;
      for (std::size_t j = 0; j < sweep_.size(); ++j) {
        const Value& v = sweep_[j].values[digit[j]];
        eff[sweep_[j].path] = v;
        sp.point[sweep_[j].path] = v.value;
        desc += (j ? ", " : "") + sweep_[j].path + "=" + compact(v.value);
      }
      context_.clear();
      if (!sweep_.empty())
        context_ = "sweep point " + std::to_string(idx + 1) + " of " + std::to_string(count) +
                   " (" + desc + "): ";
      sp.config = resolve(eff);
      sp.config.resolved["sweep"] = {{"index", idx}, {"count", count}, {"point", sp.point}};
      points.push_back(std::move(sp));
    }
    context_.clear();
    return points;
  }

  // source.paths of an npy source: a list of literal paths, or one string,
  // a glob pattern (glob(3), sorted) if it has a wildcard (* ? [), else one
  // path. Relative paths from the deck file are taken against the deck's
  // directory; those from --set against the current directory. The resolved
  // deck shows the expanded list. Files are not opened here (the driver
  // checks them on the rank that owns them, before the run).
  void resolve_npy_source(std::map<std::string, Value>& eff, RunConfig& c) const {
    const Value& v = eff.at("source.paths");
    if (v.value.is_null())
      fail(eff.at("source.type").origin,
           "source.paths: required when source.type is npy (expected " +
               find_key("source.paths")->expected() + ")");
    const std::filesystem::path base =
        v.origin.kind == Origin::file ? std::filesystem::path(deck_).parent_path() : std::filesystem::path();
    auto resolve_path = [&](const std::string& p) {
      const std::filesystem::path q(p);
      return (q.is_relative() && !base.empty() ? base / q : q).lexically_normal().string();
    };
    std::vector<std::string> out;
    if (v.value.is_string()) {
      const std::string pattern = resolve_path(v.value.get<std::string>());
      if (pattern.find_first_of("*?[") == std::string::npos) {
        out.push_back(pattern);
      } else {
        glob_t g{};
        const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
        if (rc == 0)
          for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
        ::globfree(&g);
        if (rc == GLOB_NOMATCH || (rc == 0 && out.empty()))
          fail(v.origin, "source.paths: the pattern '" + pattern + "' matches no files");
        if (rc != 0)
          fail(v.origin, "source.paths: cannot expand the pattern '" + pattern + "' (" +
                             (rc == GLOB_ABORTED ? "a directory could not be read" : "out of memory") + ")");
        std::sort(out.begin(), out.end());
      }
    } else {
      for (const auto& p : v.value) out.push_back(resolve_path(p.get<std::string>()));
    }
    c.source.paths = out;
    c.source.chunk_rows = int(eff.at("source.chunk_rows").value.get<std::int64_t>());
    eff["source.paths"] = Value{json(out), v.origin, v.explicit_};
  }

  RunConfig resolve(std::map<std::string, Value>& eff) const {
    auto num = [&](const char* p) { return eff.at(p).value.get<double>(); };
    auto i64 = [&](const char* p) { return eff.at(p).value.get<std::int64_t>(); };
    auto str = [&](const char* p) { return eff.at(p).value.get<std::string>(); };
    auto origin = [&](const char* p) { return eff.at(p).origin; };
    auto show = [](double v) {
      std::ostringstream os;
      os << v;
      return os.str();
    };

    RunConfig c;
    c.deck_path = deck_;
    const std::int64_t d = i64("problem.d"), r = i64("problem.rank");
    if (r >= d)
      fail(origin("problem.rank"), "problem.rank: expected an integer in [1, d-1] = [1, " +
                                       std::to_string(d - 1) + "] for problem.d = " +
                                       std::to_string(d) + ", found " + std::to_string(r));
    c.problem.d = int(d);
    c.problem.rank = int(r);
    c.problem.dtype = str("problem.dtype") == "float" ? Dtype::float32 : Dtype::float64;

    c.source.type = str("source.type");
    const bool npy = c.source.type == "npy";
    if (npy) resolve_npy_source(eff, c);
    // npy: the files are the streams, divided over the ranks (strong mode)
    // unless the deck asks for weak mode explicitly.
    if (npy && !eff.at("streams.mode").explicit_)
      eff["streams.mode"] = Value{json("strong"), origin("source.type"), false};
    c.streams.mode = str("streams.mode") == "strong" ? StreamMode::strong : StreamMode::weak;
    c.streams.per_rank = int(i64("streams.per_rank"));
    if (npy && c.streams.mode == StreamMode::strong) {
      const std::int64_t files = std::int64_t(c.source.paths.size());
      if (eff.at("streams.total").value.is_null())
        eff["streams.total"] = Value{json(files), origin("source.paths"), false};
      else if (i64("streams.total") != files)
        fail(origin("streams.total"),
             "streams.total: expected the number of files in source.paths (" + std::to_string(files) +
                 ") with source.type npy, found " + std::to_string(i64("streams.total")) +
                 "; each file is one stream (leave streams.total out to use the file count)");
    }
    if (c.streams.mode == StreamMode::strong) {
      if (eff.at("streams.total").value.is_null())
        fail(origin("streams.mode"), "streams.total: required when streams.mode is strong "
                                     "(expected an integer >= 1: the number of streams divided "
                                     "over the MPI ranks)");
    }
    if (!eff.at("streams.total").value.is_null()) c.streams.total = int(i64("streams.total"));

    SyntheticSpec& s = c.source.synthetic;
    s.d = int(d);
    // The synthetic-only keys are accepted and ignored with type npy (their
    // own type and range are still checked), as streams.total is in weak
    // mode, so a deck can sweep source.type; their cross-key rules apply
    // only to the synthetic source.
    if (eff.at("source.rank").value.is_null()) {
      if (!npy && 2 * r > d)
        fail(origin("problem.rank"),
             "source.rank: defaults to problem.rank = " + std::to_string(r) +
                 ", which must be in [1, d/2] = [1, " + std::to_string(d / 2) +
                 "] for problem.d = " + std::to_string(d) +
                 " (the truth needs 2*rank orthonormal columns); set source.rank explicitly");
      eff["source.rank"] = Value{json(r), origin("problem.rank"), false};
    }
    const std::int64_t sr = i64("source.rank");
    if (!npy && 2 * sr > d)
      fail(origin("source.rank"), "source.rank: expected an integer in [1, d/2] = [1, " +
                                      std::to_string(d / 2) + "] for problem.d = " +
                                      std::to_string(d) + ", found " + std::to_string(sr));
    s.r = int(sr);
    s.lambda_max = num("source.lambda_max");
    s.lambda_min = num("source.lambda_min");
    if (!npy && s.lambda_min > s.lambda_max) {
      const bool min_explicit = eff.at("source.lambda_min").explicit_;
      fail(origin(min_explicit ? "source.lambda_min" : "source.lambda_max"),
           std::string(min_explicit ? "source.lambda_min" : "source.lambda_max") +
               ": expected 0 < source.lambda_min <= source.lambda_max, found lambda_min = " +
               show(s.lambda_min) + ", lambda_max = " + show(s.lambda_max));
    }
    if (!eff.at("source.noise_range").value.is_null()) {
      s.noise_min = eff.at("source.noise_range").value[0].get<double>();
      s.noise_max = eff.at("source.noise_range").value[1].get<double>();
      eff["source.noise"].value = nullptr;  // not used: heterogeneous noise
    } else {
      s.noise = num("source.noise");
    }
    s.drift = num("source.drift");
    s.mean_scale = num("source.mean_scale");
    s.seed = eff.at("run.seed").value.get<std::uint64_t>();

    MosaicParams& a = c.algorithm;
    a.covariance_update = str("algorithm.covariance_update") == "exact"
                              ? CovarianceUpdate::exact
                              : CovarianceUpdate::first_order;
    a.subspace_direction = str("algorithm.subspace_direction") == "precision"
                               ? SubspaceDirection::precision
                               : SubspaceDirection::oja;
    a.eta_mu = num("algorithm.eta_mu");
    a.eta_S = num("algorithm.eta_S");
    a.eta_U = num("algorithm.eta_U");
    a.eta_s = num("algorithm.eta_s");
    a.gamma = num("algorithm.gamma");
    a.max_step = num("algorithm.max_step");
    auto int_or_auto = [&](const char* key) {
      return eff.at(key).value.is_string() ? kAuto : int(i64(key));
    };
    a.reorthonormalize_every = int_or_auto("algorithm.reorthonormalize_every");
    a.init = str("algorithm.init") == "data" ? InitMode::data : InitMode::random;
    if (eff.at("algorithm.init_samples").value.is_null())
      eff["algorithm.init_samples"] = Value{json(2 * r), origin("problem.rank"), false};
    const std::int64_t n0 = i64("algorithm.init_samples");
    if (a.init == InitMode::data && n0 < r + 1)
      fail(origin("algorithm.init_samples"),
           "algorithm.init_samples: expected an integer >= problem.rank + 1 = " +
               std::to_string(r + 1) + " with algorithm.init: data, found " + std::to_string(n0));
    a.init_samples = int(n0);
    a.init_scale = num("algorithm.init_scale");
    a.block_size = int_or_auto("algorithm.block_size");
    a.precision_solve =
        str("algorithm.precision_solve") == "dense" ? PrecisionSolve::dense : PrecisionSolve::maintained;
    a.refactor_every = int(i64("algorithm.refactor_every"));

    if (eff.at("run.steps").value.is_string()) {  // `all`
      if (!npy)
        fail(origin("run.steps"), "run.steps: 'all' (every row of the input files) needs source.type npy; "
                                  "give a number of steps (an integer >= 1) for source.type " +
                                      c.source.type);
      c.run.steps_all = true;
      c.run.steps = 0;
    } else {
      c.run.steps = i64("run.steps");
    }
    c.run.warmup_steps = i64("run.warmup_steps");
    c.run.diagnostics_every = i64("run.diagnostics_every");
    c.run.progress_every_s = num("run.progress_every_s");
    c.run.check_accuracy = str("run.accuracy") == "checked";
    c.run.tracking_threshold = num("run.tracking_threshold");
    c.run.max_clamped_fraction = num("run.max_clamped_fraction");
    c.run.reference_check_steps = i64("run.reference_check_steps");
    c.run.reference_check_stream = std::uint64_t(i64("run.reference_check_stream"));
    c.run.seed = s.seed;

    c.output.result = str("output.result");
    c.output.state_dir = str("output.state_dir");
    CheckpointConfig& ck = c.output.checkpoint;
    ck.dir = str("output.checkpoint.dir");
    const bool by_steps = !eff.at("output.checkpoint.every_steps").value.is_null();
    const bool by_seconds = !eff.at("output.checkpoint.every_seconds").value.is_null();
    if (by_steps && by_seconds)
      fail(origin("output.checkpoint.every_seconds"),
           "output.checkpoint.every_seconds: cannot be combined with output.checkpoint.every_steps (given at " +
               where(origin("output.checkpoint.every_steps")) + "); give one of the two");
    for (const char* p : {"output.checkpoint.every_steps", "output.checkpoint.every_seconds"})
      if (!eff.at(p).value.is_null() && ck.dir.empty())
        fail(origin(p), "output.checkpoint.dir: required when " + std::string(p) +
                            " is given (expected the directory the checkpoints are written into)");
    if (by_steps) ck.every_steps = i64("output.checkpoint.every_steps");
    if (by_seconds) ck.every_seconds = num("output.checkpoint.every_seconds");
    ck.keep = int(i64("output.checkpoint.keep"));
    c.run.restart_from = str("run.restart_from");
    if (c.run.restart_from == "auto" && ck.dir.empty())
      fail(origin("run.restart_from"),
           "run.restart_from: 'auto' resumes from output.checkpoint.dir, which is not set; give "
           "output.checkpoint.dir or a checkpoint directory");

    // Safety net: the library's own validation must agree.
    try {
      a.validate(c.problem.d, c.problem.rank);
    } catch (const std::invalid_argument& e) {
      fail(Origin{}, std::string("algorithm: ") + e.what());
    }
    if (!npy) {
      try {
        s.validate();
      } catch (const std::invalid_argument& e) {
        fail(Origin{}, std::string("source: ") + e.what());
      }
    }

    json& j = c.resolved;
    j = json::object();
    for (const auto& k : schema()) {
      const auto dot = k.name.find('.');  // a key group's leaf: nested
      if (dot == std::string::npos) j[k.section][k.name] = eff.at(k.path()).value;
      else j[k.section][k.name.substr(0, dot)][k.name.substr(dot + 1)] = eff.at(k.path()).value;
    }
    j["input"] = {{"deck", deck_}, {"overrides", overrides_}};
    return c;
  }
};

}  // namespace

std::vector<SweepPoint> load_deck_from_string(const std::string& yaml_text,
                                              const std::string& name_for_messages,
                                              const std::vector<std::string>& overrides) {
  return Loader(name_for_messages, overrides).load(yaml_text);
}

std::vector<SweepPoint> load_deck(const std::string& path,
                                  const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw DeckError("cannot read deck '" + path + "': it is a directory (expected a YAML deck file)");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    throw DeckError("cannot open deck '" + path + "'" +
                    (err ? std::string(": ") + std::strerror(err) : std::string()));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw DeckError("cannot read deck '" + path + "'");
  return load_deck_from_string(text.str(), path, overrides);
}

void validate_against_ranks(const RunConfig& config, int nranks, const std::string& deck_path) {
  std::string ctx;
  if (config.resolved.contains("sweep") && !config.resolved["sweep"]["point"].empty()) {
    const json& sw = config.resolved["sweep"];
    std::string desc;
    for (const auto& [k, v] : sw["point"].items()) desc += (desc.empty() ? "" : ", ") + k + "=" + compact(v);
    ctx = "sweep point " + std::to_string(sw["index"].get<std::size_t>() + 1) + " of " +
          std::to_string(sw["count"].get<std::size_t>()) + " (" + desc + "): ";
  }
  if (nranks < 1)
    throw DeckError(deck_path + ": " + ctx + "invalid number of MPI ranks " + std::to_string(nranks));
  const bool npy = config.source.type == "npy";
  if (config.streams.mode == StreamMode::strong && config.streams.total < nranks)
    throw DeckError(deck_path + ": " + ctx +
                    "streams.total: strong mode needs at least one stream per MPI rank: expected "
                    "an integer >= " + std::to_string(nranks) + " (the number of MPI ranks), found " +
                    std::to_string(config.streams.total) +
                    (npy ? " (the number of files in source.paths); give more files or run on fewer ranks"
                         : "; raise streams.total or run on fewer ranks"));
  const std::int64_t files = std::int64_t(config.source.paths.size());
  if (npy && config.streams.mode == StreamMode::weak &&
      std::int64_t(config.streams.per_rank) * nranks != files)
    throw DeckError(deck_path + ": " + ctx +
                    "streams.per_rank: weak mode with source.type npy needs streams.per_rank x MPI ranks = "
                    "the number of files in source.paths (" + std::to_string(files) + "), found " +
                    std::to_string(config.streams.per_rank) + " x " + std::to_string(nranks) + " = " +
                    std::to_string(std::int64_t(config.streams.per_rank) * nranks) +
                    "; use streams.mode: strong (the default for npy) to divide the files over the ranks");
  const std::int64_t total_streams =
      config.streams.mode == StreamMode::strong ? config.streams.total : std::int64_t(config.streams.per_rank) * nranks;
  if (config.run.reference_check_steps > 0 && std::int64_t(config.run.reference_check_stream) >= total_streams)
    throw DeckError(deck_path + ": " + ctx + "run.reference_check_stream: expected a stream id < " +
                    std::to_string(total_streams) + " (the run's streams on " + std::to_string(nranks) +
                    " ranks), found " + std::to_string(config.run.reference_check_stream) +
                    "; or set run.reference_check_steps: 0 to turn the check off");
}

const std::vector<std::string>& deck_key_paths() {
  static const std::vector<std::string> paths = all_paths();
  return paths;
}

}  // namespace mosaic
