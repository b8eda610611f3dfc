// The command line of the benches of the coefficient steps' r x r routines
// (mosaic_team_algebra, mosaic_stream_lanes): [--reps N] [r ...], the
// orders r = 32, 64, 128 when none is given.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

struct OrderArgs {
  std::vector<int> orders;
  int reps = 0;
  bool valid = true;  // false (after a message naming `program`) if some r or N is not positive
};

inline OrderArgs parse_order_args(int argc, char** argv, const char* program, int default_reps) {
  OrderArgs args;
  args.reps = default_reps;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) args.reps = std::atoi(argv[++i]);
    else args.orders.push_back(std::atoi(argv[i]));
  }
  if (args.orders.empty()) args.orders = {32, 64, 128};
  for (const int r : args.orders)
    if (r < 1 || args.reps < 1) {
      std::fprintf(stderr, "%s: r and --reps must be positive (got r = %d, reps = %d)\n", program, r, args.reps);
      args.valid = false;
    }
  return args;
}
