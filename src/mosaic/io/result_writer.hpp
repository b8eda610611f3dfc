// Result files are written atomically: to a temporary name in the target's
// directory, flushed to disk, then renamed over the target. A reader (or a
// crash) never sees a half-written file, and an older result is replaced only
// by a complete new one.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace mosaic {

// Throws std::runtime_error naming the path if it cannot be written.
void write_file_atomically(const std::string& path, const std::string& contents);
void write_json_atomically(const std::string& path, const nlohmann::json& doc);

// Checks, before a run starts, that `path` can be created in its directory
// (creates and removes a probe file). Throws std::runtime_error if not.
void check_writable(const std::string& path);

}  // namespace mosaic
