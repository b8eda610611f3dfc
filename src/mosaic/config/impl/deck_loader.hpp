// The loader of one deck: reads the YAML (deck_loading.cpp), applies the
// --set overrides (deck_overrides.cpp), checks every key on its own
// (deck_validation.cpp), then expands the sweep and resolves each point,
// with the checks across keys (deck_sweep.cpp). Every problem is a
// DeckError naming the file and line (or the --set argument), the key, what
// was expected and what was found. Internal to config/.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "mosaic/config/config.hpp"
#include "mosaic/config/impl/deck_schema.hpp"
#include "mosaic/config/impl/deck_values.hpp"

namespace mosaic::deck {

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
    Origin origin;              // the key (file) or the --set argument
    std::vector<Value> values;  // checked
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
          return deck_ + ":" + std::to_string(o.mark.line + 1) + ":" + std::to_string(o.mark.column + 1);
        return deck_;
      case Origin::override_: return deck_ + ": --set " + o.text;
      case Origin::none: return deck_;
    }
    return deck_;
  }
  [[noreturn]] void fail(const Origin& o, const std::string& what) const {
    throw DeckError(where(o) + ": " + context_ + what);
  }
  [[noreturn]] void fail_value(const Origin& o, const std::string& label, const KeySpec& k, const BadValue& b,
                               const std::string& extra) const {
    if (b.found.empty()) fail(o, label + ": " + extra);
    fail(o, label + ": expected " + k.expected() + ", found " + b.found + extra);
  }
  // A value node's origin: its own mark, or its key's where the value is empty
  // (yaml-cpp marks an empty value at the next token).
  Origin value_origin(const YAML::Node& key, const YAML::Node& value) const {
    return value.IsNull() ? at(key) : at(value);
  }

  // ---- parse (deck_loading.cpp)
  YAML::Node parse(const std::string& text);

  std::string key_text(const YAML::Node& key) const;

  void read_deck(const YAML::Node& root);

  // A key group given as a mapping in the deck, e.g. output.checkpoint.
  void read_group(const std::string& path, const YAML::Node& key, const YAML::Node& body);

  void check_duplicate(std::map<std::string, Origin>& seen, const std::string& name, const YAML::Node& key,
                       const std::string& label) const;

  // A sweep key path must name a leaf key of the schema.
  void check_sweep_path(const std::string& path, const Origin& o) const;

  void add_sweep(const std::string& path, const YAML::Node& list, const Origin& key_origin, const Origin& value_origin);

  void read_sweep(const YAML::Node& key, const YAML::Node& body);

  // ---- overrides (deck_overrides.cpp)
  void apply_overrides();

  // ---- per-key checks (deck_validation.cpp)
  void check_values();

  // ---- expansion and resolution (deck_sweep.cpp)
  std::vector<SweepPoint> expand();

  // source.paths of an npy source: a list of literal paths, or one string,
  // a glob pattern (glob(3), sorted) if it has a wildcard (* ? [), else one
  // path. Relative paths from the deck file are taken against the deck's
  // directory; those from --set against the current directory. The resolved
  // deck shows the expanded list. Files are not opened here (the driver
  // checks them on the rank that owns them, before the run).
  void resolve_npy_source(std::map<std::string, Value>& eff, RunConfig& c) const;

  RunConfig resolve(std::map<std::string, Value>& eff) const;
};

}  // namespace mosaic::deck
