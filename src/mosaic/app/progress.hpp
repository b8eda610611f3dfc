// Rank 0's progress lines during the timed loop (run.progress_every_s).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace mosaic {

// Rank 0's progress lines: at most one every `period_s` seconds.
class ProgressReporter {
 public:
  ProgressReporter(bool enabled, double period_s, std::int64_t total_steps)
      : enabled_(enabled), period_s_(period_s), total_(total_steps), start_(clock::now()), last_(start_) {}
  // `done` timed steps, `samples` timed samples over all streams (fewer
  // than steps x streams once a stream of unequal length has ended);
  // `update_s`: rank 0's update timer so far.
  void update(std::int64_t done, double samples, double update_s) {
    if (!enabled_) return;
    const auto now = clock::now();
    if (seconds(last_, now) < period_s_ || done >= total_) return;
    const double rate_steps = (done - last_done_) / seconds(last_, now);
    const double rate = (samples - last_samples_) / seconds(last_, now);
    const double update_rate =
        update_s > last_update_s_ ? (samples - last_samples_) / (update_s - last_update_s_) : 0.0;
    const double eta = rate_steps > 0 ? (total_ - done) / rate_steps : 0.0;
    std::printf(
        "[mosaic] step %lld/%lld (%5.1f%%)  end-to-end %.4g samples/s  update %.4g samples/s "
        "(rank 0's update timer)  ETA %.0f s\n",
        (long long)done, (long long)total_, 100.0 * done / total_, rate, update_rate, eta);
    std::fflush(stdout);
    last_ = now;
    last_done_ = done;
    last_samples_ = samples;
    last_update_s_ = update_s;
  }
  // A restarted run: `done` steps, `samples` samples were done before this
  // process started.
  void resume(std::int64_t done, double samples) {
    last_done_ = done;
    last_samples_ = samples;
  }

 private:
  using clock = std::chrono::steady_clock;
  static double seconds(clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }
  bool enabled_;
  double period_s_;
  std::int64_t total_, last_done_ = 0;
  double last_samples_ = 0, last_update_s_ = 0;
  clock::time_point start_, last_;
};

}  // namespace mosaic
