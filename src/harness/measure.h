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
