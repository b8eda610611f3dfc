// The YAML input deck of the mini-app (docs/INPUT_DECK.md): load, apply
// --set overrides, validate every key, expand the sweep. Everything that can
// be wrong with a deck is reported here, as a DeckError, before anything runs.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "mosaic/config/run_config.hpp"

namespace mosaic {

// A problem with a deck or an override. what() is the full user-facing text,
// e.g. "deck.yaml:3:6: problem.d: expected an integer >= 2, found 'abc'".
struct DeckError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Loads the deck at `path`, applies the overrides ("key.path=value", the value
// parsed as a YAML scalar or flow collection, e.g. "problem.d=512" or
// "sweep.problem.rank=[4, 8]"), validates everything and expands the sweep
// (cartesian product; sweep keys in deck order, then keys added by
// overrides, the last key varying fastest). Returns one SweepPoint per run,
// at least one. Throws DeckError on any problem.
std::vector<SweepPoint> load_deck(const std::string& path, const std::vector<std::string>& overrides = {});

// Same, from the text of a deck; `name_for_messages` stands in for the path.
std::vector<SweepPoint> load_deck_from_string(const std::string& yaml_text, const std::string& name_for_messages,
                                              const std::vector<std::string>& overrides = {});

// Checks that need the number of MPI ranks (strong mode: streams.total must be
// >= nranks). Throws DeckError naming `deck_path`.
void validate_against_ranks(const RunConfig& config, int nranks, const std::string& deck_path);

// Every leaf key of the deck schema as "section.key", in schema order.
const std::vector<std::string>& deck_key_paths();

}  // namespace mosaic
