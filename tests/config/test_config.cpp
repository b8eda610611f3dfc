// The YAML input deck (src/mosaic/config/config.hpp, docs/INPUT_DECK.md): every error
// names file:line:col (or the --set argument), the key path, what was expected
// and what was found; defaults, overrides and sweep expansion are exact.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mosaic/config/config.hpp"

namespace {

using mosaic::DeckError;
using mosaic::load_deck;
using mosaic::load_deck_from_string;
using nlohmann::json;

const char* kDeck = "deck.yaml";
const std::string kMinimal = "problem:\n  d: 16\n  rank: 2\n";

// The message of the DeckError thrown by loading `text` with `overrides`, or
// "<no error>".
std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    load_deck_from_string(text, kDeck, overrides);
  } catch (const DeckError& e) {
    return e.what();
  }
  return "<no error>";
}

struct ErrorCase {
  const char* name;
  std::string deck;
  std::vector<std::string> overrides;
  std::vector<std::string> expect;  // substrings of the message
};

std::vector<ErrorCase> error_cases() {
  const std::string p = kMinimal;
  return {
      // ---- types and ranges of single keys
      {"int_wrong_type",
       "problem:\n  d: abc\n  rank: 2\n",
       {},
       {"deck.yaml:2:6: problem.d: expected an integer >= 2 (at most 2147483647), found 'abc'"}},
      {"int_out_of_range",
       "problem:\n  d: 1\n  rank: 2\n",
       {},
       {"deck.yaml:2:6:", "problem.d", "expected an integer >= 2", "found 1"}},
      {"int_not_integral",
       p + "run:\n  steps: 2.5\n",
       {},
       {"deck.yaml:5:10:", "run.steps", "expected an integer >= 1", "found '2.5'"}},
      {"int_quoted", "problem:\n  d: \"16\"\n  rank: 2\n", {}, {"deck.yaml:2:6:", "problem.d", "quoted string \"16\""}},
      {"int_empty_value", "problem:\n  d:\n  rank: 2\n", {}, {"deck.yaml:2:3:", "problem.d", "found an empty value"}},
      {"int_mapping", "problem:\n  d: {a: 1}\n  rank: 2\n", {}, {"deck.yaml:2:6:", "problem.d", "found a mapping"}},
      {"int_too_large", "problem:\n  d: 99999999999\n  rank: 2\n", {}, {"problem.d", "found 99999999999"}},
      // The type's limit is stated, and 2^63 (which a double check let
      // through, to wrap to INT64_MIN) is refused for every int64 key.
      {"int_limit_stated",
       p,
       {"problem.d=2147483648"},
       {"problem.d: expected an integer >= 2 (at most 2147483647), found 2147483648"}},
      {"int64_steps_two_to_63",
       p,
       {"run.steps=9223372036854775808"},
       {"run.steps: expected an integer >= 1 (at most 9223372036854775807) or all, found 9223372036854775808"}},
      {"int64_warmup_two_to_63",
       p,
       {"run.warmup_steps=9223372036854775808"},
       {"run.warmup_steps", "(at most 9223372036854775807)", "found 9223372036854775808"}},
      {"int64_diagnostics_exponent", p, {"run.diagnostics_every=1e19"}, {"run.diagnostics_every", "found 1e19"}},
      {"int64_checkpoint_every_two_to_63",
       p,
       {"output.checkpoint.every_steps=9223372036854775808", "output.checkpoint.dir=ck"},
       {"output.checkpoint.every_steps", "found 9223372036854775808"}},
      {"rate_out_of_range",
       p + "algorithm:\n  eta_mu: 1.5\n",
       {},
       {"deck.yaml:5:11:", "algorithm.eta_mu", "expected a number in (0, 1)", "found 1.5"}},
      {"rate_wrong_type",
       p + "algorithm:\n  eta_U: fast\n",
       {},
       {"deck.yaml:5:10:", "algorithm.eta_U", "expected a number in (0, 1)", "found 'fast'"}},
      {"tracking_threshold_zero",
       p + "run:\n  tracking_threshold: 0\n",
       {},
       {"deck.yaml:5:23:", "run.tracking_threshold", "expected a number in (0, 1]", "found 0"}},
      {"clamped_fraction_above_one",
       p,
       {"run.max_clamped_fraction=1.5"},
       {"run.max_clamped_fraction", "expected a number in [0, 1]", "found 1.5"}},
      {"accuracy_misspelt",
       p + "run:\n  accuracy: throughput\n",
       {},
       {"deck.yaml:5:13:", "run.accuracy", "expected one of checked, throughput_only",
        "did you mean 'throughput_only'?"}},
      {"reference_steps_negative",
       p,
       {"run.reference_check_steps=-1"},
       {"run.reference_check_steps", "expected an integer >= 0", "found -1"}},
      {"positive_zero",
       p + "run:\n  progress_every_s: 0\n",
       {},
       {"run.progress_every_s", "expected a number > 0", "found 0"}},
      {"gamma_negative",
       p + "algorithm:\n  gamma: -1\n",
       {},
       {"algorithm.gamma", "expected a number >= 0", "found -1"}},
      {"drift_infinite",
       p + "source:\n  drift: .inf\n",
       {},
       {"source.drift", "expected a finite number", "found .inf"}},
      {"seed_negative", p + "run:\n  seed: -1\n", {}, {"deck.yaml:5:9:", "run.seed", "unsigned 64-bit", "found -1"}},
      {"seed_overflow", p + "run:\n  seed: 18446744073709551616\n", {}, {"run.seed", "found 18446744073709551616"}},
      {"reorth_negative",
       p + "algorithm:\n  reorthonormalize_every: -3\n",
       {},
       {"algorithm.reorthonormalize_every", "expected an integer >= 0", "found -3"}},
      {"block_size_negative",
       p + "algorithm:\n  block_size: -2\n",
       {},
       {"deck.yaml:5:15:", "algorithm.block_size", "expected an integer >= 0", "found -2"}},
      {"block_size_float",
       p + "algorithm:\n  block_size: 1.5\n",
       {},
       {"algorithm.block_size", "expected an integer >= 0", "found '1.5'"}},
      {"precision_solve_unknown",
       p + "algorithm:\n  precision_solve: maintain\n",
       {},
       {"deck.yaml:5:20:", "algorithm.precision_solve", "expected one of dense, maintained",
        "did you mean 'maintained'?"}},
      {"refactor_every_zero",
       p + "algorithm:\n  refactor_every: 0\n",
       {},
       {"algorithm.refactor_every", "expected an integer >= 1", "found 0"}},
      {"block_size_word",
       p + "algorithm:\n  block_size: fast\n",
       {},
       {"deck.yaml:5:15:", "algorithm.block_size", "expected an integer >= 0 (at most 2147483647) or auto",
        "found 'fast'"}},
      {"reorth_word",
       p + "algorithm:\n  reorthonormalize_every: never\n",
       {},
       {"algorithm.reorthonormalize_every", "expected an integer >= 0 (at most 2147483647) or auto", "found 'never'"}},
      // ---- output.checkpoint (a nested key group) and run.restart_from
      {"ckpt_every_zero",
       p + "output:\n  checkpoint:\n    dir: c\n    every_steps: 0\n",
       {},
       {"deck.yaml:7:18: output.checkpoint.every_steps: expected an integer >= 1 (at most 9223372036854775807), found 0"}},
      {"ckpt_unknown_key",
       p + "output:\n  checkpoint:\n    dri: c\n",
       {},
       {"deck.yaml:6:5: unknown key 'output.checkpoint.dri' (did you mean 'output.checkpoint.dir'?)",
        "valid keys in output.checkpoint: dir, every_steps, every_seconds, keep"}},
      {"ckpt_not_mapping",
       p + "output:\n  checkpoint: c\n",
       {},
       {"deck.yaml:5:15: output.checkpoint: expected a mapping of keys (dir, every_steps, every_seconds, keep), "
        "found 'c'"}},
      {"ckpt_both_every",
       p + "output:\n  checkpoint: {dir: c, every_steps: 10, every_seconds: 5}\n",
       {},
       {"output.checkpoint.every_seconds: cannot be combined with output.checkpoint.every_steps"}},
      {"ckpt_every_without_dir",
       p + "output:\n  checkpoint: {every_seconds: 60}\n",
       {},
       {"deck.yaml:5:31:", "output.checkpoint.dir: required when output.checkpoint.every_seconds is given"}},
      {"ckpt_keep_zero",
       p + "output:\n  checkpoint: {dir: c, keep: 0}\n",
       {},
       {"output.checkpoint.keep: expected an integer >= 1 (at most 2147483647), found 0"}},
      {"ckpt_seconds_negative",
       p + "output:\n  checkpoint: {dir: c, every_seconds: -1}\n",
       {},
       {"output.checkpoint.every_seconds: expected a number > 0, found -1"}},
      {"ckpt_with_sweep",
       p + "output:\n  checkpoint: {dir: c}\nsweep:\n  problem.rank: [1, 2]\n",
       {},
       {"deck.yaml:5:21: output.checkpoint.dir: expected a deck without a sweep", "found a sweep of 2 points"}},
      {"result_path_swept",
       p + "output:\n  result: out/new.json\nsweep:\n  output.result: [out/a.json, out/b.json]\n",
       {},
       {"deck.yaml:7:18: output.result: expected one result path for the whole sweep",
        "set output.result (or "
        "--output) once"}},
      {"restart_with_sweep",
       p + "sweep:\n  problem.rank: [1, 2]\n",
       {"run.restart_from=ck"},
       {"--set run.restart_from=ck: run.restart_from: expected a deck without a sweep"}},
      {"restart_auto_without_dir",
       p + "run:\n  restart_from: auto\n",
       {},
       {"deck.yaml:5:17: run.restart_from: 'auto' resumes from output.checkpoint.dir, which is not set"}},
      {"ckpt_set_group_unknown",
       p,
       {"output.checkpoint={dri: x}"},
       {"--set output.checkpoint={dri: x}: unknown key 'output.checkpoint.dri'",
        "did you mean 'output.checkpoint.dir'?"}},
      {"ckpt_set_group_scalar",
       p,
       {"output.checkpoint=x"},
       {"output.checkpoint: expected a mapping of keys", "--set output.checkpoint.dir=..."}},
      {"result_empty",
       p + "output:\n  result: \"\"\n",
       {},
       {"output.result", "expected a non-empty path", "found an empty string"}},
      {"result_list", p + "output:\n  result: [a, b]\n", {}, {"output.result", "found a list"}},
      {"enum_unknown",
       "problem:\n  d: 16\n  rank: 2\n  dtype: flaot\n",
       {},
       {"deck.yaml:4:10:", "problem.dtype", "expected one of float, double", "found 'flaot'", "did you mean 'float'?"}},
      {"enum_mode",
       p + "streams:\n  mode: strnog\n",
       {},
       {"streams.mode", "expected one of weak, strong", "did you mean 'strong'?"}},
      {"enum_ablation",
       p + "algorithm:\n  covariance_update: first-order\n",
       {},
       {"algorithm.covariance_update", "exact, first_order", "did you mean 'first_order'?"}},
      {"source_type_unknown",
       p + "source:\n  type: npz\n",
       {},
       {"deck.yaml:5:9:", "source.type", "expected one of synthetic, npy", "did you mean 'npy'?"}},
      // ---- npy sources
      {"npy_needs_paths",
       p + "source:\n  type: npy\n",
       {},
       {"deck.yaml:5:9:", "source.paths: required when source.type is npy",
        "a non-empty list of .npy file paths, or one path or glob pattern"}},
      {"npy_paths_empty_list",
       p + "source:\n  type: npy\n  paths: []\n",
       {},
       {"deck.yaml:6:10:", "source.paths", "expected a non-empty list of .npy file paths", "found an empty list"}},
      {"npy_paths_empty_string",
       p + "source:\n  type: npy\n  paths: \"\"\n",
       {},
       {"deck.yaml:6:10:", "source.paths", "found an empty string"}},
      {"npy_paths_mapping", p + "source:\n  type: npy\n  paths: {a: 1}\n", {}, {"source.paths", "found a mapping"}},
      {"npy_paths_bad_entry",
       p + "source:\n  type: npy\n  paths: [a.npy, [b.npy]]\n",
       {},
       {"source.paths", "found a list whose entry 1 is a list"}},
      {"npy_glob_matches_nothing",
       p + "source:\n  type: npy\n  paths: /nonexistent_mosaic_dir/*.npy\n",
       {},
       {"deck.yaml:6:10:", "source.paths: the pattern '/nonexistent_mosaic_dir/*.npy' matches no files"}},
      {"npy_total_not_file_count",
       p + "streams: {mode: strong, total: 3}\nsource:\n  type: npy\n  paths: [a.npy, b.npy]\n",
       {},
       {"deck.yaml:4:32:", "streams.total", "expected the number of files in source.paths (2)", "found 3"}},
      {"npy_chunk_rows_zero",
       p + "source:\n  chunk_rows: 0\n",
       {},
       {"deck.yaml:5:15:", "source.chunk_rows", "expected an integer >= 1", "found 0"}},
      {"steps_all_synthetic",
       p + "run:\n  steps: all\n",
       {},
       {"deck.yaml:5:10:", "run.steps", "'all'", "needs source.type npy"}},
      {"steps_all_synthetic_override",
       kMinimal,
       {"run.steps=all"},
       {"deck.yaml: --set run.steps=all: run.steps", "needs source.type npy"}},
      {"steps_bad_word",
       p + "run:\n  steps: every\n",
       {},
       {"deck.yaml:5:10:", "run.steps: expected an integer >= 1 (at most 9223372036854775807) or all, found 'every'"}},
      {"noise_range_order",
       p + "source:\n  noise_range: [0.5, 0.1]\n",
       {},
       {"source.noise_range", "0 < lo <= hi", "lo > hi"}},
      {"noise_range_length",
       p + "source:\n  noise_range: [0.1]\n",
       {},
       {"source.noise_range", "two numbers", "found a list of 1 value"}},
      {"noise_range_zero", p + "source:\n  noise_range: [0, 0.1]\n", {}, {"source.noise_range", "found [0, 0.1]"}},
      // ---- cross-key checks
      {"rank_not_below_d",
       "problem:\n  d: 16\n  rank: 16\n",
       {},
       {"deck.yaml:3:9:", "problem.rank", "expected an integer in [1, d-1] = [1, 15]", "found 16"}},
      {"source_rank_too_large",
       p + "source:\n  rank: 9\n",
       {},
       {"deck.yaml:5:9:", "source.rank", "[1, d/2] = [1, 8]", "found 9"}},
      {"source_rank_default_too_large",
       "problem:\n  d: 16\n  rank: 10\n",
       {},
       {"deck.yaml:3:9:", "source.rank", "defaults to problem.rank = 10", "set source.rank"}},
      {"noise_and_range",
       p + "source:\n  noise: 0.1\n  noise_range: [0.05, 0.2]\n",
       {},
       {"deck.yaml:6:16:", "source.noise_range", "source.noise", "deck.yaml:5:10", "not both"}},
      {"lambda_order",
       p + "source:\n  lambda_min: 2.0\n",
       {},
       {"deck.yaml:5:15:", "source.lambda_min", "lambda_min <= source.lambda_max", "found"}},
      {"strong_needs_total",
       p + "streams:\n  mode: strong\n",
       {},
       {"deck.yaml:5:9:", "streams.total", "required when streams.mode is strong"}},
      {"init_samples_too_few",
       p + "algorithm:\n  init_samples: 2\n",
       {},
       {"deck.yaml:5:17:", "algorithm.init_samples", ">= problem.rank + 1 = 3", "found 2"}},
      // ---- section 9's segments
      {"segment_tolerance_not_a_number",
       p + "algorithm:\n  segment_tolerance: tight\n",
       {},
       {"deck.yaml:5:22:", "algorithm.segment_tolerance", "a number in (0, 1) or auto", "found 'tight'"}},
      {"segment_tolerance_one",
       p + "algorithm:\n  segment_tolerance: 1\n",
       {},
       {"deck.yaml:5:22:", "algorithm.segment_tolerance", "found 1"}},
      {"segment_warmup_negative",
       p + "algorithm:\n  segment_warmup: -1\n",
       {},
       {"deck.yaml:5:19:", "algorithm.segment_warmup", "or auto", "found -1"}},
      {"segment_gauge_misspelt",
       p + "algorithm:\n  segment_gauge: cary\n",
       {},
       {"deck.yaml:5:18:", "algorithm.segment_gauge", "carry"}},
      {"time_segments_float_without_tolerance",
       "problem:\n  d: 16\n  rank: 2\n  dtype: float\nalgorithm:\n  time_segments: 4\n",
       {},
       {"deck.yaml:6:18:", "algorithm.time_segments: 4 with problem.dtype float", "segment_tolerance has no default"}},
      {"time_segments_with_missing",
       p + "algorithm:\n  time_segments: 4\n  missing: posterior\n",
       {},
       {"deck.yaml:6:12:", "algorithm.time_segments: 4 needs algorithm.missing: error, found posterior"}},
      {"time_segments_with_diagonal_noise",
       p + "algorithm:\n  time_segments: 4\n  noise: diagonal\n",
       {},
       {"deck.yaml:6:10:", "algorithm.time_segments: 4 needs algorithm.noise: isotropic, found diagonal"}},
      {"time_segments_with_maintained_solve",
       p + "algorithm:\n  time_segments: 4\n  precision_solve: maintained\n",
       {},
       {"deck.yaml:6:20:", "algorithm.time_segments: 4 needs algorithm.precision_solve: dense, found maintained"}},
      {"time_segments_with_diagnostics_points",
       p + "algorithm:\n  time_segments: 4\nrun:\n  diagnostics_every: 100\n",
       {},
       {"deck.yaml:7:22:", "run.diagnostics_every: expected 0 with algorithm.time_segments: 4, found 100"}},
      {"time_segments_with_checkpoints",
       p + "algorithm:\n  time_segments: 4\noutput:\n  checkpoint:\n    dir: ck\n",
       {},
       {"deck.yaml:8:10:", "output.checkpoint.dir: a run with algorithm.time_segments: 4 is not checkpointed"}},
      {"init_max_samples_below_init_samples",
       p + "algorithm:\n  init_samples: 8\n  init_max_samples: 6\n",
       {},
       {"deck.yaml:6:21:", "algorithm.init_max_samples", ">= algorithm.init_samples = 8", "found 6"}},
      // ---- structure
      {"unknown_key",
       "problem:\n  d: 16\n  rnak: 2\n",
       {},
       {"deck.yaml:3:3:", "unknown key 'problem.rnak'", "did you mean 'problem.rank'?",
        "valid keys in problem: d, rank, dtype"}},
      {"unknown_key_far",
       p + "run:\n  zzzzzzzz: 1\n",
       {},
       {"deck.yaml:5:3:", "unknown key 'run.zzzzzzzz'", "valid keys in run: steps"}},
      {"unknown_section",
       p + "algoritm:\n  eta_mu: 0.1\n",
       {},
       {"deck.yaml:4:1:", "unknown section 'algoritm'", "did you mean 'algorithm'?"}},
      {"dotted_top_level",
       p + "run.steps: 5\n",
       {},
       {"deck.yaml:4:1:", "'run.steps' is a key path", "run: {steps: ...}"}},
      {"section_not_mapping", p + "run: 5\n", {}, {"deck.yaml:4:6:", "run: expected a mapping of keys", "found '5'"}},
      {"duplicate_key",
       "problem:\n  d: 16\n  rank: 2\n  d: 32\n",
       {},
       {"deck.yaml:4:3:", "duplicate key 'problem.d'", "line 2"}},
      {"duplicate_section", p + "problem:\n  d: 8\n", {}, {"deck.yaml:4:1:", "duplicate key 'problem'"}},
      {"missing_required_key",
       "problem:\n  d: 16\n",
       {},
       {"deck.yaml:1:1:", "problem.rank: required key is missing", "expected an integer >= 1"}},
      {"missing_section", "run:\n  steps: 5\n", {}, {"deck.yaml: problem: required section is missing"}},
      {"yaml_syntax", "problem:\n  d: [16\n  rank: 2\n", {}, {"deck.yaml:", "YAML syntax error"}},
      {"yaml_bad_indent", "problem:\n  d: 16\n rank: 2\n", {}, {"deck.yaml:3:", "YAML syntax error"}},
      {"root_list", "- problem\n- run\n", {}, {"deck.yaml:1:1:", "expected a mapping of sections", "found a list"}},
      {"two_documents", p + "---\nrun:\n  steps: 5\n", {}, {"deck.yaml:5:1:", "single YAML document"}},
      // ---- sweeps
      {"sweep_unknown_key",
       p + "sweep:\n  problem.dd: [16, 32]\n",
       {},
       {"deck.yaml:5:3:", "sweep: unknown key path 'problem.dd'", "did you mean 'problem.d'?"}},
      {"sweep_section",
       p + "sweep:\n  problem: [16, 32]\n",
       {},
       {"deck.yaml:5:3:", "'problem' is a section", "problem.d, problem.rank"}},
      {"sweep_itself", p + "sweep:\n  sweep.problem.d: [16]\n", {}, {"deck.yaml:5:3:", "cannot sweep itself"}},
      {"sweep_not_list",
       p + "sweep:\n  problem.d: 512\n",
       {},
       {"deck.yaml:5:14:", "sweep.problem.d", "expected a non-empty list", "found '512'"}},
      {"sweep_empty_list",
       p + "sweep:\n  problem.d: []\n",
       {},
       {"deck.yaml:5:14:", "sweep.problem.d", "found an empty list"}},
      {"sweep_not_mapping",
       p + "sweep: [problem.d]\n",
       {},
       {"deck.yaml:4:8:", "sweep: expected a mapping", "found a list"}},
      {"sweep_value_out_of_range",
       p + "sweep:\n  problem.d: [16, 1]\n",
       {},
       {"deck.yaml:5:19:", "sweep.problem.d[1]", "expected an integer >= 2", "found 1"}},
      {"sweep_value_bad_enum",
       p + "sweep:\n  problem.dtype: [float, half]\n",
       {},
       {"deck.yaml:5:26:", "sweep.problem.dtype[1]", "one of float, double", "found 'half'"}},
      {"sweep_point_cross_check",
       "problem:\n  d: 16\n  rank: 4\nsweep:\n  problem.d: [16, 4]\n",
       {},
       {"deck.yaml:3:9:", "sweep point 2 of 2 (problem.d=4)", "problem.rank", "found 4"}},
      {"sweep_point_value_origin",
       "problem:\n  d: 16\n  rank: 2\nsweep:\n  problem.rank: [2, 20]\n",
       {},
       {"deck.yaml:5:21:", "sweep point 2 of 2 (problem.rank=20)", "problem.rank", "found 20"}},
      {"sweep_noise_with_range",
       p + "source:\n  noise_range: [0.05, 0.2]\nsweep:\n  source.noise: [0.1, 0.2]\n",
       {},
       {"source.noise_range", "cannot be combined", "source.noise"}},
      // ---- overrides
      {"override_no_equals", kMinimal, {"problem.d"}, {"deck.yaml: --set problem.d:", "no '=' found"}},
      {"override_bad_value",
       kMinimal,
       {"problem.d=abc"},
       {"deck.yaml: --set problem.d=abc: problem.d: expected an integer >= 2 (at most 2147483647), found 'abc'"}},
      {"override_unknown_key",
       kMinimal,
       {"problem.dd=3"},
       {"--set problem.dd=3:", "unknown key 'problem.dd'", "did you mean 'problem.d'?"}},
      {"override_unknown_section",
       kMinimal,
       {"problm.d=3"},
       {"--set problm.d=3:", "unknown key path 'problm.d'", "did you mean 'problem.d'?"}},
      {"override_section_only", kMinimal, {"problem=3"}, {"--set problem=3:", "'problem' is a section"}},
      {"override_too_deep", kMinimal, {"problem.d.x=3"}, {"--set problem.d.x=3:", "unknown key 'problem.d.x'"}},
      {"override_invalid_yaml", kMinimal, {"problem.d=[1,"}, {"--set problem.d=[1,:", "not valid YAML"}},
      {"override_sweep_scalar",
       kMinimal,
       {"sweep.problem.d=512"},
       {"--set sweep.problem.d=512:", "expected a non-empty list", "found '512'"}},
      {"override_sweep_unknown",
       kMinimal,
       {"sweep.problem.rnak=[2]"},
       {"--set sweep.problem.rnak=[2]:", "did you mean 'problem.rank'?"}},
      {"override_sweep_value",
       kMinimal,
       {"sweep.problem.rank=[2, 16]"},
       {"--set sweep.problem.rank=[2, 16]:", "sweep point 2 of 2 (problem.rank=16)", "problem.rank", "found 16"}},
      {"override_whole_sweep",
       kMinimal,
       {"sweep={problem.d: [1]}"},
       {"--set sweep={problem.d: [1]}:", "sweep.<key.path>="}},
      {"override_cross_check",
       kMinimal,
       {"problem.rank=16"},
       {"deck.yaml: --set problem.rank=16: problem.rank", "[1, 15]", "found 16"}},
      // ---- missing data (ALGORITHM.md section 7)
      {"missing_entries_need_a_mode",
       p + "source:\n  missing_rate: 0.2\n",
       {},
       {"deck.yaml:5:", "source.missing_rate", "algorithm.missing is 'error'", "posterior"}},
      {"outage_without_length",
       p + "source:\n  outage_count: 4\nalgorithm:\n  missing: posterior\n",
       {},
       {"deck.yaml:5:", "source.outage_steps", ">= 1", "found 0"}},
      {"outage_outside_d",
       p + "source:\n  outage_first: 14\n  outage_count: 4\n  outage_steps: 5\nalgorithm:\n  missing: posterior\n",
       {},
       {"deck.yaml:6:", "[14, 18)", "problem.d = 16"}},
      {"missing_with_maintained_solve",
       p + "algorithm:\n  missing: posterior\n  precision_solve: maintained\n",
       {},
       {"deck.yaml:6:", "algorithm.precision_solve", "no masked form", "dense"}},
      // ---- heterogeneous noise (ALGORITHM.md section 8)
      {"noise_unknown",
       p + "algorithm:\n  noise: diagonl\n  block_size: 1\n",
       {},
       {"deck.yaml:5:10:", "algorithm.noise", "expected one of isotropic, diagonal", "did you mean 'diagonal'?"}},
      {"rewhiten_every_zero",
       p + "algorithm:\n  rewhiten_every: 0\n",
       {},
       {"deck.yaml:5:19:", "algorithm.rewhiten_every", "expected an integer >= 1", "found 0"}},
      {"rewhiten_min_count_zero",
       p + "algorithm:\n  rewhiten_min_count: 0\n",
       {},
       {"deck.yaml:5:23:", "algorithm.rewhiten_min_count", "expected an integer >= 1", "found 0"}},
      {"rewhiten_fmax_one",
       p + "algorithm:\n  rewhiten_fmax: 1\n",
       {},
       {"deck.yaml:5:18:", "algorithm.rewhiten_fmax", "expected a number > 1", "found 1"}},
      {"rewhiten_fmax_inf", p, {"algorithm.rewhiten_fmax=.inf"}, {"algorithm.rewhiten_fmax", "found"}},
      {"leverage_floor_zero",
       p + "algorithm:\n  leverage_floor: 0\n",
       {},
       {"deck.yaml:5:19:", "algorithm.leverage_floor", "expected a number in (0, 1)", "found 0"}},
      {"leverage_floor_one",
       p + "algorithm:\n  leverage_floor: 1\n",
       {},
       {"deck.yaml:5:19:", "algorithm.leverage_floor", "expected a number in (0, 1)", "found 1"}},
      {"diagonal_noise_with_maintained_solve",
       p + "algorithm:\n  noise: diagonal\n  block_size: 1\n  precision_solve: maintained\n",
       {},
       {"deck.yaml:7:", "algorithm.precision_solve", "algorithm.noise: diagonal", "dense"}},
  };
}

// Shown by ctest and gtest instead of the bytes of the struct.
void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

class DeckErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(DeckErrors, MessageNamesPlaceKeyExpectedAndFound) {
  const ErrorCase& c = GetParam();
  const std::string msg = error_of(c.deck, c.overrides);
  ASSERT_NE(msg, "<no error>") << "deck:\n" << c.deck;
  for (const auto& s : c.expect) EXPECT_NE(msg.find(s), std::string::npos) << "expected '" << s << "' in: " << msg;
}

INSTANTIATE_TEST_SUITE_P(Table, DeckErrors, ::testing::ValuesIn(error_cases()),
                         [](const ::testing::TestParamInfo<ErrorCase>& i) { return std::string(i.param.name); });

TEST(Deck, MissingFile) {
  try {
    load_deck("/nonexistent/dir/x.yaml");
    FAIL() << "no error";
  } catch (const DeckError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open deck '/nonexistent/dir/x.yaml'"), std::string::npos) << e.what();
  }
}

TEST(Deck, FileErrorsNameThePath) {
  const auto path = std::filesystem::temp_directory_path() / "mosaic_test_config_bad.yaml";
  {
    std::ofstream f(path);
    f << "problem:\n  d: 16\n  rank: two\n";
  }
  try {
    load_deck(path.string());
    FAIL() << "no error";
  } catch (const DeckError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string() + ":3:9: problem.rank"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(Deck, DefaultsResolve) {
  const auto pts = load_deck_from_string(kMinimal, kDeck);
  ASSERT_EQ(pts.size(), 1u);
  const mosaic::RunConfig& c = pts[0].config;
  EXPECT_TRUE(pts[0].point.empty());
  EXPECT_EQ(c.deck_path, kDeck);
  EXPECT_EQ(c.problem.d, 16);
  EXPECT_EQ(c.problem.rank, 2);
  EXPECT_EQ(c.problem.dtype, mosaic::Dtype::float64);
  EXPECT_EQ(c.streams.mode, mosaic::StreamMode::weak);
  EXPECT_EQ(c.streams.per_rank, 1);
  EXPECT_EQ(c.streams.total, 0);
  EXPECT_EQ(c.source.type, "synthetic");
  const mosaic::SyntheticSpec& s = c.source.synthetic;
  EXPECT_EQ(s.d, 16);
  EXPECT_EQ(s.r, 2);  // default: problem.rank
  EXPECT_EQ(s.lambda_max, 1.0);
  EXPECT_EQ(s.lambda_min, 0.1);
  EXPECT_EQ(s.noise, 0.1);
  EXPECT_FALSE(s.heterogeneous());
  EXPECT_EQ(s.drift, 0.0);
  EXPECT_EQ(s.mean_scale, 1.0);
  EXPECT_EQ(s.seed, 1u);
  const mosaic::MosaicParams& a = c.algorithm;
  EXPECT_EQ(a.covariance_update, mosaic::CovarianceUpdate::exact);
  EXPECT_EQ(a.subspace_direction, mosaic::SubspaceDirection::precision);
  EXPECT_EQ(a.eta_mu, 0.01);
  EXPECT_EQ(a.eta_S, 0.01);
  EXPECT_EQ(a.eta_U, 0.005);
  EXPECT_EQ(a.eta_s, 0.01);
  EXPECT_EQ(a.gamma, 1.0);
  EXPECT_EQ(a.max_step, 1.0);
  EXPECT_EQ(a.reorthonormalize_every, mosaic::kAuto);
  EXPECT_EQ(a.init, mosaic::InitMode::data);
  EXPECT_EQ(a.init_samples, 4);        // 2 * rank
  EXPECT_EQ(a.init_max_samples, 256);  // 64 * init_samples
  const mosaic::SegmentParams& sg = c.segments;
  EXPECT_EQ(sg.segments, 1);
  EXPECT_EQ(sg.warmup, mosaic::kAuto);
  EXPECT_EQ(sg.warmup_init, mosaic::InitMode::data);
  EXPECT_EQ(sg.tolerance, double(mosaic::kAuto));
  EXPECT_EQ(sg.max_passes, mosaic::kAuto);
  EXPECT_TRUE(sg.gauge_carry);
  EXPECT_EQ(a.init_scale, 1.0);
  EXPECT_EQ(a.block_size, mosaic::kAuto);
  EXPECT_EQ(a.precision_solve, mosaic::PrecisionSolve::dense);
  EXPECT_EQ(a.refactor_every, 64);
  EXPECT_EQ(a.noise, mosaic::NoiseModel::isotropic);
  EXPECT_EQ(a.rewhiten_every, 1000);
  EXPECT_EQ(a.rewhiten_min_count, 100);
  EXPECT_EQ(a.rewhiten_fmax, 4.0);
  EXPECT_EQ(a.leverage_floor, 0.1);
  EXPECT_EQ(c.run.steps, 1000);
  EXPECT_EQ(c.run.warmup_steps, 0);
  EXPECT_EQ(c.run.diagnostics_every, 0);
  EXPECT_EQ(c.run.progress_every_s, 10.0);
  EXPECT_EQ(c.run.seed, 1u);
  EXPECT_EQ(c.output.result, "mosaic_result.json");
  EXPECT_EQ(c.output.state_dir, "");
  EXPECT_TRUE(c.source.paths.empty());
  EXPECT_EQ(c.source.chunk_rows, 1024);
  EXPECT_FALSE(c.run.steps_all);

  const json& r = c.resolved;
  EXPECT_TRUE(r["source"]["paths"].is_null());
  EXPECT_EQ(r["source"]["chunk_rows"], 1024);
  EXPECT_EQ(r["problem"]["dtype"], "double");
  EXPECT_EQ(r["source"]["rank"], 2);
  EXPECT_EQ(r["source"]["noise"], 0.1);
  EXPECT_TRUE(r["source"]["noise_range"].is_null());
  EXPECT_TRUE(r["streams"]["total"].is_null());
  EXPECT_EQ(r["algorithm"]["init_samples"], 4);
  EXPECT_EQ(r["algorithm"]["init_max_samples"], 256);
  EXPECT_EQ(r["algorithm"]["time_segments"], 1);
  EXPECT_EQ(r["algorithm"]["segment_warmup"], "auto");
  EXPECT_EQ(r["algorithm"]["segment_tolerance"], "auto");
  EXPECT_EQ(r["algorithm"]["segment_gauge"], "carry");
  EXPECT_EQ(r["algorithm"]["eta_U"], 0.005);
  EXPECT_EQ(r["algorithm"]["block_size"], "auto");
  EXPECT_EQ(r["algorithm"]["reorthonormalize_every"], "auto");
  EXPECT_EQ(r["algorithm"]["noise"], "isotropic");
  EXPECT_EQ(r["algorithm"]["rewhiten_every"], 1000);
  EXPECT_EQ(r["run"]["seed"], 1u);
  EXPECT_EQ(r["output"]["result"], "mosaic_result.json");
  EXPECT_EQ(r["sweep"], json({{"index", 0}, {"count", 1}, {"point", json::object()}}));
  EXPECT_EQ(r["input"]["deck"], kDeck);
}

// The blocked update takes any schedule: diagnostics and checkpoint periods
// need not be multiples of block_size (blocks end there).
TEST(Deck, BlockSizeTakesAnySchedule) {
  const auto points = mosaic::load_deck_from_string(
      "problem: {d: 16, rank: 2}\nalgorithm: {block_size: 64, reorthonormalize_every: 100}\n"
      "run: {diagnostics_every: 100}\noutput: {checkpoint: {dir: c, every_steps: 12}}\n",
      "deck.yaml");
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].config.algorithm.block_size, 64);
  EXPECT_EQ(points[0].config.algorithm.reorthonormalize_every, 100);
  EXPECT_EQ(points[0].config.run.diagnostics_every, 100);
  EXPECT_EQ(points[0].config.output.checkpoint.every_steps, 12);
  for (const char* word : {"auto", "1", "0"}) {
    const auto q = mosaic::load_deck_from_string("problem: {d: 16, rank: 2}\n", "deck.yaml",
                                                 {std::string("algorithm.block_size=") + word});
    EXPECT_EQ(q[0].config.algorithm.block_size, std::string(word) == "auto" ? mosaic::kAuto : std::stoi(word));
  }
}

// The largest value of an int64 key is accepted as itself.
TEST(Deck, LargestInt64IsAccepted) {
  const auto pts = load_deck_from_string(kMinimal, kDeck, {"run.steps=9223372036854775807"});
  EXPECT_EQ(pts[0].config.run.steps, std::numeric_limits<std::int64_t>::max());
}

// Every key of the schema appears in the resolved JSON, and nothing else.
TEST(Deck, ResolvedJsonHasEveryKey) {
  const auto& paths = mosaic::deck_key_paths();
  EXPECT_EQ(paths.size(), 71u);
  const json r = load_deck_from_string(kMinimal, kDeck)[0].config.resolved;
  std::size_t leaves = 0;
  for (const auto& [sec, body] : r.items())
    if (sec != "sweep" && sec != "input")
      for (const auto& [key, value] : body.items()) leaves += value.is_object() ? value.size() : 1;  // groups nest
  EXPECT_EQ(leaves, paths.size());
  for (const auto& p : paths) {
    const auto dot = p.find('.');
    const std::string sec = p.substr(0, dot), key = p.substr(dot + 1);
    ASSERT_TRUE(r.contains(sec)) << p;
    const auto sub = key.find('.');
    if (sub == std::string::npos) EXPECT_TRUE(r[sec].contains(key)) << p;
    else EXPECT_TRUE(r[sec][key.substr(0, sub)].contains(key.substr(sub + 1))) << p;
  }
}

// output.checkpoint: nested in the deck, by dotted --set, or as a --set
// mapping; defaults; resolved JSON nested.
TEST(Deck, CheckpointGroup) {
  auto c = load_deck_from_string(kMinimal, kDeck)[0].config;
  EXPECT_TRUE(c.output.checkpoint.dir.empty());
  EXPECT_EQ(c.output.checkpoint.every_steps, 0);
  EXPECT_EQ(c.output.checkpoint.every_seconds, 0.0);
  EXPECT_EQ(c.output.checkpoint.keep, 2);
  EXPECT_TRUE(c.run.restart_from.empty());
  EXPECT_EQ(c.resolved["output"]["checkpoint"],
            json({{"dir", ""}, {"every_steps", nullptr}, {"every_seconds", nullptr}, {"keep", 2}}));
  c = load_deck_from_string(kMinimal +
                                "output:\n  checkpoint:\n    dir: ck\n    every_steps: 500\n    keep: 3\n"
                                "run:\n  restart_from: auto\n",
                            kDeck)[0]
          .config;
  EXPECT_EQ(c.output.checkpoint.dir, "ck");
  EXPECT_EQ(c.output.checkpoint.every_steps, 500);
  EXPECT_EQ(c.output.checkpoint.keep, 3);
  EXPECT_EQ(c.run.restart_from, "auto");
  EXPECT_EQ(c.resolved["output"]["checkpoint"]["every_steps"], 500);
  c = load_deck_from_string(kMinimal, kDeck,
                            {"output.checkpoint={dir: a, keep: 4}", "output.checkpoint.every_seconds=30"})[0]
          .config;
  EXPECT_EQ(c.output.checkpoint.dir, "a");
  EXPECT_EQ(c.output.checkpoint.keep, 4);
  EXPECT_EQ(c.output.checkpoint.every_seconds, 30.0);
  EXPECT_EQ(c.output.checkpoint.every_steps, 0);
}

// A deck that sets every key to a non-default value reaches RunConfig intact.
TEST(Deck, EveryKeyIsWired) {
  const std::string text = R"(
problem: {d: 64, rank: 6, dtype: float}
streams: {mode: strong, per_rank: 3, total: 12}
source:
  type: synthetic
  rank: 5
  lambda_max: 4.0
  lambda_min: 0.5
  noise_range: [0.05, 0.2]
  drift: 1e-3
  mean_scale: 2.5
algorithm:
  covariance_update: first_order
  subspace_direction: oja
  eta_mu: 0.02
  eta_S: 0.03
  eta_U: 0.04
  eta_s: 0.05
  gamma: 0.5
  max_step: 0.25
  reorthonormalize_every: 7
  init: random
  init_samples: 3
  init_scale: 2.0
  block_size: 13
  precision_solve: maintained
  refactor_every: 16
run: {steps: 1e5, warmup_steps: 11, diagnostics_every: 13, progress_every_s: 0.5, seed: 18446744073709551615}
output: {result: out/r.json, state_dir: out/states}
)";
  const auto pts = load_deck_from_string(text, kDeck);
  ASSERT_EQ(pts.size(), 1u);
  const mosaic::RunConfig& c = pts[0].config;
  EXPECT_EQ(c.problem.d, 64);
  EXPECT_EQ(c.problem.rank, 6);
  EXPECT_EQ(c.problem.dtype, mosaic::Dtype::float32);
  EXPECT_EQ(c.streams.mode, mosaic::StreamMode::strong);
  EXPECT_EQ(c.streams.per_rank, 3);
  EXPECT_EQ(c.streams.total, 12);
  const mosaic::SyntheticSpec& s = c.source.synthetic;
  EXPECT_EQ(s.d, 64);
  EXPECT_EQ(s.r, 5);
  EXPECT_EQ(s.lambda_max, 4.0);
  EXPECT_EQ(s.lambda_min, 0.5);
  EXPECT_TRUE(s.heterogeneous());
  EXPECT_EQ(s.noise_min, 0.05);
  EXPECT_EQ(s.noise_max, 0.2);
  EXPECT_EQ(s.drift, 1e-3);
  EXPECT_EQ(s.mean_scale, 2.5);
  EXPECT_EQ(s.seed, 18446744073709551615ull);
  const mosaic::MosaicParams& a = c.algorithm;
  EXPECT_EQ(a.covariance_update, mosaic::CovarianceUpdate::first_order);
  EXPECT_EQ(a.subspace_direction, mosaic::SubspaceDirection::oja);
  EXPECT_EQ(a.eta_mu, 0.02);
  EXPECT_EQ(a.eta_S, 0.03);
  EXPECT_EQ(a.eta_U, 0.04);
  EXPECT_EQ(a.eta_s, 0.05);
  EXPECT_EQ(a.gamma, 0.5);
  EXPECT_EQ(a.max_step, 0.25);
  EXPECT_EQ(a.reorthonormalize_every, 7);
  EXPECT_EQ(a.init, mosaic::InitMode::random);
  EXPECT_EQ(a.init_samples, 3);  // init: random does not need rank + 1
  EXPECT_EQ(a.init_scale, 2.0);
  EXPECT_EQ(a.block_size, 13);
  EXPECT_EQ(a.precision_solve, mosaic::PrecisionSolve::maintained);
  EXPECT_EQ(a.refactor_every, 16);
  EXPECT_EQ(c.run.steps, 100000);
  EXPECT_EQ(c.run.warmup_steps, 11);
  EXPECT_EQ(c.run.diagnostics_every, 13);
  EXPECT_EQ(c.run.progress_every_s, 0.5);
  EXPECT_EQ(c.run.seed, 18446744073709551615ull);
  EXPECT_EQ(c.output.result, "out/r.json");
  EXPECT_EQ(c.output.state_dir, "out/states");
  const json& r = c.resolved;
  EXPECT_EQ(r["problem"]["dtype"], "float");
  EXPECT_TRUE(r["source"]["noise"].is_null());  // heterogeneous: noise unused
  EXPECT_EQ(r["source"]["noise_range"], json({0.05, 0.2}));
  EXPECT_EQ(r["run"]["seed"].get<std::uint64_t>(), 18446744073709551615ull);
  EXPECT_EQ(r["run"]["steps"], 100000);
  EXPECT_EQ(r["algorithm"]["covariance_update"], "first_order");
}

// The missing-data keys reach the run's configuration.
TEST(Deck, MissingDataKeysAreWired) {
  const std::string text = R"(
problem: {d: 64, rank: 6}
source:
  missing_rate: 0.1
  outage_first: 3
  outage_count: 7
  outage_start: 100
  outage_steps: 50
  missing_block_rate: 0.02
  missing_block_coords: 4
  missing_block_steps: 9
algorithm: {missing: project, missing_rotation: geodesic, missing_cond_max: 500}
)";
  const mosaic::RunConfig c = load_deck_from_string(text, kDeck)[0].config;
  const mosaic::MissingSpec& m = c.source.synthetic.missing;
  EXPECT_EQ(m.mcar_rate, 0.1);
  EXPECT_EQ(m.outage_first, 3);
  EXPECT_EQ(m.outage_count, 7);
  EXPECT_EQ(m.outage_start, 100u);
  EXPECT_EQ(m.outage_steps, 50u);
  EXPECT_EQ(m.block_rate, 0.02);
  EXPECT_EQ(m.block_coords, 4);
  EXPECT_EQ(m.block_steps, 9u);
  EXPECT_EQ(c.algorithm.missing, mosaic::MissingMode::project);
  EXPECT_EQ(c.algorithm.missing_rotation, mosaic::MissingRotation::geodesic);
  EXPECT_EQ(c.algorithm.missing_cond_max, 500.0);
  const mosaic::RunConfig d = load_deck_from_string(kMinimal, kDeck)[0].config;
  EXPECT_EQ(d.algorithm.missing, mosaic::MissingMode::error);
  EXPECT_FALSE(d.source.synthetic.missing.any());
}

// The heterogeneous-noise keys (ALGORITHM.md section 8) reach the run's
// configuration and the resolved deck (the result's resolved_deck, which a
// checkpoint's restart compares key by key).
TEST(Deck, DiagonalNoiseKeysAreWired) {
  const std::string text = R"(
problem: {d: 64, rank: 6}
algorithm:
  noise: diagonal
  block_size: 1
  missing: posterior
  rewhiten_every: 500
  rewhiten_min_count: 40
  rewhiten_fmax: 2.5
  leverage_floor: 0.25
)";
  const mosaic::RunConfig c = load_deck_from_string(text, kDeck)[0].config;
  const mosaic::MosaicParams& a = c.algorithm;
  EXPECT_EQ(a.noise, mosaic::NoiseModel::diagonal);
  EXPECT_EQ(a.block_size, 1);
  EXPECT_EQ(a.missing, mosaic::MissingMode::posterior);
  EXPECT_EQ(a.rewhiten_every, 500);
  EXPECT_EQ(a.rewhiten_min_count, 40);
  EXPECT_EQ(a.rewhiten_fmax, 2.5);
  EXPECT_EQ(a.leverage_floor, 0.25);
  const json& r = c.resolved["algorithm"];
  EXPECT_EQ(r["noise"], "diagonal");
  EXPECT_EQ(r["rewhiten_every"], 500);
  EXPECT_EQ(r["rewhiten_min_count"], 40);
  EXPECT_EQ(r["rewhiten_fmax"], 2.5);
  EXPECT_EQ(r["leverage_floor"], 0.25);
  // Every block_size: the sequential kernel (0, 1) and 8.5's blocked form
  // (auto, the default, and an explicit k), in a sweep too.
  const auto pts = load_deck_from_string(kMinimal + "sweep:\n  algorithm.block_size: [0, 1, auto, 64]\n", kDeck,
                                         {"algorithm.noise=diagonal"});
  ASSERT_EQ(pts.size(), 4u);
  EXPECT_EQ(pts[0].config.algorithm.block_size, 0);
  EXPECT_EQ(pts[2].config.algorithm.block_size, mosaic::kAuto);
  EXPECT_EQ(pts[3].config.algorithm.block_size, 64);
  for (const auto& pt : pts) EXPECT_EQ(pt.config.algorithm.noise, mosaic::NoiseModel::diagonal);
  // Like refactor_every without precision_solve: maintained, the section 8
  // keys are accepted (range-checked, and recorded) with noise: isotropic.
  const mosaic::RunConfig iso =
      load_deck_from_string(kMinimal + "algorithm: {rewhiten_every: 7, leverage_floor: 0.5}\n", kDeck)[0].config;
  EXPECT_EQ(iso.algorithm.noise, mosaic::NoiseModel::isotropic);
  EXPECT_EQ(iso.algorithm.rewhiten_every, 7);
  EXPECT_EQ(iso.algorithm.leverage_floor, 0.5);
  EXPECT_EQ(iso.resolved["algorithm"]["rewhiten_every"], 7);
}

TEST(Deck, OverridesApplyInOrder) {
  const auto pts =
      load_deck_from_string(kMinimal, kDeck,
                            {"problem.d=512", "problem.rank = 32", "problem.dtype=float", "algorithm.init=random",
                             "output.state_dir=", "run.steps=10", "run.steps=20", "source.noise_range=[0.1, 0.3]"});
  ASSERT_EQ(pts.size(), 1u);
  const mosaic::RunConfig& c = pts[0].config;
  EXPECT_EQ(c.problem.d, 512);
  EXPECT_EQ(c.problem.rank, 32);
  EXPECT_EQ(c.problem.dtype, mosaic::Dtype::float32);
  EXPECT_EQ(c.algorithm.init, mosaic::InitMode::random);
  EXPECT_EQ(c.output.state_dir, "");
  EXPECT_EQ(c.run.steps, 20);  // the last one wins
  EXPECT_EQ(c.source.synthetic.noise_max, 0.3);
  EXPECT_EQ(c.resolved["input"]["overrides"].size(), 8u);
  EXPECT_EQ(c.resolved["problem"]["d"], 512);
}

TEST(Deck, OverridesCanSupplyRequiredKeys) {
  const auto pts = load_deck_from_string("", kDeck, {"problem.d=8", "problem.rank=1"});
  ASSERT_EQ(pts.size(), 1u);
  EXPECT_EQ(pts[0].config.problem.d, 8);
}

const std::string kSweepDeck = kMinimal + R"(sweep:
  problem.rank: [2, 3]
  problem.d: [16, 32, 64]
)";

std::vector<std::pair<int, int>> rank_d(const std::vector<mosaic::SweepPoint>& pts) {
  std::vector<std::pair<int, int>> v;
  for (const auto& p : pts) v.emplace_back(p.config.problem.rank, p.config.problem.d);
  return v;
}

TEST(Sweep, CartesianProductInDeckOrderLastKeyFastest) {
  const auto pts = load_deck_from_string(kSweepDeck, kDeck);
  ASSERT_EQ(pts.size(), 6u);
  const std::vector<std::pair<int, int>> want = {{2, 16}, {2, 32}, {2, 64}, {3, 16}, {3, 32}, {3, 64}};
  EXPECT_EQ(rank_d(pts), want);
  EXPECT_EQ(pts[4].point, json({{"problem.rank", 3}, {"problem.d", 32}}));
  const json& r = pts[4].config.resolved;
  EXPECT_EQ(r["sweep"]["index"], 4);
  EXPECT_EQ(r["sweep"]["count"], 6);
  EXPECT_EQ(r["sweep"]["point"], pts[4].point);
  EXPECT_EQ(r["problem"]["d"], 32);
  EXPECT_EQ(r["problem"]["rank"], 3);
  EXPECT_EQ(r["source"]["rank"], 3);                   // default follows the swept rank
  EXPECT_EQ(r["algorithm"]["init_samples"], 6);        // 2 * rank
  EXPECT_EQ(r["algorithm"]["init_max_samples"], 384);  // 64 * init_samples
  EXPECT_EQ(pts[4].config.source.synthetic.d, 32);
}

TEST(Sweep, EnumAblationPointsAndConfigs) {
  const auto pts = load_deck_from_string(kMinimal + R"(sweep:
  algorithm.covariance_update: [exact, first_order]
  algorithm.subspace_direction: [precision, oja]
)",
                                         kDeck);
  ASSERT_EQ(pts.size(), 4u);
  using mosaic::CovarianceUpdate;
  using mosaic::SubspaceDirection;
  const std::vector<std::pair<CovarianceUpdate, SubspaceDirection>> want = {
      {CovarianceUpdate::exact, SubspaceDirection::precision},
      {CovarianceUpdate::exact, SubspaceDirection::oja},
      {CovarianceUpdate::first_order, SubspaceDirection::precision},
      {CovarianceUpdate::first_order, SubspaceDirection::oja}};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(pts[i].config.algorithm.covariance_update, want[i].first) << i;
    EXPECT_EQ(pts[i].config.algorithm.subspace_direction, want[i].second) << i;
  }
  EXPECT_EQ(pts[2].point,
            json({{"algorithm.covariance_update", "first_order"}, {"algorithm.subspace_direction", "precision"}}));
}

// A noise-model ablation: both points share the sequential kernel and the
// re-whitening keys (used by the diagonal point only); rewhiten_every sweeps.
TEST(Sweep, NoiseModelAndRewhitenEvery) {
  const auto pts = load_deck_from_string(kMinimal + R"(algorithm: {block_size: 1, rewhiten_min_count: 20}
sweep:
  algorithm.noise: [isotropic, diagonal]
  algorithm.rewhiten_every: [500, 2000]
)",
                                         kDeck);
  ASSERT_EQ(pts.size(), 4u);
  using mosaic::NoiseModel;
  const std::vector<std::pair<NoiseModel, int>> want = {{NoiseModel::isotropic, 500},
                                                        {NoiseModel::isotropic, 2000},
                                                        {NoiseModel::diagonal, 500},
                                                        {NoiseModel::diagonal, 2000}};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(pts[i].config.algorithm.noise, want[i].first) << i;
    EXPECT_EQ(pts[i].config.algorithm.rewhiten_every, want[i].second) << i;
    EXPECT_EQ(pts[i].config.algorithm.rewhiten_min_count, 20) << i;
    EXPECT_EQ(pts[i].config.algorithm.block_size, 1) << i;
  }
  EXPECT_EQ(pts[3].point, json({{"algorithm.noise", "diagonal"}, {"algorithm.rewhiten_every", 2000}}));
  EXPECT_EQ(pts[3].config.resolved["algorithm"]["noise"], "diagonal");
}

TEST(Sweep, OverrideReplacesASweptListInPlace) {
  const auto pts = load_deck_from_string(kSweepDeck, kDeck, {"sweep.problem.rank=[4, 5, 6]"});
  ASSERT_EQ(pts.size(), 9u);
  EXPECT_EQ(pts[0].config.problem.rank, 4);
  EXPECT_EQ(pts[1].config.problem.d, 32);  // problem.d is still the fastest
  EXPECT_EQ(pts[8].point, json({{"problem.rank", 6}, {"problem.d", 64}}));
}

TEST(Sweep, OverrideAddsASweepKeyLast) {
  const auto pts = load_deck_from_string(kSweepDeck, kDeck, {"sweep.run.seed=[7, 8]"});
  ASSERT_EQ(pts.size(), 12u);
  EXPECT_EQ(pts[0].config.run.seed, 7u);
  EXPECT_EQ(pts[1].config.run.seed, 8u);  // the added key varies fastest
  EXPECT_EQ(pts[1].config.problem.d, 16);
  EXPECT_EQ(pts[2].config.problem.d, 32);
  EXPECT_EQ(pts[1].config.source.synthetic.seed, 8u);
}

TEST(Sweep, OverrideAddsASweepToADeckWithout) {
  const auto pts = load_deck_from_string(kMinimal, kDeck, {"sweep.problem.d=[32, 64]"});
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[1].config.problem.d, 64);
  EXPECT_EQ(pts[1].point, json({{"problem.d", 64}}));
}

TEST(Sweep, OverridePinsASweptKey) {
  const auto pts = load_deck_from_string(kSweepDeck, kDeck, {"problem.d=128"});
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[0].config.problem.d, 128);
  EXPECT_EQ(pts[1].config.problem.d, 128);
  EXPECT_EQ(pts[1].point, json({{"problem.rank", 3}}));
}

TEST(Sweep, ListValuedKey) {
  const auto pts =
      load_deck_from_string(kMinimal + "sweep:\n  source.noise_range: [[0.05, 0.1], [0.01, 0.5]]\n", kDeck);
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[1].config.source.synthetic.noise_min, 0.01);
  EXPECT_EQ(pts[1].point["source.noise_range"], json({0.01, 0.5}));
}

TEST(Ranks, StrongModeNeedsAStreamPerRank) {
  const auto pts = load_deck_from_string(kMinimal + "streams: {mode: strong, total: 4}\n", kDeck);
  ASSERT_EQ(pts.size(), 1u);
  EXPECT_NO_THROW(mosaic::validate_against_ranks(pts[0].config, 4, kDeck));
  EXPECT_NO_THROW(mosaic::validate_against_ranks(pts[0].config, 1, kDeck));
  try {
    mosaic::validate_against_ranks(pts[0].config, 8, kDeck);
    FAIL() << "no error";
  } catch (const DeckError& e) {
    const std::string m = e.what();
    for (const char* s : {"deck.yaml", "streams.total", "expected an integer >= 8", "found 4"})
      EXPECT_NE(m.find(s), std::string::npos) << s << " in: " << m;
  }
  const auto weak = load_deck_from_string(kMinimal, kDeck);
  EXPECT_NO_THROW(mosaic::validate_against_ranks(weak[0].config, 64, kDeck));
  EXPECT_THROW(mosaic::validate_against_ranks(weak[0].config, 0, kDeck), DeckError);
}

// Time segments spread one stream over ranks (SegmentLayout): every rank
// needs a segment, not a stream.
TEST(Ranks, TimeSegmentsNeedASegmentPerRank) {
  const auto pts = load_deck_from_string(kMinimal + "streams: {mode: strong, total: 1}\n", kDeck,
                                         {"algorithm.time_segments=4", "run.diagnostics_every=0"});
  ASSERT_EQ(pts.size(), 1u);
  EXPECT_NO_THROW(mosaic::validate_against_ranks(pts[0].config, 4, kDeck));
  try {
    mosaic::validate_against_ranks(pts[0].config, 5, kDeck);
    FAIL() << "no error";
  } catch (const DeckError& e) {
    const std::string m = e.what();
    for (const char* s : {"deck.yaml", "streams.total", "every MPI rank needs at least one time segment",
                          "expected streams.total x algorithm.time_segments >= 5", "found 1 x 4"})
      EXPECT_NE(m.find(s), std::string::npos) << s << " in: " << m;
  }
}

TEST(Ranks, MessageNamesTheSweepPoint) {
  const auto pts =
      load_deck_from_string(kMinimal + "streams: {mode: strong}\nsweep:\n  streams.total: [8, 2]\n", kDeck);
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_NO_THROW(mosaic::validate_against_ranks(pts[0].config, 4, kDeck));
  try {
    mosaic::validate_against_ranks(pts[1].config, 4, kDeck);
    FAIL() << "no error";
  } catch (const DeckError& e) {
    EXPECT_NE(std::string(e.what()).find("sweep point 2 of 2 (streams.total=2)"), std::string::npos) << e.what();
  }
}

TEST(Ranks, NpyFilesAreTheStreams) {
  const std::string deck = kMinimal + "source: {type: npy, paths: [a.npy, b.npy, c.npy]}\n";
  // Strong (the default for npy): 3 files, at most 3 ranks.
  const auto strong = load_deck_from_string(deck, kDeck);
  EXPECT_NO_THROW(mosaic::validate_against_ranks(strong[0].config, 3, kDeck));
  try {
    mosaic::validate_against_ranks(strong[0].config, 4, kDeck);
    FAIL() << "no error";
  } catch (const DeckError& e) {
    const std::string m = e.what();
    for (const char* s : {"streams.total", "expected an integer >= 4", "found 3", "number of files in source.paths"})
      EXPECT_NE(m.find(s), std::string::npos) << s << " in: " << m;
  }
  // Weak: per_rank x ranks must be the file count.
  const auto weak = load_deck_from_string(deck, kDeck, {"streams.mode=weak", "streams.per_rank=1"});
  EXPECT_NO_THROW(mosaic::validate_against_ranks(weak[0].config, 3, kDeck));
  try {
    mosaic::validate_against_ranks(weak[0].config, 2, kDeck);
    FAIL() << "no error";
  } catch (const DeckError& e) {
    const std::string m = e.what();
    for (const char* s :
         {"streams.per_rank", "the number of files in source.paths (3)", "found 1 x 2 = 2", "streams.mode: strong"})
      EXPECT_NE(m.find(s), std::string::npos) << s << " in: " << m;
  }
}

// ---- npy sources

struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    std::string t = (std::filesystem::temp_directory_path() / "mosaic_test_config_XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  void touch(const std::string& name) const {
    std::filesystem::create_directories((path / name).parent_path());
    std::ofstream(path / name) << "x";
  }
};

TEST(Npy, DefaultsStrongModeFileCountStepsAllAndIgnoresSyntheticKeys) {
  // source.rank 9 > d/2 and lambda_min > lambda_max would be errors for the
  // synthetic source; with npy they are ignored.
  const auto pts = load_deck_from_string(kMinimal + R"(source:
  type: npy
  paths: [/data/a.npy, /data/b.npy]
  chunk_rows: 100
  rank: 9
  lambda_min: 5
run: {steps: all, warmup_steps: 3}
)",
                                         kDeck);
  ASSERT_EQ(pts.size(), 1u);
  const mosaic::RunConfig& c = pts[0].config;
  EXPECT_EQ(c.source.type, "npy");
  EXPECT_EQ(c.source.paths, (std::vector<std::string>{"/data/a.npy", "/data/b.npy"}));
  EXPECT_EQ(c.source.chunk_rows, 100);
  EXPECT_EQ(c.streams.mode, mosaic::StreamMode::strong);
  EXPECT_EQ(c.streams.total, 2);
  EXPECT_TRUE(c.run.steps_all);
  EXPECT_EQ(c.run.steps, 0);
  EXPECT_EQ(c.run.warmup_steps, 3);
  const json& r = c.resolved;
  EXPECT_EQ(r["streams"]["mode"], "strong");
  EXPECT_EQ(r["streams"]["total"], 2);
  EXPECT_EQ(r["run"]["steps"], "all");
  EXPECT_EQ(r["source"]["paths"], json({"/data/a.npy", "/data/b.npy"}));
  // An explicit weak mode stays weak; an explicit matching total is fine.
  EXPECT_EQ(load_deck_from_string(kMinimal + "source: {type: npy, paths: [a.npy]}\n", kDeck, {"streams.mode=weak"})[0]
                .config.streams.mode,
            mosaic::StreamMode::weak);
  EXPECT_NO_THROW(load_deck_from_string(kMinimal + "source: {type: npy, paths: [a.npy]}\n", kDeck,
                                        {"streams.mode=strong", "streams.total=1"}));
  // npy keys are ignored by the synthetic source.
  const auto syn = load_deck_from_string(kMinimal + "source: {paths: [a.npy], chunk_rows: 5}\n", kDeck);
  EXPECT_EQ(syn[0].config.source.type, "synthetic");
  EXPECT_TRUE(syn[0].config.source.paths.empty());
  EXPECT_EQ(syn[0].config.streams.mode, mosaic::StreamMode::weak);
}

TEST(Npy, RelativePathsFollowTheDeckFileAndOverridesTheCurrentDirectory) {
  ScratchDir dir;
  const auto deck = dir.path / "decks" / "d.yaml";
  std::filesystem::create_directories(deck.parent_path());
  std::ofstream(deck) << kMinimal << "source: {type: npy, paths: [a.npy, ../data/b.npy, /abs/c.npy]}\n";
  const auto pts = load_deck(deck.string());
  const auto& paths = pts[0].config.source.paths;
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(paths[0], (dir.path / "decks" / "a.npy").string());
  EXPECT_EQ(paths[1], (dir.path / "data" / "b.npy").string());
  EXPECT_EQ(paths[2], "/abs/c.npy");
  const auto over = load_deck(deck.string(), {"source.paths=[x.npy, sub/y.npy]"});
  EXPECT_EQ(over[0].config.source.paths, (std::vector<std::string>{"x.npy", "sub/y.npy"}));
}

TEST(Npy, OneStringIsAGlobPatternExpandedSorted) {
  ScratchDir dir;
  for (const char* f : {"data/s2.npy", "data/s10.npy", "data/s1.npy", "data/other.txt"}) dir.touch(f);
  const auto deck = dir.path / "d.yaml";
  std::ofstream(deck) << kMinimal << "source:\n  type: npy\n  paths: data/s*.npy\n";
  const auto pts = load_deck(deck.string());
  const auto& c = pts[0].config;
  const std::string base = (dir.path / "data").string();
  EXPECT_EQ(c.source.paths, (std::vector<std::string>{base + "/s1.npy", base + "/s10.npy", base + "/s2.npy"}));
  EXPECT_EQ(c.streams.total, 3);
  EXPECT_EQ(c.resolved["source"]["paths"].size(), 3u);
  // Without a wildcard, one string is one path (checked when the run starts).
  const auto one = load_deck(deck.string(), {"source.paths=missing.npy"});
  EXPECT_EQ(one[0].config.source.paths, std::vector<std::string>{"missing.npy"});
  // A pattern from --set is relative to the current directory.
  try {
    load_deck(deck.string(), {"source.paths=data/s*.npy"});
    FAIL() << "no error (is there a data/ directory in the test's working directory?)";
  } catch (const DeckError& e) {
    EXPECT_NE(std::string(e.what()).find("--set source.paths=data/s*.npy: source.paths: the pattern 'data/s*.npy' "
                                         "matches no files"),
              std::string::npos)
        << e.what();
  }
}

// ---- the decks shipped in inputs/

std::filesystem::path source_dir() { return MOSAIC_SOURCE_DIR; }

// inputs/real/ holds the decks of the real datasets (docs/REAL_DATA.md).
TEST(Inputs, EveryDeckLoads) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::recursive_directory_iterator(source_dir() / "inputs")) {
    if (e.path().extension() != ".yaml") continue;
    names.push_back(std::filesystem::relative(e.path(), source_dir() / "inputs").generic_string());
    EXPECT_NO_THROW({
      try {
        const auto pts = load_deck(e.path().string());
        EXPECT_GE(pts.size(), 1u);
      } catch (const DeckError& err) {
        ADD_FAILURE() << err.what();
        throw;
      }
    }) << e.path();
  }
  for (const char* want :
       {"smoke_cpu.yaml",     "single_gpu.yaml",       "rank_sweep.yaml", "weak_8gpu.yaml",    "strong_8gpu.yaml",
        "sustained.yaml",     "accuracy_drift.yaml",   "ablation.yaml",   "npy_stream.yaml",   "seed_d_ladder.yaml",
        "seed_r_ladder.yaml", "saturation.yaml",       "long_run.yaml",   "accuracy_map.yaml", "real/wind.yaml",
        "real/dj30.yaml",     "real/pm10.yaml",        "real/eop.yaml",   "real/vtest.yaml",   "real/box.yaml",
        "real/music.yaml",    "real/music_tracks.yaml"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
}

// The headline decks track their truth (eta_U 0.001, docs/ACCURACY.md) and
// are judged on it; the seed's like-for-like ladders and the saturation sweep
// keep settings that do not track there, and say so (throughput_only).
TEST(Inputs, HeadlineDecksCheckAccuracy) {
  for (const char* name : {"single_gpu.yaml", "rank_sweep.yaml", "weak_8gpu.yaml", "strong_8gpu.yaml", "sustained.yaml",
                           "long_run.yaml", "smoke_cpu.yaml", "accuracy_drift.yaml", "ablation.yaml"})
    for (const auto& p : load_deck((source_dir() / "inputs" / name).string()))
      EXPECT_TRUE(p.config.run.check_accuracy) << name;
  for (const char* name :
       {"single_gpu.yaml", "rank_sweep.yaml", "weak_8gpu.yaml", "strong_8gpu.yaml", "sustained.yaml"})
    for (const auto& p : load_deck((source_dir() / "inputs" / name).string()))
      EXPECT_EQ(p.config.algorithm.eta_U, 0.001) << name;
  const mosaic::MosaicParams defaults;
  for (const char* name : {"seed_d_ladder.yaml", "seed_r_ladder.yaml", "saturation.yaml"})
    for (const auto& p : load_deck((source_dir() / "inputs" / name).string()))
      EXPECT_FALSE(p.config.run.check_accuracy) << name;
  for (const char* name : {"seed_d_ladder.yaml", "seed_r_ladder.yaml", "long_run.yaml"})
    for (const auto& p : load_deck((source_dir() / "inputs" / name).string()))
      EXPECT_EQ(p.config.algorithm.eta_U, defaults.eta_U) << name;
}

std::vector<mosaic::SweepPoint> input(const char* name) { return load_deck((source_dir() / "inputs" / name).string()); }

TEST(Inputs, DecksSayWhatTheyPromise) {
  const auto smoke = input("smoke_cpu.yaml");
  ASSERT_EQ(smoke.size(), 1u);
  EXPECT_EQ(smoke[0].config.problem.d, 256);
  EXPECT_EQ(smoke[0].config.output.result, "mosaic_result_smoke.json");

  const auto single = input("single_gpu.yaml");
  ASSERT_EQ(single.size(), 4u);
  EXPECT_EQ(single[3].config.problem.d, 8192);
  EXPECT_EQ(single[0].config.streams.per_rank, 8);

  EXPECT_EQ(input("rank_sweep.yaml").size(), 4u);
  const auto d_ladder = input("seed_d_ladder.yaml");
  ASSERT_EQ(d_ladder.size(), 4u);
  EXPECT_EQ(d_ladder[0].config.problem.d, 2048);
  EXPECT_EQ(d_ladder[3].config.problem.d, 16384);
  const auto r_ladder = input("seed_r_ladder.yaml");
  ASSERT_EQ(r_ladder.size(), 4u);
  EXPECT_EQ(r_ladder[3].config.problem.rank, 256);
  const auto saturation = input("saturation.yaml");
  ASSERT_EQ(saturation.size(), 18u);
  EXPECT_EQ(saturation[8].config.streams.per_rank, 256);
  EXPECT_EQ(saturation[17].config.problem.d, 8192);
  const auto long_run = input("long_run.yaml")[0].config;
  EXPECT_EQ(long_run.run.steps * long_run.streams.total, 10000000);

  const auto strong = input("strong_8gpu.yaml");
  ASSERT_EQ(strong.size(), 1u);
  EXPECT_EQ(strong[0].config.streams.mode, mosaic::StreamMode::strong);
  EXPECT_EQ(strong[0].config.streams.total, 128);
  EXPECT_NO_THROW(mosaic::validate_against_ranks(strong[0].config, 8, "strong_8gpu.yaml"));

  const auto sustained = input("sustained.yaml")[0].config;
  EXPECT_EQ(sustained.streams.mode, mosaic::StreamMode::strong);
  EXPECT_EQ(sustained.run.steps * sustained.streams.total, 800000);

  const auto ablation = input("ablation.yaml");
  ASSERT_EQ(ablation.size(), 4u);
  EXPECT_EQ(ablation[0].config.source.synthetic.drift, 1e-4);

  const auto npy = input("npy_stream.yaml")[0].config;
  EXPECT_EQ(npy.source.type, "npy");
  EXPECT_EQ(npy.problem.d, 64);
  EXPECT_EQ(npy.source.paths.size(), 4u);
  EXPECT_EQ(npy.streams.total, 4);
  EXPECT_TRUE(npy.run.steps_all);
  EXPECT_FALSE(npy.output.state_dir.empty());
}

// docs/INPUT_DECK.md documents every key.
TEST(Docs, InputDeckDocumentsEveryKey) {
  std::ifstream f(source_dir() / "docs" / "INPUT_DECK.md");
  ASSERT_TRUE(f) << "docs/INPUT_DECK.md missing";
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string doc = ss.str();
  for (const auto& p : mosaic::deck_key_paths())
    EXPECT_NE(doc.find("`" + p + "`"), std::string::npos) << p << " is not documented";
}

}  // namespace
