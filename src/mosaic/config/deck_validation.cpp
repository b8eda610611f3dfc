// Every key's value checked on its own (type and range) (impl/deck_loader.hpp).
#include "mosaic/config/impl/deck_loader.hpp"

#include <string>

namespace mosaic::deck {

void Loader::check_values() {
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
      fail(Origin{}, k.section + ": required section is missing (it must set " + k.path() + ", " + k.expected() + ")");
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
    fail(*range, "source.noise_range: cannot be combined with an explicit source.noise (given at " + where(*noise) +
                     "); give homogeneous noise or a heterogeneous range, not both");
}

}  // namespace mosaic::deck
