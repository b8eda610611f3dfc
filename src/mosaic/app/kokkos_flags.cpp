#include "mosaic/app/kokkos_flags.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "mosaic/util/did_you_mean.hpp"

namespace mosaic::kokkos_flags {
namespace {

enum class Value {
  none,        // --kokkos-tools-help
  boolean,     // optional =BOOL (yes|true|1|no|false|0, any case), as Kokkos 4 reads it
  count,       // =INT >= 1
  index,       // =INT >= 0
  index_pair,  // =INT[,INT]
  text,        // =STR, not empty
  device_map,  // =random|mpi_rank
};

// A flag's name in one Kokkos major version: the name that version parses,
// kDriver (the driver does what the flag asks), or nullptr (that version
// has no such flag).
constexpr const char* kDriver = "";

struct Flag {
  const char* name;  // as written on the command line
  const char* kokkos3;
  const char* kokkos4;  // 4.x and 5.x
  Value value;
  bool selects_device;  // chooses each rank's GPU
  const char* meaning;  // nullptr: an older spelling, listed with the flag it stands for
};

// Checked against Kokkos 3.4.01 (core/src/impl/Kokkos_Core.cpp,
// parse_command_line_arguments) and 4.6.01 (the same function and
// Kokkos_Profiling.cpp's, for the tools flags).
constexpr Flag kFlags[] = {
    {"--kokkos-help", kDriver, kDriver, Value::none, false, "print this help and exit"},
    {"--kokkos-num-threads", "--kokkos-threads", "--kokkos-num-threads", Value::count, false,
     "host threads per rank (default: OMP_NUM_THREADS)"},
    {"--kokkos-threads", "--kokkos-threads", "--kokkos-num-threads", Value::count, false, nullptr},
    {"--kokkos-device-id", "--kokkos-device-id", "--kokkos-device-id", Value::index, true,
     "the GPU of every rank (default: round-robin by local rank)"},
    {"--kokkos-device", "--kokkos-device-id", "--kokkos-device-id", Value::index, true, nullptr},
    {"--kokkos-map-device-id-by", kDriver, "--kokkos-map-device-id-by", Value::device_map, true,
     "how ranks pick GPUs without --kokkos-device-id"},
    {"--kokkos-disable-warnings", "--kokkos-disable-warnings", "--kokkos-disable-warnings", Value::boolean, false,
     "no Kokkos warnings"},
    {"--kokkos-print-configuration", kDriver, "--kokkos-print-configuration", Value::boolean, false,
     "print Kokkos' configuration after initialization (every rank)"},
    {"--kokkos-tune-internals", "--kokkos-tune-internals", "--kokkos-tune-internals", Value::boolean, false,
     "let a tuning tool choose launch parameters"},
    {"--kokkos-tools-libs", "--kokkos-tools-library", "--kokkos-tools-libs", Value::text, false,
     "load Kokkos Tools libraries (or KOKKOS_TOOLS_LIBS)"},
    {"--kokkos-tools-library", "--kokkos-tools-library", "--kokkos-tools-libs", Value::text, false, nullptr},
    {"--kokkos-tools-args", "--kokkos-tools-args", "--kokkos-tools-args", Value::text, false,
     "arguments for the loaded tool (or KOKKOS_TOOLS_ARGS)"},
    {"--kokkos-tools-help", "--kokkos-tools-help", "--kokkos-tools-help", Value::none, false,
     "print the loaded tool's help and exit"},
    {"--kokkos-numa", "--kokkos-numa", nullptr, Value::count, false, "Kokkos 3 only: NUMA regions per process"},
    {"--kokkos-num-devices", "--kokkos-num-devices", nullptr, Value::index_pair, true,
     "Kokkos 3 only: GPUs per node by local rank (,INT: one to skip)"},
    {"--kokkos-ndevices", "--kokkos-num-devices", nullptr, Value::index_pair, true, nullptr},
};

// The 4.x environment variables Kokkos 3 does not read, and the flag each
// stands for.
constexpr std::pair<const char*, const char*> kKokkos4OnlyVariables[] = {
    {"KOKKOS_TOOLS_LIBS", "--kokkos-tools-libs"},
    {"KOKKOS_TOOLS_ARGS", "--kokkos-tools-args"},
    {"KOKKOS_PRINT_CONFIGURATION", "--kokkos-print-configuration"},
    {"KOKKOS_MAP_DEVICE_ID_BY", "--kokkos-map-device-id-by"},
};

// The environment variables with which Kokkos itself picks each rank's GPU
// (3.4: KOKKOS_DEVICE_ID, KOKKOS_NUM_DEVICES; 4.x: KOKKOS_DEVICE_ID,
// KOKKOS_VISIBLE_DEVICES, KOKKOS_MAP_DEVICE_ID_BY), by the Kokkos major
// version they apply from and to. A user who set one has chosen: the driver
// adds no --kokkos-device-id, which Kokkos 3.4 would refuse beside
// KOKKOS_DEVICE_ID.
struct DeviceVariable {
  const char* name;
  int first_major, last_major;
};
constexpr DeviceVariable kDeviceVariables[] = {
    {"KOKKOS_DEVICE_ID", 3, 99},
    {"KOKKOS_NUM_DEVICES", 3, 3},
    {"KOKKOS_VISIBLE_DEVICES", 4, 99},
    {"KOKKOS_MAP_DEVICE_ID_BY", 4, 99},  // on Kokkos 3 the driver carries it out (kKokkos4OnlyVariables)
};

const char* value_syntax(Value v) {
  switch (v) {
    case Value::none: return "";
    case Value::boolean: return "[=BOOL]";
    case Value::count:
    case Value::index: return "=INT";
    case Value::index_pair: return "=INT[,INT]";
    case Value::text: return "=STR";
    case Value::device_map: return "=mpi_rank|random";
  }
  return "";
}

// The name an older spelling stands for.
const char* current_name(const Flag& f) { return f.kokkos4 ? f.kokkos4 : f.kokkos3; }

const Flag* find_flag(const std::string& name) {
  for (const auto& f : kFlags)
    if (name == f.name) return &f;
  return nullptr;
}

// " (did you mean '--kokkos-x'?)" for the closest flag, or "".
std::string did_you_mean(const std::string& name) {
  const std::string prefix = "--kokkos-";
  std::vector<std::string> names;
  for (const auto& f : kFlags) names.push_back(std::string(f.name).substr(prefix.size()));
  return mosaic::did_you_mean(name.compare(0, prefix.size(), prefix) == 0 ? name.substr(prefix.size()) : name, names,
                              prefix);
}

// A decimal integer >= 0 that fits an int (at most 9 digits).
bool is_unsigned_int(const std::string& s) {
  return !s.empty() && s.size() <= 9 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower((unsigned char)c));
  return s;
}

// Checks the value of `arg` (the whole "--kokkos-NAME[=VALUE]") against the
// flag's kind; returns the value of a boolean flag (true without a value).
bool check_value(const Flag& f, const std::string& arg, bool has_value, const std::string& value) {
  auto bad = [&](const std::string& what) {
    return std::invalid_argument("Kokkos flag '" + arg + "': " + what + " (" + f.name + value_syntax(f.value) + ")");
  };
  if (f.value != Value::none && f.value != Value::boolean && (!has_value || value.empty()))
    throw bad("needs a value after '='");
  switch (f.value) {
    case Value::none:
      if (has_value) throw bad("takes no value");
      return false;
    case Value::boolean: {
      const std::string v = lower(value);
      if (!has_value || v == "yes" || v == "true" || v == "1") return true;
      if (v == "no" || v == "false" || v == "0") return false;
      throw bad("expected yes, true, 1, no, false or 0");
    }
    case Value::count:
      if (!is_unsigned_int(value) || std::stoi(value) < 1) throw bad("expected an integer >= 1");
      return false;
    case Value::index:
      if (!is_unsigned_int(value)) throw bad("expected an integer >= 0");
      return false;
    case Value::index_pair: {
      const auto comma = value.find(',');
      if (!is_unsigned_int(value.substr(0, comma)) ||
          (comma != std::string::npos && !is_unsigned_int(value.substr(comma + 1))))
        throw bad("expected INT or INT,INT");
      return false;
    }
    case Value::text: return false;
    case Value::device_map:
      if (value != "mpi_rank" && value != "random") throw bad("expected mpi_rank or random");
      return false;
  }
  return false;
}

void add(const std::string& arg, int kokkos_major, Translation& t) {
  const auto eq = arg.find('=');
  const std::string name = arg.substr(0, eq);
  const bool has_value = eq != std::string::npos;
  const std::string value = has_value ? arg.substr(eq + 1) : "";
  const Flag* f = find_flag(name);
  if (!f)
    throw std::invalid_argument("unknown Kokkos flag '" + arg + "'" + did_you_mean(name) +
                                "; mosaic_miniapp --help lists the Kokkos flags");
  const bool on = check_value(*f, arg, has_value, value);
  const char* target = kokkos_major >= 4 ? f->kokkos4 : f->kokkos3;
  if (!target)
    throw std::invalid_argument("Kokkos flag '" + arg + "': Kokkos " + std::to_string(kokkos_major) +
                                " has no such flag" + (kokkos_major >= 4 ? " (Kokkos 4.0 removed it)" : ""));
  if (target == kDriver) {
    const std::string which = f->name;
    if (which == "--kokkos-help") t.help = true;
    else if (which == "--kokkos-print-configuration") t.print_configuration = on;
    else if (which == "--kokkos-map-device-id-by") t.map_device_id_by = value;
    return;
  }
  t.device_chosen = t.device_chosen || f->selects_device;
  if (f->kokkos4 && std::strcmp(f->kokkos4, "--kokkos-num-threads") == 0) t.host_threads = std::stoi(value);
  if (f->value == Value::boolean && kokkos_major < 4) {
    // Kokkos 3 reads the bare flag only (and would take "=false" for true).
    if (on) t.arguments.push_back(target);
    return;
  }
  t.arguments.push_back(has_value ? std::string(target) + "=" + value : std::string(target));
}

}  // namespace

Translation translate(const std::vector<std::string>& flags, int kokkos_major) {
  Translation t;
  if (kokkos_major < 4)
    for (const auto& [variable, flag] : kKokkos4OnlyVariables)
      if (const char* value = std::getenv(variable)) {
        try {
          add(std::string(flag) + "=" + value, kokkos_major, t);
        } catch (const std::invalid_argument& e) {
          throw std::invalid_argument(std::string("environment variable ") + variable + " (read as " + flag +
                                      " on Kokkos 3): " + e.what());
        }
      }
  for (const auto& arg : flags) add(arg, kokkos_major, t);
  for (const auto& v : kDeviceVariables) {
    const char* value = std::getenv(v.name);
    if (value && *value && kokkos_major >= v.first_major && kokkos_major <= v.last_major) {
      t.device_chosen = true;
      if (t.device_chosen_by.empty()) t.device_chosen_by = v.name;
    }
  }
  return t;
}

HostThreads host_threads(const Translation& t, int default_threads) {
  if (t.host_threads > 0) return {t.host_threads, "--kokkos-num-threads=" + std::to_string(t.host_threads)};
  if (const char* value = std::getenv("KOKKOS_NUM_THREADS")) {
    const std::string v = value;
    if (!is_unsigned_int(v) || std::stoi(v) < 1)
      throw std::invalid_argument(
          "environment variable KOKKOS_NUM_THREADS: expected an integer >= 1 (host threads "
          "per rank), found '" +
          v + "'");
    return {std::stoi(v), "KOKKOS_NUM_THREADS=" + v};
  }
  return {default_threads,
          std::getenv("OMP_NUM_THREADS") ? "OMP_NUM_THREADS" : "OpenMP's default: OMP_NUM_THREADS is not set"};
}

std::string help() {
  std::size_t width = 0;
  for (const auto& f : kFlags) width = std::max(width, std::strlen(f.name) + std::strlen(value_syntax(f.value)));
  std::string text =
      "Kokkos flags (the Kokkos 4 names; every flag works with Kokkos 3.4 and 4.x/5.x unless marked,\n"
      "an unknown --kokkos-* flag is an error):\n";
  for (const auto& f : kFlags) {
    if (!f.meaning) continue;
    std::string line = std::string("  ") + f.name + value_syntax(f.value);
    line.resize(width + 4, ' ');
    line += f.meaning;
    std::string others;
    for (const auto& alias : kFlags)
      if (!alias.meaning && std::strcmp(current_name(alias), f.name) == 0)
        others += std::string(others.empty() ? "" : ", ") + alias.name;
    text += line + "\n";
    if (!others.empty()) text += std::string(width + 4, ' ') + "also " + others + "\n";
  }
  return text;
}

}  // namespace mosaic::kokkos_flags
