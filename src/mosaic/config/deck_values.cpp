// Values of the deck checked one by one (impl/deck_values.hpp).
#include "mosaic/config/impl/deck_values.hpp"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "mosaic/util/did_you_mean.hpp"

namespace mosaic::deck {

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

json check_value(const KeySpec& k, const YAML::Node& n, std::string& extra) {
  switch (k.kind) {
    case Kind::integer:
      if (!k.keyword.empty() && n.IsScalar() && n.Tag() != "!" && n.Scalar() == k.keyword) return k.keyword;
      return check_integer(k, n);
    case Kind::unsigned64: return check_unsigned64(n);
    case Kind::number:
      if (!k.keyword.empty() && n.IsScalar() && n.Tag() != "!" && n.Scalar() == k.keyword) return k.keyword;
      return check_scalar_number(k, n);
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
          throw BadValue{"a list of " + std::to_string(n.size()) + (n.size() == 1 ? " value" : " values")};
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

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::string compact(const json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); }

}  // namespace mosaic::deck
