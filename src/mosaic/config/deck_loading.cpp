// Reading the deck's YAML into keys, groups and the sweep, with duplicate
// and unknown keys refused (impl/deck_loader.hpp).
#include "mosaic/config/impl/deck_loader.hpp"

#include <map>
#include <string>

#include "mosaic/util/did_you_mean.hpp"

namespace mosaic::deck {

YAML::Node Loader::parse(const std::string& text) {
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
  if (docs.size() > 1) fail(at(docs[1]), "a deck is a single YAML document, found " + std::to_string(docs.size()));
  if (docs.empty() || docs[0].IsNull()) return YAML::Node(YAML::NodeType::Map);
  if (!docs[0].IsMap())
    fail(at(docs[0]),
         "expected a mapping of sections (" + join(sections()) + ", sweep), found " + describe_found(docs[0], false));
  return docs[0];
}

std::string Loader::key_text(const YAML::Node& key) const {
  if (!key.IsScalar()) fail(at(key), "expected a plain key, found " + describe_found(key, false));
  return key.Scalar();
}

void Loader::read_deck(const YAML::Node& root) {
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
        fail(at(it->first), "'" + sec + "' is a key path; write it nested, as " + sec.substr(0, sec.find('.')) + ": {" +
                                sec.substr(sec.find('.') + 1) + ": ...}");
      std::vector<std::string> valid = sections();
      valid.push_back("sweep");
      fail(at(it->first),
           "unknown section '" + sec + "'" + did_you_mean(sec, valid) + "; valid sections: " + join(valid));
    }
    const YAML::Node body = it->second;  // a handle: it->second is a member of a temporary
    if (body.IsNull()) continue;
    if (!body.IsMap())
      fail(value_origin(it->first, body),
           sec + ": expected a mapping of keys (" + join(keys_of(sec)) + "), found " + describe_found(body, false));
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
        fail(at(kt->first), "unknown key '" + path + "'" + did_you_mean(name, keys_of(sec), sec + ".") +
                                "; valid keys in " + sec + ": " + join(keys_of(sec)));
      given_[path] = Given{kt->second, value_origin(kt->first, kt->second)};
    }
  }
}

void Loader::read_group(const std::string& path, const YAML::Node& key, const YAML::Node& body) {
  const std::vector<std::string> leaves = group_leaves(path);
  if (body.IsNull()) return;
  if (!body.IsMap())
    fail(value_origin(key, body),
         path + ": expected a mapping of keys (" + join(leaves) + "), found " + describe_found(body, false));
  std::map<std::string, Origin> seen;
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string name = key_text(it->first);
    const std::string leaf = path + "." + name;
    check_duplicate(seen, name, it->first, leaf);
    if (!find_key(leaf))
      fail(at(it->first), "unknown key '" + leaf + "'" + did_you_mean(name, leaves, path + ".") + "; valid keys in " +
                              path + ": " + join(leaves));
    given_[leaf] = Given{it->second, value_origin(it->first, it->second)};
  }
}

void Loader::check_duplicate(std::map<std::string, Origin>& seen, const std::string& name, const YAML::Node& key,
                             const std::string& label) const {
  auto [pos, inserted] = seen.emplace(name, at(key));
  if (!inserted)
    fail(at(key),
         "duplicate key '" + label + "' (first given at line " + std::to_string(pos->second.mark.line + 1) + ")");
}

void Loader::check_sweep_path(const std::string& path, const Origin& o) const {
  if (find_key(path)) return;
  if (path == "sweep" || path.rfind("sweep.", 0) == 0) fail(o, "the sweep cannot sweep itself");
  if (is_section(path))
    fail(o, "sweep: '" + path + "' is a section, not a key; sweep one of its keys: " + path + "." +
                join(keys_of(path), (", " + path + ".").c_str()));
  fail(o, "sweep: unknown key path '" + path + "'" + did_you_mean(path, all_paths()) +
              "; a sweep key is a path such as problem.d (see docs/INPUT_DECK.md)");
}

void Loader::add_sweep(const std::string& path, const YAML::Node& list, const Origin& key_origin,
                       const Origin& value_origin) {
  check_sweep_path(path, key_origin);
  if (!list.IsSequence() || list.size() == 0)
    fail(value_origin, "sweep." + path + ": expected a non-empty list of values, found " + describe_found(list, false));
  for (auto& e : sweep_)
    if (e.path == path) {  // --set replaces a swept key's list in place
      e.list = list;
      e.origin = value_origin;
      return;
    }
  sweep_.push_back(SweepEntry{path, list, value_origin, {}});
}

void Loader::read_sweep(const YAML::Node& key, const YAML::Node& body) {
  if (body.IsNull()) return;
  if (!body.IsMap())
    fail(value_origin(key, body),
         "sweep: expected a mapping from key paths to lists of values, found " + describe_found(body, false));
  std::map<std::string, Origin> seen;
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string path = key_text(it->first);
    check_duplicate(seen, path, it->first, "sweep." + path);
    add_sweep(path, it->second, at(it->first), value_origin(it->first, it->second));
  }
}

}  // namespace mosaic::deck
