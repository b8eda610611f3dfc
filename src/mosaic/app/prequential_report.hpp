// Section 4's prequential accuracy in the result: the streams' running sums
// (algorithm/prequential.hpp) reduced over the ranks at every diagnostics
// point, the means of the interval since the previous point, and the run's
// summary (with the median of the interval means: one loud start can
// dominate a run's mean NLL).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <numeric>
#include <vector>

#include <nlohmann/json.hpp>

#include "mosaic/algorithm/prequential.hpp"
#include "mosaic/engine/batch_diagnostics.hpp"
#include "mosaic/util/mpi_collectives.hpp"

namespace mosaic::detail {

using PrequentialSums = std::array<double, preq_columns>;

// Collective: the streams' running sums added in stream-id order on rank 0
// (so the totals do not depend on how the streams were spread over ranks),
// then sent to every rank.
inline PrequentialSums reduce_prequential(const BatchDiagnostics& d, MPI_Comm comm) {
  const std::vector<unsigned long long> ids = gather_to_root(d.per_stream_ids, MPI_UNSIGNED_LONG_LONG, comm);
  const std::vector<double> sums = gather_to_root(d.per_stream_prequential, MPI_DOUBLE, comm);
  std::vector<std::size_t> order(ids.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ids[a] < ids[b]; });
  PrequentialSums total{};
  for (const std::size_t s : order)
    for (int c = 0; c < preq_columns; ++c) total[c] += sums[s * preq_columns + c];
  counted_mpi(sizeof total, [&] { return MPI_Bcast(total.data(), preq_columns, MPI_DOUBLE, 0, comm); });
  return total;
}

// Means of sums over `samples` evaluated samples (null when there are none).
inline nlohmann::json prequential_means(double samples, double zero_norm, double residual_fraction, double nll,
                                        double surprises) {
  const double with_norm = samples - zero_norm;
  return {{"samples", (long long)samples},
          {"zero_norm_samples", (long long)zero_norm},
          {"residual_fraction_mean", with_norm > 0 ? nlohmann::json(residual_fraction / with_norm) : nlohmann::json()},
          {"nll_mean", samples > 0 ? nlohmann::json(nll / samples) : nlohmann::json()},
          {"surprise_rate", samples > 0 ? nlohmann::json(surprises / samples) : nlohmann::json()}};
}

// A diagnostics point's "prequential" entry: the running sums over every
// stream so far, their means, and the means of the interval since
// `previous` (the series' entry before this one; null: since the start).
inline nlohmann::json prequential_entry(const PrequentialSums& s, const nlohmann::json& previous) {
  nlohmann::json j =
      prequential_means(s[preq_samples], s[preq_zero_norm], s[preq_residual_fraction], s[preq_nll], s[preq_surprises]);
  j["sums"] = {{"samples", s[preq_samples]},
               {"zero_norm_samples", s[preq_zero_norm]},
               {"residual_fraction", s[preq_residual_fraction]},
               {"nll", s[preq_nll]},
               {"surprises", s[preq_surprises]}};
  PrequentialSums p{};
  if (previous.is_object() && previous.contains("prequential")) {
    const nlohmann::json& ps = previous["prequential"]["sums"];
    p = {ps["samples"].get<double>(), ps["zero_norm_samples"].get<double>(), ps["residual_fraction"].get<double>(),
         ps["nll"].get<double>(), ps["surprises"].get<double>()};
  }
  j["interval"] = prequential_means(s[preq_samples] - p[preq_samples], s[preq_zero_norm] - p[preq_zero_norm],
                                    s[preq_residual_fraction] - p[preq_residual_fraction], s[preq_nll] - p[preq_nll],
                                    s[preq_surprises] - p[preq_surprises]);
  return j;
}

// The run's summary from its final entry and the diagnostics series: the
// run's means, and the medians of the per-interval means.
inline nlohmann::json prequential_summary(const nlohmann::json& final_entry, const nlohmann::json& series) {
  nlohmann::json j = final_entry.at("prequential");
  j.erase("sums");
  j.erase("interval");
  auto median = [&](const char* key) -> nlohmann::json {
    std::vector<double> v;
    for (const auto& e : series)
      if (e.contains("prequential") && !e["prequential"]["interval"][key].is_null())
        v.push_back(e["prequential"]["interval"][key].get<double>());
    if (v.empty()) return nullptr;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  j["nll_interval_median"] = median("nll_mean");
  j["residual_fraction_interval_median"] = median("residual_fraction_mean");
  j["surprise_rate_interval_median"] = median("surprise_rate");
  j["surprise_rate_calibrated"] = 0.001;
  j["definition"] =
      "ALGORITHM.md section 4, evaluated before each step with the state before it: residual fraction rho^2/||y||^2 "
      "(samples with ||y|| = 0 counted apart), negative log-likelihood per coordinate under U S U^T + s2 (I - U U^T) "
      "(the observed rows with missing data; with noise: diagonal in data units, the residual fraction whitened), "
      "surprise = y^T Sigma^-1 y above the chi-square 0.999 quantile (Wilson-Hilferty); every stream and every step "
      "taken (warm-up included, init excluded), with missing data in every mode the gapped samples the posterior "
      "scores; skipped samples (7.5) are not evaluated";
  return j;
}

}  // namespace mosaic::detail
