// SIGTERM / SIGINT: what batch schedulers send before they kill a job (and
// what Ctrl-C sends). The mini-app does not die on them: the handler only
// records the signal, and the run loop (run.hpp) looks at the record after
// every step, agrees with the other ranks that the run stops, writes a
// checkpoint (output.checkpoint.dir set) and a result file marked
// "interrupted", and exits with 128 + the signal number (docs/CHECKPOINT.md).
//
// The first signal wins; later ones (schedulers and mpiexec may deliver the
// same SIGTERM to a rank twice) are ignored: use SIGKILL to stop a rank at once.
//
// SIGXFSZ (a write past the file-size limit, `ulimit -f`) is ignored, so
// that such a write fails with EFBIG and the writer reports it and keeps
// what was complete (the previous state set, the last checkpoint) instead
// of the process dying mid-file.
#pragma once

#include <csignal>
#include <cstring>

namespace mosaic {

namespace detail {
inline volatile std::sig_atomic_t g_stop_signal = 0;

inline void record_stop_signal(int signum) {
  if (g_stop_signal == 0) g_stop_signal = signum;
}
}  // namespace detail

// Installs the handler for SIGTERM and SIGINT and ignores SIGXFSZ
// (process-wide; call once, early).
inline void install_stop_signal_handlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = detail::record_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // interrupted system calls resume; the loop polls the flag
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  std::signal(SIGXFSZ, SIG_IGN);
}

// The signal received so far on this rank (0 = none).
inline int stop_signal_received() { return int(detail::g_stop_signal); }

// For tests: forget a recorded signal.
inline void reset_stop_signal() { detail::g_stop_signal = 0; }

inline const char* stop_signal_name(int signum) {
  switch (signum) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    default: return "signal";
  }
}

}  // namespace mosaic
