// The YAML input deck's interface (config.hpp): load a deck (the loader,
// impl/deck_loader.hpp), the checks that need the number of ranks, the
// schema's key paths. docs/INPUT_DECK.md is the user-facing description.
#include "mosaic/config/config.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "mosaic/config/impl/deck_loader.hpp"

namespace mosaic {

using json = nlohmann::json;

std::vector<SweepPoint> load_deck_from_string(const std::string& yaml_text, const std::string& name_for_messages,
                                              const std::vector<std::string>& overrides) {
  return deck::Loader(name_for_messages, overrides).load(yaml_text);
}

std::vector<SweepPoint> load_deck(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw DeckError("cannot read deck '" + path + "': it is a directory (expected a YAML deck file)");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    throw DeckError("cannot open deck '" + path + "'" + (err ? std::string(": ") + std::strerror(err) : std::string()));
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
    for (const auto& [k, v] : sw["point"].items()) desc += (desc.empty() ? "" : ", ") + k + "=" + deck::compact(v);
    ctx = "sweep point " + std::to_string(sw["index"].get<std::size_t>() + 1) + " of " +
          std::to_string(sw["count"].get<std::size_t>()) + " (" + desc + "): ";
  }
  if (nranks < 1) throw DeckError(deck_path + ": " + ctx + "invalid number of MPI ranks " + std::to_string(nranks));
  const bool npy = config.source.type == "npy";
  // (Time segments spread one stream's segments over ranks: SegmentLayout.)
  const int P = std::max(config.segments.segments, 1);
  if (config.streams.mode == StreamMode::strong && P > 1 && std::int64_t(config.streams.total) * P < nranks)
    throw DeckError(deck_path + ": " + ctx +
                    "streams.total: every MPI rank needs at least one time segment: expected streams.total x "
                    "algorithm.time_segments >= " +
                    std::to_string(nranks) + " (the number of MPI ranks), found " +
                    std::to_string(config.streams.total) + " x " + std::to_string(P) +
                    "; raise algorithm.time_segments or run on fewer ranks");
  if (config.streams.mode == StreamMode::strong && P == 1 && config.streams.total < nranks)
    throw DeckError(deck_path + ": " + ctx +
                    "streams.total: strong mode needs at least one stream per MPI rank: expected "
                    "an integer >= " +
                    std::to_string(nranks) + " (the number of MPI ranks), found " +
                    std::to_string(config.streams.total) +
                    (npy ? " (the number of files in source.paths); give more files or run on fewer ranks"
                         : "; raise streams.total or run on fewer ranks"));
  const std::int64_t files = std::int64_t(config.source.paths.size());
  if (npy && config.streams.mode == StreamMode::weak && std::int64_t(config.streams.per_rank) * nranks != files)
    throw DeckError(deck_path + ": " + ctx +
                    "streams.per_rank: weak mode with source.type npy needs streams.per_rank x MPI ranks = "
                    "the number of files in source.paths (" +
                    std::to_string(files) + "), found " + std::to_string(config.streams.per_rank) + " x " +
                    std::to_string(nranks) + " = " + std::to_string(std::int64_t(config.streams.per_rank) * nranks) +
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
  static const std::vector<std::string> paths = deck::all_paths();
  return paths;
}

}  // namespace mosaic
