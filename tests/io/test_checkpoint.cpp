// Checkpoints (src/mosaic/io/checkpoint.hpp, docs/CHECKPOINT.md): a round trip
// restores every per-stream view bit for bit, also for a subset of the
// streams (redistribution); every corrupted, partial or mismatched
// checkpoint is refused with a message naming the file; an incomplete newest
// checkpoint falls back to the previous complete one; pruning keeps the
// newest complete ones; an npy run's input files that changed since the
// checkpoint are refused, touched ones accepted with a note. Runs on
// MPI_COMM_SELF (own main: MPI + Kokkos).
#include <fcntl.h>
#include <mpi.h>
#include <sys/stat.h>

#include <gtest/gtest.h>
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "mosaic/app/run_checkpoint.hpp"
#include "mosaic/config/config.hpp"
#include "mosaic/engine/batched_engine.hpp"
#include "mosaic/io/checkpoint.hpp"
#include "mosaic/sources/synthetic_source.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Exec = Kokkos::DefaultExecutionSpace;
using Batch = mosaic::StreamBatch<double, Exec>;

const std::string kDeck = R"(problem: {d: 8, rank: 2, dtype: double}
streams: {mode: strong, total: 3}
source: {type: synthetic, rank: 2, drift: 0.01}
run: {steps: 50, seed: 5}
)";

mosaic::RunConfig config(const std::vector<std::string>& overrides = {}) {
  return mosaic::load_deck_from_string(kDeck, "deck.yaml", overrides)[0].config;
}

// A batch of the given streams advanced `steps` steps from a random init;
// `diagonal`: with noise: diagonal re-whitened every 10 steps (section 8's
// state live), else the maintained solve (Rfac / factor_age / refactors live).
Batch advanced(const std::vector<std::uint64_t>& ids, int steps, bool diagonal = false) {
  const mosaic::RunConfig c = config();
  const int B = int(ids.size());
  mosaic::MosaicParams p = c.algorithm;
  if (diagonal) {
    p.noise = mosaic::NoiseModel::diagonal;
    p.block_size = 1;
    p.rewhiten_every = 10;
    p.rewhiten_min_count = 3;
  } else {
    p.precision_solve = mosaic::PrecisionSolve::maintained;
    p.refactor_every = 7;
  }
  Batch sb(B, c.problem.d, c.problem.rank, ids, p.noise);
  mosaic::MosaicEngine<double, Exec> eng(p, B, c.problem.d, c.problem.rank);
  eng.init_random(sb, 3);
  mosaic::SyntheticDriftSource<double, Exec> src(c.source.synthetic, ids);
  Kokkos::View<double**, Kokkos::LayoutRight, Exec::memory_space> X("X", B, c.problem.d);
  for (int t = 0; t < steps; ++t) {
    src.generate(t, X);
    eng.step(sb, X);
  }
  return sb;
}

// All views of a batch as host bytes, per field.
std::vector<std::vector<unsigned char>> snapshot(const Batch& sb) {
  std::vector<std::vector<unsigned char>> out;
  mosaic::ckpt::for_each_state_view(
      sb, [&](const char* name, const auto& v) { out.push_back(mosaic::ckpt::extract_view(name, v).bytes); });
  return out;
}

class Checkpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("mosaic_test_ckpt_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
    fs::create_directories(root);
  }
  void TearDown() override { fs::remove_all(root); }

  // Writes checkpoint number `n` of `sb` (timed steps done: `done`).
  std::string write(const Batch& sb, std::int64_t n, std::int64_t done = 20, int keep = 5,
                    const mosaic::RunConfig& c = config(), const json& inputs = json::array()) {
    mosaic::ckpt::WriteRequest req;
    req.root = root.string();
    req.keep = keep;
    req.number = n;
    req.manifest_extra = {{"deck_path", "deck.yaml"},
                          {"resolved_deck", c.resolved},
                          {"position", {{"sample_index", n}, {"warmup_done", 0}, {"timed_done", done}}},
                          {"segments", json::array()},
                          {"diagnostics_series", json::array()}};
    std::vector<unsigned char> frozen(std::size_t(sb.batch), 0);
    frozen[0] = 1;
    const json errors =
        json::array({{{"stream_id", sb.stream_ids[0]}, {"path", "x.npy"}, {"row", 3}, {"message", "m"}}});
    return mosaic::ckpt::write_checkpoint(req, sb, frozen, errors, MPI_COMM_SELF, inputs);
  }

  // The error of restarting `c` from root ("" = accepted).
  std::string restart_error(const mosaic::RunConfig& c = config(), std::int64_t total = 3,
                            mosaic::ckpt::RestartPlan* plan_out = nullptr) {
    mosaic::ckpt::RestartPlan plan;
    const std::string e = mosaic::ckpt::prepare_restart(c, root.string(), total, MPI_COMM_SELF, plan);
    if (plan_out) *plan_out = plan;
    return e;
  }

  fs::path root;
};

void flip_byte(const fs::path& p, std::size_t from_end) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(0, std::ios::end);
  const std::streamoff pos = f.tellg() - std::streamoff(from_end);
  f.seekg(pos);
  char c = 0;
  f.read(&c, 1);
  c = char(c ^ 0x40);
  f.seekp(pos);
  f.write(&c, 1);
}

#define EXPECT_HAS(msg, part) \
  EXPECT_NE((msg).find(part), std::string::npos) << "expected '" << (part) << "' in: " << (msg)

TEST_F(Checkpoint, RoundTripIsBitwise) {
  const Batch sb = advanced({0, 1, 2}, 40);
  const std::string dir = write(sb, 123);
  EXPECT_EQ(fs::path(dir).filename(), "ckpt_000000000123");
  EXPECT_TRUE(fs::exists(fs::path(dir) / "MANIFEST.json"));
  EXPECT_TRUE(fs::exists(fs::path(dir) / "rank_0.bin"));
  mosaic::ckpt::RestartPlan plan;
  ASSERT_EQ(restart_error(config(), 3, &plan), "");
  EXPECT_EQ(plan.dir, dir);
  EXPECT_EQ(plan.manifest["position"]["timed_done"], 20);
  EXPECT_EQ(plan.manifest["nranks"], 1);
  Batch back(3, 8, 2, {0, 1, 2});
  const auto loaded = mosaic::ckpt::load_streams(plan, back);
  EXPECT_EQ(snapshot(back), snapshot(sb));
  EXPECT_EQ(loaded.frozen, (std::vector<unsigned char>{1, 0, 0}));
  ASSERT_EQ(loaded.data_errors.size(), 1u);
  EXPECT_EQ(loaded.data_errors[0]["row"], 3);
}

// Section 8's state (the noise profile, leverages, accumulators, the
// re-whitening count) comes back bit for bit; a batch of the other noise
// model is refused by name.
TEST_F(Checkpoint, DiagonalNoiseStateRoundTripsAndIsolatedBatchIsRefused) {
  const Batch sb = advanced({0, 1, 2}, 45, true);
  const auto st = sb.to_host_masked(1);
  ASSERT_EQ(st.rewhitenings, 4);
  ASSERT_EQ(st.psi.size(), 8u);
  EXPECT_NE(*std::max_element(st.psi.begin(), st.psi.end()), *std::min_element(st.psi.begin(), st.psi.end()));
  write(sb, 45);
  mosaic::ckpt::RestartPlan plan;
  ASSERT_EQ(restart_error(config(), 3, &plan), "");
  Batch back(3, 8, 2, {0, 1, 2}, mosaic::NoiseModel::diagonal);
  mosaic::ckpt::load_streams(plan, back);
  EXPECT_EQ(snapshot(back), snapshot(sb));
  Batch isotropic(3, 8, 2, {0, 1, 2});
  try {
    mosaic::ckpt::load_streams(plan, isotropic);
    ADD_FAILURE() << "a diagonal-noise checkpoint restored into an isotropic batch";
  } catch (const mosaic::CheckpointError& e) {
    EXPECT_HAS(std::string(e.what()), "checkpoint field 'psi'");
    EXPECT_HAS(std::string(e.what()), "algorithm.noise");
  }
}

// A rank that owns another subset of the streams (strong mode on another
// number of ranks) gets exactly those streams' states.
TEST_F(Checkpoint, SubsetOfStreamsIsRedistributed) {
  const Batch sb = advanced({0, 1, 2}, 30);
  write(sb, 77);
  mosaic::ckpt::RestartPlan plan;
  ASSERT_EQ(restart_error(config(), 3, &plan), "");
  Batch part(2, 8, 2, {2, 0});
  const auto loaded = mosaic::ckpt::load_streams(plan, part);
  for (int b = 0; b < 2; ++b) {
    const auto want = sb.to_host(b == 0 ? 2 : 0), got = part.to_host(b);
    EXPECT_EQ(want.mu, got.mu);
    EXPECT_EQ(want.U, got.U);
    EXPECT_EQ(want.S, got.S);
    EXPECT_EQ(want.s2, got.s2);
    EXPECT_EQ(want.steps, got.steps);
  }
  EXPECT_EQ(loaded.frozen, (std::vector<unsigned char>{0, 1}));
}

TEST_F(Checkpoint, TruncatedRankFileIsRefused) {
  const std::string dir = write(advanced({0, 1, 2}, 5), 10);
  const fs::path f = fs::path(dir) / "rank_0.bin";
  fs::resize_file(f, fs::file_size(f) / 2);
  const std::string e = restart_error();
  EXPECT_HAS(e, f.string());
  EXPECT_HAS(e, "truncated");
}

TEST_F(Checkpoint, FlippedByteIsAChecksumMismatch) {
  const std::string dir = write(advanced({0, 1, 2}, 5), 10);
  const fs::path f = fs::path(dir) / "rank_0.bin";
  flip_byte(f, 17);
  const std::string e = restart_error();
  EXPECT_HAS(e, f.string() + ": checksum mismatch");
  EXPECT_HAS(e, "corrupted");
}

TEST_F(Checkpoint, MissingRankFileIsRefused) {
  const std::string dir = write(advanced({0, 1, 2}, 5), 10);
  fs::remove(fs::path(dir) / "rank_0.bin");
  const std::string e = restart_error();
  EXPECT_HAS(e, (fs::path(dir) / "rank_0.bin").string() + ": missing");
}

TEST_F(Checkpoint, GarbledManifestIsRefused) {
  const std::string dir = write(advanced({0, 1, 2}, 5), 10);
  const fs::path m = fs::path(dir) / "MANIFEST.json";
  { std::ofstream(m, std::ios::trunc) << "{\"format\": \"mosaic-checkpoint\", \"files\": ["; }
  std::string e = restart_error();
  EXPECT_HAS(e, m.string() + ": garbled manifest");
  // Valid JSON whose content was altered: its own checksum catches it.
  const std::string dir2 = write(advanced({0, 1, 2}, 5), 20);
  const fs::path m2 = fs::path(dir2) / "MANIFEST.json";
  std::ifstream in(m2);
  json j = json::parse(in);
  j["position"]["timed_done"] = 19;
  std::ofstream(m2, std::ios::trunc) << j.dump(1);
  e = restart_error();
  EXPECT_HAS(e, m2.string() + ": checksum mismatch: the manifest was altered or corrupted");
}

TEST_F(Checkpoint, MissingManifestMeansIncomplete) {
  const std::string dir = write(advanced({0, 1, 2}, 5), 10);
  fs::remove(fs::path(dir) / "MANIFEST.json");
  const std::string e = restart_error();
  EXPECT_HAS(e, root.string() + ": no complete checkpoint");
  // Pointing at the incomplete checkpoint itself names its manifest.
  mosaic::ckpt::RestartPlan plan;
  const std::string e2 = mosaic::ckpt::prepare_restart(config(), dir, 3, MPI_COMM_SELF, plan);
  EXPECT_HAS(e2, "MANIFEST.json");
}

TEST_F(Checkpoint, NewestIncompleteFallsBackToPreviousComplete) {
  const Batch a = advanced({0, 1, 2}, 5), b = advanced({0, 1, 2}, 9);
  const std::string good = write(a, 100);
  const std::string newer = write(b, 200);
  fs::remove(fs::path(newer) / "MANIFEST.json");  // as if the run died before the manifest
  mosaic::ckpt::RestartPlan plan;
  ASSERT_EQ(restart_error(config(), 3, &plan), "");
  EXPECT_EQ(plan.dir, good);
  ASSERT_FALSE(plan.notes.empty());
  EXPECT_HAS(plan.notes[0], "skipping incomplete checkpoint " + newer);
  Batch back(3, 8, 2, {0, 1, 2});
  mosaic::ckpt::load_streams(plan, back);
  EXPECT_EQ(snapshot(back), snapshot(a));
}

TEST_F(Checkpoint, MismatchedDeckIsRefused) {
  write(advanced({0, 1, 2}, 5), 10);
  const std::string m = "MANIFEST.json: the checkpoint does not match this run: ";
  struct Case {
    std::vector<std::string> set;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {{"problem.d=10"}, "problem.d: the checkpoint has 8, this run has 10"},
      {{"problem.rank=3"}, "problem.rank: the checkpoint has 2, this run has 3"},
      {{"problem.dtype=float"}, "problem.dtype: the checkpoint has double, this run has float"},
      {{"algorithm.eta_U=0.01"}, "algorithm.eta_U: the checkpoint has 0.005, this run has 0.01"},
      {{"algorithm.covariance_update=first_order"}, "algorithm.covariance_update: the checkpoint has exact"},
      {{"run.seed=6"}, "run.seed: the checkpoint has 5, this run has 6"},
      {{"source.drift=0.02"}, "source.drift: the checkpoint has 0.01, this run has 0.02"},
      {{"run.steps=19"}, "run.steps: 19, fewer than the 20 timed steps the checkpoint has already done"},
  };
  for (const auto& c : cases) {
    const std::string e = restart_error(config(c.set));
    EXPECT_HAS(e, m);
    EXPECT_HAS(e, c.expect);
  }
  // What may change: run.steps (not below the steps done), output.*, progress.
  EXPECT_EQ(restart_error(config({"run.steps=500", "output.result=x.json", "run.progress_every_s=1"})), "");
}

// A checkpoint written before algorithm.init_max_samples and section 9's
// keys existed (its resolved deck lacks them) resumes a run at the values it
// implies (any limit: its streams all started on init_samples; a
// sequential run), and not one that would change what it ran.
TEST_F(Checkpoint, KeysAddedSinceTheCheckpointAreTheValuesItImplies) {
  mosaic::RunConfig old = config();
  for (const char* key : {"init_max_samples", "time_segments", "segment_warmup", "segment_warmup_init",
                          "segment_tolerance", "segment_max_passes", "segment_gauge"})
    old.resolved["algorithm"].erase(key);
  write(advanced({0, 1, 2}, 5), 10, 20, 5, old);
  EXPECT_EQ(restart_error(config()), "");
  EXPECT_EQ(restart_error(config({"algorithm.init_max_samples=100"})), "");
  EXPECT_HAS(restart_error(config({"algorithm.segment_gauge=free"})),
             "algorithm.segment_gauge: the checkpoint has carry (written before the key existed), this run has free");
  // Written with the key, it is compared as any other.
  write(advanced({0, 1, 2}, 5), 11);
  EXPECT_HAS(restart_error(config({"algorithm.init_max_samples=100"})), "algorithm.init_max_samples: the checkpoint");
}

TEST_F(Checkpoint, MismatchedStreamSetIsRefused) {
  write(advanced({0, 1, 2}, 5), 10);
  std::string e = restart_error(config({"streams.total=4"}), 4);
  EXPECT_HAS(e, "MANIFEST.json: the checkpoint does not match this run: ");
  EXPECT_HAS(e, "streams.total: the checkpoint has 3, this run has 4");
  EXPECT_HAS(e, "the stream set differs: the checkpoint holds streams 0..2");
  e = restart_error(config({"streams.mode=weak", "streams.per_rank=3"}), 3);
  EXPECT_HAS(e, "streams.mode: the checkpoint has strong, this run has weak");
}

TEST_F(Checkpoint, RankFileOfAnotherDtypeIsRefused) {
  // A float checkpoint presented to a double run: the deck check names the
  // manifest; a rank file swapped in behind the manifest's back is caught by
  // its checksum.
  const std::string other = write(advanced({0, 1, 2}, 5), 3);  // a double one, older
  const mosaic::RunConfig cf = config({"problem.dtype=float"});
  mosaic::StreamBatch<float, Exec> sf(3, 8, 2, {0, 1, 2});
  mosaic::ckpt::WriteRequest req;
  req.root = root.string();
  req.number = 5;
  req.manifest_extra = {{"resolved_deck", cf.resolved},
                        {"position", {{"sample_index", 5}, {"warmup_done", 0}, {"timed_done", 5}}},
                        {"segments", json::array()},
                        {"diagnostics_series", json::array()}};
  const std::string dir = mosaic::ckpt::write_checkpoint(req, sf, {}, json::array(), MPI_COMM_SELF);
  EXPECT_HAS(restart_error(), "problem.dtype: the checkpoint has float, this run has double");
  fs::copy_file(fs::path(other) / "rank_0.bin", fs::path(dir) / "rank_0.bin", fs::copy_options::overwrite_existing);
  mosaic::ckpt::RestartPlan plan;
  const std::string e = mosaic::ckpt::prepare_restart(cf, dir, 3, MPI_COMM_SELF, plan);
  EXPECT_HAS(e, (fs::path(dir) / "rank_0.bin").string());
}

// The input file of an npy run, 100 rows of d = 8, last modified an hour
// ago; the checkpoint at sample 40 records its fingerprint.
class CheckpointNpyInput : public Checkpoint {
 protected:
  void SetUp() override {
    Checkpoint::SetUp();
    data = (root / "s0.npy").string();
    for (std::size_t k = 0; k < values.size(); ++k) values[k] = std::sin(double(k));
    save(values);
    npy = mosaic::load_deck_from_string(
              "problem: {d: 8, rank: 2, dtype: double}\nstreams: {mode: strong, total: 1}\n"
              "source: {type: npy, paths: [" +
                  data + "]}\nrun: {steps: 50, seed: 5}\n",
              "deck.yaml")[0]
              .config;
    const mosaic::SourceInput in{0, mosaic::NpyStreamReader(data, 8).fingerprint(40)};
    write(advanced({0}, 5), 40, 20, 5, npy, json::array({mosaic::ckpt::input_record(in)}));
  }
  void save(const std::vector<double>& v) {
    mosaic::write_npy(data, {100, 8}, v.data());
    set_mtime(-3600);
  }
  void set_mtime(long seconds_from_now) {
    struct timespec t[2];
    ::clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec += seconds_from_now;
    t[1] = t[0];
    ASSERT_EQ(::utimensat(AT_FDCWD, data.c_str(), t, 0), 0);
  }
  std::string restart(std::vector<std::string>* notes = nullptr) {
    mosaic::ckpt::RestartPlan plan;
    const std::string e = restart_error(npy, 1, &plan);
    if (notes) *notes = plan.notes;
    return e;
  }

  std::string data;
  std::vector<double> values = std::vector<double>(800);
  mosaic::RunConfig npy;
};

// (Checked: without check_input the changed data resume silently.)
TEST_F(CheckpointNpyInput, ChangedRowsBeforeThePositionAreRefused) {
  std::vector<std::string> notes;
  EXPECT_EQ(restart(&notes), "");
  EXPECT_TRUE(notes.empty());
  auto other = values;
  other[39 * 8 + 7] = 2.0;  // row 39, the last one consumed
  save(other);
  const std::string e = restart();
  EXPECT_HAS(e, data + ": the input file of stream 0 is not the data checkpoint ");
  EXPECT_HAS(e, "the content of rows [0, 40) (fnv1a64 of all of them, 2560 bytes): the checkpoint recorded ");
  EXPECT_HAS(e, "restore the data the run started with");
  other = values;
  other[40 * 8] = 2.0;  // row 40: not consumed yet
  save(other);
  EXPECT_EQ(restart(), "");
}

TEST_F(CheckpointNpyInput, OtherSizeOrHeaderIsRefused) {
  std::vector<double> longer(808, 0.0);
  std::copy(values.begin(), values.end(), longer.begin());
  mosaic::write_npy(data, {101, 8}, longer.data());
  std::string e = restart();
  EXPECT_HAS(e, data + ": the input file of stream 0 is not the data ");
  EXPECT_HAS(e, "size: the checkpoint recorded 6528 bytes, the file has 6592");
  {  // the same size and data bytes, in Fortran order
    std::ofstream out(data, std::ios::binary | std::ios::trunc);
    out << mosaic::npy_preamble("<f8", {100, 8}, true);
    out.write(reinterpret_cast<const char*>(values.data()), std::streamsize(values.size() * sizeof(double)));
  }
  e = restart();
  EXPECT_HAS(e, data + ": the input file of stream 0 is not the data ");
  EXPECT_HAS(e, "header (fnv1a64 of the bytes before the data): the checkpoint recorded ");
}

TEST_F(CheckpointNpyInput, TouchedFileIsAcceptedWithANote) {
  set_mtime(0);
  std::vector<std::string> notes;
  EXPECT_EQ(restart(&notes), "");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_HAS(notes[0], data + ": modified since the checkpoint");
  EXPECT_HAS(notes[0], "but its size, header and the content of rows [0, 40)");
  EXPECT_HAS(notes[0], "are those recorded: resuming on it");
}

// A checkpoint written before the inputs were recorded: accepted, with a
// note saying that the files are not checked.
TEST_F(CheckpointNpyInput, CheckpointWithoutFingerprintsIsAcceptedWithANote) {
  const fs::path manifest = root / "ckpt_000000000040" / "MANIFEST.json";
  json m = json::parse(std::ifstream(manifest));
  m.erase("inputs");
  m["manifest_fnv1a64"] = mosaic::ckpt::manifest_checksum(m);
  std::ofstream(manifest) << m.dump(1);
  save(std::vector<double>(800, 1.0));
  std::vector<std::string> notes;
  EXPECT_EQ(restart(&notes), "");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_HAS(notes[0], "MANIFEST.json records no fingerprints of the input files");
}

TEST_F(Checkpoint, PruneKeepsTheNewestCompleteOnes) {
  const Batch sb = advanced({0, 1, 2}, 3);
  write(sb, 10, 20, 2);
  write(sb, 20, 20, 2);
  const std::string third = write(sb, 25, 20, 2);
  fs::remove(fs::path(third) / "MANIFEST.json");  // incomplete
  write(sb, 30, 20, 2);
  write(sb, 40, 20, 2);
  std::vector<std::int64_t> left;
  for (const auto& [n, p] : mosaic::ckpt::list_checkpoints(root.string())) left.push_back(n);
  EXPECT_EQ(left, (std::vector<std::int64_t>{40, 30}));
  // Restarted from 30 and writing 35: 40 belongs to an abandoned timeline.
  write(sb, 35, 20, 2);
  left.clear();
  for (const auto& [n, p] : mosaic::ckpt::list_checkpoints(root.string())) left.push_back(n);
  EXPECT_EQ(left, (std::vector<std::int64_t>{35, 30}));
}

TEST(CheckpointSegments, CombineSumsTimersAndKeepsRates) {
  const json seg = {{"ranks", 2},
                    {"timed_steps", 10},
                    {"warmup_steps", 0},
                    {"timers", {{"update", {{"max_s", 1.0}, {"min_s", 0.5}, {"mean_s", 0.75}}}}},
                    {"loop_max_s", 2.0},
                    {"per_rank_update_samples_per_second_min", 10.0},
                    {"per_rank_update_samples_per_second_max", 20.0}};
  json seg2 = seg;
  seg2["timers"]["update"]["max_s"] = 3.0;
  seg2["per_rank_update_samples_per_second_min"] = 5.0;
  json empty = seg;
  empty["timed_steps"] = 0;
  empty["per_rank_update_samples_per_second_min"] = 0.0;
  const json t = mosaic::combine_segments(json::array({seg, seg2, empty}));
  EXPECT_EQ(t["timers"]["update"]["max_s"], 5.0);
  EXPECT_EQ(t["timers"]["update"]["min_s"], 1.5);
  EXPECT_EQ(t["loop_max_s"], 6.0);
  EXPECT_EQ(t["timed_steps"], 20);
  EXPECT_EQ(t["per_rank_update_samples_per_second_min"], 5.0);  // the segment without timed steps is left out
  EXPECT_EQ(t["per_rank_update_samples_per_second_max"], 20.0);
}

}  // namespace
