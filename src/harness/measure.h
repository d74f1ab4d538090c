// How one row is measured (SPEC §4): setup outside the timed region, peak memory of one
// call through the allocator, warm-up, then repeats until >= min_reps calls and
// >= min_seconds, each timed by the device; median/min/max/count. OOM and errors become
// recorded rows, never crashes.
#pragma once
#include <string>

#include "harness/backend.h"
#include "report/records.h"

namespace longmix {

struct RepPolicy {
  int warmup = 3;
  int min_reps = 10;
  double min_seconds = 0.3;
  int max_reps = 100000;
};

// A row naming what is measured (impl, workload, backend) with nothing measured yet.
Row row_of(const std::string& backend, const std::string& impl, const Workload& w);

Row measure_row(Backend& be, const std::string& impl, const Workload& w, const RepPolicy& pol);

// Rows of several implementations of one workload, timed in turns so that none is favoured by
// its place in the sequence (a GPU at its power cap shifts its clocks over seconds: timed back to
// back for ~1 s each, the same cuDNN kernel ran 4-11% slower second than first, H100). Setup and
// the one-call peak memory are taken of each alone, as measure_row takes them; then all runners
// are built at once (if they do not fit together, or a call runs out of memory beside the
// others, each is timed alone as by measure_row, and its note says so), each warmed up, and
// timed in rounds: every implementation takes one turn a round, in a fresh order each round
// (TurnOrder: none always follows the same one), a turn being as many calls as make it about as
// long as the slowest one's call (turn_calls), until each has its policy's repeats. The inputs
// are the same Problem for all; each runner holds its own device copy, so a call may find in L2
// what another implementation's call left there, not its own inputs.
std::vector<Row> measure_rows(Backend& be, const std::vector<std::string>& impls, const Workload& w,
                              const RepPolicy& pol);
// Calls a turn for each of the given call times: the slowest's time over each one's, rounded,
// between 1 and kMaxCallsPerTurn.
constexpr int kMaxCallsPerTurn = 64;
std::vector<int> turn_calls(const std::vector<double>& call_s);

// Start-of-run correctness check of one implementation at a small shape.
struct CheckResult {
  std::string impl, op, scope, dtype, shape, message;
  double rel_l2 = 0, tolerance = 0, max_abs = 0;
  std::size_t nonfinite = 0;
  bool passed = false;
  bool skipped = false;
};
CheckResult check_impl(Backend& be, const std::string& impl, const Workload& w);
double tolerance_for(const std::string& dtype);

}  // namespace longmix
