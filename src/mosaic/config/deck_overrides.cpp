// The --set overrides, applied over the deck's keys (impl/deck_loader.hpp).
#include "mosaic/config/impl/deck_loader.hpp"

#include <string>

#include "mosaic/util/did_you_mean.hpp"

namespace mosaic::deck {

void Loader::apply_overrides() {
  for (const std::string& arg : overrides_) {
    Origin o;
    o.kind = Origin::override_;
    o.text = arg;
    const auto eq = arg.find('=');
    if (eq == std::string::npos) fail(o, "expected key.path=value (no '=' found), e.g. --set problem.d=512");
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
    if (path == "sweep") fail(o, "set one swept key at a time: --set sweep.<key.path>=[v1, v2, ...]");
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
        fail(o,
             "'" + sec + "' is a section, not a key; use " + sec + ".<key>=value (keys: " + join(keys_of(sec)) + ")");
      if (is_section(sec)) {
        const std::string name = path.substr(dot + 1);
        fail(o, "unknown key '" + path + "'" + did_you_mean(name, keys_of(sec), sec + ".") + "; valid keys in " + sec +
                    ": " + join(keys_of(sec)));
      }
      std::vector<std::string> valid = sections();
      valid.push_back("sweep");
      fail(o, "unknown key path '" + path + "'" + did_you_mean(path, all_paths()) +
                  "; paths start with one of: " + join(valid));
    }
    given_[path] = Given{value, o};
    // Pinning a swept key with --set removes it from the sweep.
    sweep_.erase(std::remove_if(sweep_.begin(), sweep_.end(), [&](const SweepEntry& e) { return e.path == path; }),
                 sweep_.end());
  }
}

}  // namespace mosaic::deck
