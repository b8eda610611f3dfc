// The deck's schema: the table of keys (impl/deck_schema.hpp).
#include "mosaic/config/impl/deck_schema.hpp"

#include <algorithm>
#include <sstream>

namespace mosaic::deck {

std::string KeySpec::expected() const {
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
      if (int_hi >= kIntMax)
        return s + " >= " + std::to_string(int_lo) + " (at most " + std::to_string(int_hi) + ")" + all;
      return s + " in [" + std::to_string(int_lo) + ", " + std::to_string(int_hi) + "]" + all;
    }
    case Kind::unsigned64: return "an unsigned 64-bit integer (0 to 18446744073709551615)";
    case Kind::number: {
      const std::string all = keyword.empty() ? "" : " or " + keyword;
      if (lo == -kInf && hi == kInf) return "a finite number" + all;
      if (hi == kInf) return "a number " + std::string(lo_open ? "> " : ">= ") + num(lo) + all;
      return "a number in " + std::string(lo_open ? "(" : "[") + num(lo) + ", " + num(hi) + (hi_open ? ")" : "]") + all;
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

namespace {

KeySpec integer(const char* sec, const char* name, std::int64_t lo, std::int64_t hi, json def, bool required = false) {
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
KeySpec number(const char* sec, const char* name, double lo, bool lo_open, double hi, bool hi_open, double def) {
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
KeySpec choice(const char* sec, const char* name, std::vector<std::string> choices, const char* def,
               std::vector<std::string> reserved = {}) {
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

}  // namespace

const std::vector<std::string>& sections() {
  static const std::vector<std::string> s = {"problem", "streams", "source", "algorithm", "run", "output"};
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
    // Missingness of the synthetic stream (synthetic_missing.hpp; ALGORITHM.md section 7).
    v.push_back(number("source", "missing_rate", 0, false, 1, false, 0.0));
    v.push_back(integer("source", "outage_first", 0, kIntMax, 0));
    v.push_back(integer("source", "outage_count", 0, kIntMax, 0));
    v.push_back(integer("source", "outage_start", 0, kInt64Max, 0));
    v.push_back(integer("source", "outage_steps", 0, kInt64Max, 0));
    v.push_back(number("source", "missing_block_rate", 0, false, 1, false, 0.0));
    v.push_back(integer("source", "missing_block_coords", 1, kIntMax, 1));
    v.push_back(integer("source", "missing_block_steps", 1, kInt64Max, 1));
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
    v.push_back(integer("algorithm", "init_samples", 1, kIntMax, nullptr));      // default 2*rank
    v.push_back(integer("algorithm", "init_max_samples", 1, kIntMax, nullptr));  // default 64 * init_samples
    v.push_back(number("algorithm", "init_scale", 0, true, kInf, false, 1.0));
    {
      // auto: the measured rule of auto_block_size for the backend
      KeySpec k = integer("algorithm", "block_size", 0, kIntMax, "auto");
      k.keyword = "auto";
      v.push_back(k);
    }
    v.push_back(choice("algorithm", "precision_solve", {"dense", "maintained"}, "dense"));
    v.push_back(integer("algorithm", "refactor_every", 1, kIntMax, 64));
    // Missing entries (ALGORITHM.md section 7): a NaN in a sample.
    v.push_back(choice("algorithm", "missing", {"error", "posterior", "project", "drop", "zero_fill"}, "error"));
    v.push_back(choice("algorithm", "missing_rotation", {"observed", "geodesic"}, "observed"));
    v.push_back(number("algorithm", "missing_cond_max", 0, true, kInf, false, 1e4));
    // Heterogeneous noise (ALGORITHM.md section 8): the whitened diagonal-noise model.
    v.push_back(choice("algorithm", "noise", {"isotropic", "diagonal"}, "isotropic"));
    v.push_back(integer("algorithm", "rewhiten_every", 1, kIntMax, 1000));
    v.push_back(integer("algorithm", "rewhiten_min_count", 1, kIntMax, 100));
    v.push_back(number("algorithm", "rewhiten_fmax", 1, true, kInf, false, 4.0));
    v.push_back(number("algorithm", "leverage_floor", 0, true, 1, true, 0.1));
    // Parallel-in-time segments with a certificate (ALGORITHM.md section 9.1).
    v.push_back(integer("algorithm", "time_segments", 1, kIntMax, 1));
    {
      // auto: ceil(1.3 ln(1/tol) / the slowest rate), 9.1
      KeySpec k = integer("algorithm", "segment_warmup", 0, kInt64Max, "auto");
      k.keyword = "auto";
      v.push_back(k);
    }
    v.push_back(choice("algorithm", "segment_warmup_init", {"data", "random"}, "data"));
    {
      // auto: 1e-12 in double; float has none (9.8)
      KeySpec k = number("algorithm", "segment_tolerance", 0, true, 1, true, 0.0);
      k.def = "auto";
      k.keyword = "auto";
      v.push_back(k);
    }
    {
      // auto: time_segments
      KeySpec k = integer("algorithm", "segment_max_passes", 1, kIntMax, "auto");
      k.keyword = "auto";
      v.push_back(k);
    }
    v.push_back(choice("algorithm", "segment_gauge", {"carry", "free"}, "carry"));
    {
      KeySpec k = integer("run", "steps", 1, kInt64Max, 1000);
      k.keyword = "all";  // npy sources: every stream to the end of its own file
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

bool is_section(const std::string& s) { return std::find(sections().begin(), sections().end(), s) != sections().end(); }

std::vector<std::string> keys_of(const std::string& section) {
  std::vector<std::string> out;
  for (const auto& k : schema())
    if (k.section == section) out.push_back(k.name);
  return out;
}

std::vector<std::string> group_leaves(const std::string& path) {
  std::vector<std::string> out;
  if (path.find('.') == std::string::npos) return out;  // a section, not a group
  const std::string prefix = path + ".";
  for (const auto& k : schema())
    if (k.path().compare(0, prefix.size(), prefix) == 0) out.push_back(k.path().substr(prefix.size()));
  return out;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

std::vector<std::string> all_paths() {
  std::vector<std::string> v;
  for (const auto& k : schema()) v.push_back(k.path());
  return v;
}

}  // namespace mosaic::deck
