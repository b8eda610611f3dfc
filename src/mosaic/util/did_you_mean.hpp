// The closest valid name to a misspelt one, for error messages (deck keys
// and values in config.cpp, --kokkos-* flags in kokkos_flags.cpp).
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace mosaic {

// Levenshtein distance, ignoring case.
inline std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower((unsigned char)a[i - 1]) == std::tolower((unsigned char)b[j - 1]);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// " (did you mean '<prefix>x'?)" for the closest candidate x, or "" if none
// is within a third of its length (two edits at least).
inline std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates,
                                const std::string& prefix = "") {
  std::size_t best = std::numeric_limits<std::size_t>::max();
  std::string best_word;
  for (const auto& c : candidates) {
    const std::size_t dist = edit_distance(word, c);
    if (dist < best) {
      best = dist;
      best_word = c;
    }
  }
  if (best_word.empty()) return "";
  const std::size_t limit = std::max<std::size_t>(2, best_word.size() / 3);
  if (best > limit) return "";
  return " (did you mean '" + prefix + best_word + "'?)";
}

}  // namespace mosaic
