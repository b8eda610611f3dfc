// The .npy header: the magic, version and length, and the header dict as
// NumPy writes it, parsed by a small parser of Python literals; every
// problem is an NpyError naming the file, the byte and what was expected.
#include "mosaic/sources/impl/npy_internal.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace mosaic {
namespace {

using namespace npy_detail;

// ------------------------------------------------------------------------
// The header dict: a small parser of the Python literals NumPy writes
// (ast.literal_eval subset): dicts, tuples, lists, strings, integers, True,
// False, None. Anything else is an error with its position.

struct PyValue {
  enum class Kind { str, integer, boolean, none, tuple, list, dict };
  Kind kind = Kind::none;
  std::string str;                // str
  std::int64_t integer = 0;       // integer
  bool boolean = false;           // boolean
  std::vector<PyValue> items;     // tuple, list; dict values
  std::vector<std::string> keys;  // dict keys (strings only), parallel to items
};

std::string repr(const PyValue& v) {
  switch (v.kind) {
    case PyValue::Kind::str: return "'" + v.str + "'";
    case PyValue::Kind::integer: return std::to_string(v.integer);
    case PyValue::Kind::boolean: return v.boolean ? "True" : "False";
    case PyValue::Kind::none: return "None";
    case PyValue::Kind::tuple:
    case PyValue::Kind::list: {
      const bool tuple = v.kind == PyValue::Kind::tuple;
      std::string s = tuple ? "(" : "[";
      for (std::size_t i = 0; i < v.items.size(); ++i) s += (i ? ", " : "") + repr(v.items[i]);
      if (tuple && v.items.size() == 1) s += ",";
      return s + (tuple ? ")" : "]");
    }
    case PyValue::Kind::dict: {
      std::string s = "{";
      for (std::size_t i = 0; i < v.items.size(); ++i) s += (i ? ", '" : "'") + v.keys[i] + "': " + repr(v.items[i]);
      return s + "}";
    }
  }
  return "?";
}

struct LiteralError {
  std::string what;
  std::size_t pos;
};

class LiteralParser {
 public:
  explicit LiteralParser(const std::string& text) : s_(text) {}

  PyValue parse_document() {
    skip_space();
    if (at_end()) error("the header is empty");
    PyValue v = parse_value(0);
    skip_space();
    if (!at_end()) error("unexpected text after the dict");
    return v;
  }

 private:
  [[noreturn]] void error(const std::string& what) const { throw LiteralError{what, pos_}; }
  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[pos_]; }
  void skip_space() {
    while (!at_end() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r' ||
                         s_[pos_] == '\f' || s_[pos_] == '\v'))
      ++pos_;
  }
  [[noreturn]] void unexpected(const std::string& expected) const {
    const unsigned char c = static_cast<unsigned char>(peek());
    std::string found;
    if (at_end()) {
      found = "the end of the header";
    } else if (c >= 0x20 && c < 0x7f) {
      found = std::string("'") + char(c) + "'";
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      found = std::string("byte ") + buf;
    }
    error("expected " + expected + ", found " + found);
  }

  PyValue parse_value(int depth) {
    if (depth > kMaxNesting) error("nesting too deep");
    const char c = peek();
    if (c == '{') return parse_dict(depth);
    if (c == '(') return parse_sequence(depth, ')', PyValue::Kind::tuple);
    if (c == '[') return parse_sequence(depth, ']', PyValue::Kind::list);
    if (c == '\'' || c == '"') return parse_string();
    if (c == '-' || c == '+' || (c >= '0' && c <= '9')) return parse_integer();
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return parse_name();
    unexpected("a value");
  }

  PyValue parse_dict(int depth) {
    PyValue d;
    d.kind = PyValue::Kind::dict;
    ++pos_;  // '{'
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return d;
    }
    for (;;) {
      const std::size_t key_pos = pos_;
      if (peek() != '\'' && peek() != '"') unexpected("a string key");
      PyValue key = parse_string();
      if (std::find(d.keys.begin(), d.keys.end(), key.str) != d.keys.end()) {
        pos_ = key_pos;
        error("duplicate key '" + key.str + "'");
      }
      skip_space();
      if (peek() != ':') unexpected("':' after key '" + key.str + "'");
      ++pos_;
      skip_space();
      d.items.push_back(parse_value(depth + 1));
      d.keys.push_back(std::move(key.str));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        skip_space();
        if (peek() == '}') {
          ++pos_;
          return d;
        }
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        return d;
      }
      unexpected("',' or '}'");
    }
  }

  // (a) is `a`; (a,) and (a, b) are tuples; [..] are lists.
  PyValue parse_sequence(int depth, char close, PyValue::Kind kind) {
    PyValue seq;
    seq.kind = kind;
    ++pos_;  // '(' or '['
    skip_space();
    if (peek() == close) {
      ++pos_;
      return seq;
    }
    const std::string expected = std::string("',' or '") + close + "'";
    for (;;) {
      seq.items.push_back(parse_value(depth + 1));
      skip_space();
      if (peek() == close) {
        ++pos_;
        if (kind == PyValue::Kind::tuple && seq.items.size() == 1) {
          PyValue inner = std::move(seq.items[0]);  // a parenthesized value
          return inner;
        }
        return seq;
      }
      if (peek() != ',') unexpected(expected);
      ++pos_;
      skip_space();
      if (peek() == close) {
        ++pos_;
        return seq;
      }
    }
  }

  PyValue parse_string() {
    PyValue v;
    v.kind = PyValue::Kind::str;
    const char quote = s_[pos_++];
    for (;;) {
      if (at_end() || peek() == '\n') error("unterminated string");
      const char c = s_[pos_++];
      if (c == quote) return v;
      if (c == '\\') {
        if (at_end()) error("unterminated string");
        const char e = s_[pos_++];
        if (e != '\\' && e != '\'' && e != '"') v.str += '\\';
        v.str += e;
      } else {
        v.str += c;
      }
    }
  }

  PyValue parse_integer() {
    PyValue v;
    v.kind = PyValue::Kind::integer;
    bool negative = false;
    if (peek() == '-' || peek() == '+') {
      negative = peek() == '-';
      ++pos_;
    }
    if (!(peek() >= '0' && peek() <= '9')) unexpected("a digit");
    std::uint64_t magnitude = 0;
    while (peek() >= '0' && peek() <= '9') {
      const unsigned digit = unsigned(peek() - '0');
      if (magnitude > (std::uint64_t(INT64_MAX) - digit) / 10) error("integer too large");
      magnitude = magnitude * 10 + digit;
      ++pos_;
    }
    if (peek() == 'L' || peek() == 'l') ++pos_;  // Python 2 long, as in old NumPy files
    const char c = peek();
    if (c == '.' || c == 'e' || c == 'E' || c == 'j' || c == 'J' || c == 'x' || c == 'X' || c == '_' ||
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
      error("only plain integers are expected here");
    v.integer = negative ? -std::int64_t(magnitude) : std::int64_t(magnitude);
    return v;
  }

  PyValue parse_name() {
    const std::size_t start = pos_;
    while ((peek() >= 'a' && peek() <= 'z') || (peek() >= 'A' && peek() <= 'Z') || (peek() >= '0' && peek() <= '9') ||
           peek() == '_')
      ++pos_;
    const std::string name = s_.substr(start, pos_ - start);
    PyValue v;
    if (name == "True" || name == "False") {
      v.kind = PyValue::Kind::boolean;
      v.boolean = name == "True";
    } else if (name == "None") {
      v.kind = PyValue::Kind::none;
    } else {
      pos_ = start;
      error("unexpected name '" + name + "' (only True, False and None are literals)");
    }
    return v;
  }

  const std::string& s_;
  std::size_t pos_ = 0;
};

// ------------------------------------------------------------------------
// dtype strings

std::string dtype_name(char kind, long size) {
  const std::string bits = std::to_string(size * 8);
  switch (kind) {
    case 'f': return "float" + bits;
    case 'i': return "int" + bits;
    case 'u': return "uint" + bits;
    case 'c': return "complex" + bits;
    case 'b': return "bool";
    case '?': return "bool";
    case 'O': return "Python objects";
    case 'U': return "unicode strings";
    case 'S':
    case 'a': return "byte strings";
    case 'V': return "raw bytes (void)";
    case 'M': return "datetime64";
    case 'm': return "timedelta64";
    default: return "";
  }
}

NpyDtype parse_descr(const std::string& path, const std::string& descr, std::size_t& item_size) {
  const std::string expected = "; expected '<f4' or '<f8'";
  char order = '\0';
  std::string body = descr;
  if (!body.empty() && std::strchr("<>|=", body[0]) != nullptr) {
    order = body[0];
    body = body.substr(1);
  }
  char kind = '\0';
  long size = -1;
  if (!body.empty()) {
    kind = body[0];
    const std::string digits = body.substr(1);
    if (!digits.empty() && digits.size() <= 4 &&
        std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      size = std::stol(digits);
    else if (digits.empty()) size = 0;
  }
  const bool known = size >= 0 && !dtype_name(kind, size).empty();
  if (known && kind == 'f' && (size == 4 || size == 8) && order != '>') {
    // '<' explicit; '=', '|' and none mean native, which is little-endian here.
    item_size = std::size_t(size);
    return size == 4 ? NpyDtype::f4 : NpyDtype::f8;
  }
  std::string what = "unsupported dtype '" + descr + "'";
  if (known) {
    what += " (";
    if (order == '>' && size > 1) what += "big-endian ";
    what += dtype_name(kind, size) + ")";
  } else {
    what += " (not a dtype string NumPy writes)";
  }
  what += expected;
  if (known && order == '>' && kind == 'f' && (size == 4 || size == 8))
    what += " (convert with a.astype('<f" + std::to_string(size) + "'))";
  fail(path, what);
}

// Validates the parsed dict and fills dtype, fortran_order, shape.
void interpret_dict(const std::string& path, const PyValue& dict, NpyHeader& h) {
  if (dict.kind != PyValue::Kind::dict) fail(path, "malformed header: not a dict but " + repr(dict));
  const char* required[] = {"descr", "fortran_order", "shape"};
  for (const std::string& k : dict.keys)
    if (std::find(std::begin(required), std::end(required), k) == std::end(required))
      fail(path, "malformed header: unexpected key '" + k +
                     "' (a .npy header has exactly 'descr', 'fortran_order' and 'shape')");
  auto get = [&](const char* key) -> const PyValue& {
    const auto it = std::find(dict.keys.begin(), dict.keys.end(), key);
    if (it == dict.keys.end()) fail(path, std::string("malformed header: missing key '") + key + "' in " + repr(dict));
    return dict.items[std::size_t(it - dict.keys.begin())];
  };
  const PyValue& descr = get("descr");
  const PyValue& fortran = get("fortran_order");
  const PyValue& shape = get("shape");

  if (fortran.kind != PyValue::Kind::boolean)
    fail(path, "malformed header: 'fortran_order' must be True or False, found " + repr(fortran));
  h.fortran_order = fortran.boolean;

  if (shape.kind != PyValue::Kind::tuple)
    fail(path, "malformed header: 'shape' must be a tuple of integers, found " + repr(shape));
  h.shape.clear();
  for (const PyValue& n : shape.items) {
    if (n.kind != PyValue::Kind::integer || n.integer < 0)
      fail(path, "malformed header: 'shape' must be a tuple of non-negative integers, found " + repr(shape));
    h.shape.push_back(n.integer);
  }

  if (descr.kind == PyValue::Kind::list)
    fail(path, "unsupported dtype: a structured dtype " + repr(descr) + "; expected '<f4' or '<f8'");
  if (descr.kind != PyValue::Kind::str)
    fail(path, "malformed header: 'descr' must be a dtype string, found " + repr(descr));
  h.dtype = parse_descr(path, descr.str, h.item_size);

  std::uint64_t elements = 1;
  for (std::int64_t n : h.shape) {
    if (n != 0 && elements > std::numeric_limits<std::uint64_t>::max() / std::uint64_t(n))
      fail(path, "shape " + shape_repr(h.shape) + " is too large");
    elements *= std::uint64_t(n);
  }
  if (elements > (std::numeric_limits<std::uint64_t>::max() / 2) / h.item_size)
    fail(path, "shape " + shape_repr(h.shape) + " is too large");
  h.data_bytes = elements * h.item_size;
}

}  // namespace

namespace npy_detail {

NpyHeader parse_header_fd(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(path, std::string("cannot stat: ") + std::strerror(errno));
  NpyHeader h;
  h.file_bytes = std::uint64_t(st.st_size);
  h.mtime_ns = mtime_ns(st);

  unsigned char pre[12] = {};
  const std::size_t got = pread_all(fd, pre, sizeof pre, 0, path);
  if (got == 0) fail(path, "not a .npy file: the file is empty");
  if (got < 6 || std::memcmp(pre, kMagic, 6) != 0) {
    std::string what = "not a .npy file: bad magic (expected \"\\x93NUMPY\", found " +
                       quoted_bytes(std::string(reinterpret_cast<char*>(pre), std::min<std::size_t>(got, 6))) + ")";
    if (got >= 4 && std::memcmp(pre, "PK\x03\x04", 4) == 0)
      what += "; this looks like a .npz (zip) archive: pass the .npy files inside it";
    fail(path, what);
  }
  if (got < 8) fail(path, "truncated header: the file ends inside the version bytes");
  h.major = pre[6];
  h.minor = pre[7];
  if (!((h.major == 1 || h.major == 2 || h.major == 3) && h.minor == 0))
    fail(path, "unsupported .npy format version " + std::to_string(h.major) + "." + std::to_string(h.minor) +
                   " (supported: 1.0, 2.0, 3.0)");
  const std::size_t len_bytes = h.major == 1 ? 2 : 4;
  if (got < 8 + len_bytes) fail(path, "truncated header: the file ends inside the header length field");
  std::size_t header_len = std::size_t(pre[8]) | (std::size_t(pre[9]) << 8);
  if (len_bytes == 4) header_len |= (std::size_t(pre[10]) << 16) | (std::size_t(pre[11]) << 24);
  if (header_len > kMaxHeaderBytes)
    fail(path, "header length " + std::to_string(header_len) + " is implausibly large (limit " +
                   std::to_string(kMaxHeaderBytes) + " bytes)");
  h.data_offset = 8 + len_bytes + header_len;
  if (h.file_bytes < h.data_offset)
    fail(path, "truncated header: the header length field says " + std::to_string(header_len) +
                   " bytes, but the file has only " + std::to_string(h.file_bytes) + " bytes in all (" +
                   std::to_string(h.data_offset) + " expected before the data)");
  std::string text(header_len, '\0');
  if (pread_all(fd, text.data(), header_len, 8 + len_bytes, path) != header_len)
    fail(path, "truncated header: the file shrank while it was read");

  PyValue dict;
  try {
    dict = LiteralParser(text).parse_document();
  } catch (const LiteralError& e) {
    const std::size_t from = e.pos > 30 ? e.pos - 30 : 0;
    fail(path, "malformed header: " + e.what + " at byte " + std::to_string(e.pos) + " of the header dict, near " +
                   (from ? "..." : "") + quoted_bytes(text.substr(from), 60));
  }
  interpret_dict(path, dict, h);

  const std::uint64_t need = std::uint64_t(h.data_offset) + h.data_bytes;
  if (h.file_bytes < need)
    fail(path, "truncated data: the header says shape " + shape_repr(h.shape) + " of '" + npy_descr(h.dtype) +
                   "', i.e. " + std::to_string(h.data_bytes) + " data bytes after a " + std::to_string(h.data_offset) +
                   "-byte header, " + std::to_string(need) + " bytes in all, but the file has " +
                   std::to_string(h.file_bytes) + " bytes (" + std::to_string(need - h.file_bytes) + " missing)");
  return h;
}

}  // namespace npy_detail
}  // namespace mosaic
