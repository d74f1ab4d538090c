// A sweep over lengths and implementations: measures each curve's rows in order of length,
// writes each row to disk as soon as it is measured, continues past OOM and errors, keeps to a
// time budget (on one, the cheapest predicted row of all curves goes first), and fills lengths
// it could not measure with marked extrapolations.
#pragma once
#include <csignal>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/measure.h"

namespace longmix {

struct SweepOptions {
  std::vector<std::string> ops = {"flash", "hyena", "attention"};
  std::vector<std::string> impls;  // restrict to these implementation ids (empty: all)
  std::string scope = "layer";
  std::vector<std::int64_t> lengths;
  std::int64_t B = 1, H = 4, d = 64;
  std::string dtype = "auto";
  std::string backend = "auto";
  std::optional<std::size_t> memory_limit;
  std::optional<double> memory_fraction;
  bool filter_cached = false;
  bool causal = true;
  int order = 2;
  std::int64_t l_max = 0;  // 0: the longest length of the run
  RepPolicy policy;
  std::string out = "hyena_vs_flash_benchmark";
  std::uint64_t seed = 0;
  bool resume = false;
  bool quiet = false;
  std::optional<double> time_budget_s;  // unset: CPU default, none on the GPU
  bool extrapolate = true;
  bool check = true;
  std::string command_line;
  // Rows of one op at one length are timed in turns (measure_rows) rather than one after the
  // other; not with isolate, whose row processes take one row each.
  bool interleave = true;
  bool isolate = false;        // each row in its own process (faults become error rows)
  double row_timeout_s = 0;    // isolate: kill a row process after this long (0: never)
  std::vector<std::pair<std::string, double>> ceilings;  // filled by the sweep
};

// Default CPU budget (seconds of measurement) that keeps the main job on a 2-core machine
// near 10 minutes, builds included.
constexpr double kCpuDefaultBudgetS = 420;

// The sweep's choice of the next row. Each curve (one implementation) offers its shortest
// unmeasured length, with the number of rows of it measured so far and the predicted cost in
// seconds of measuring that row (0 if nothing predicts it yet).
struct RowCandidate {
  std::size_t curve;
  std::int64_t L;
  std::size_t measured;
  double cost_s;
};
struct RowChoice {
  std::optional<std::size_t> pick;  // index into the candidates; none: nothing left to measure
  std::vector<std::size_t> defer;   // candidates whose curves stop here (left to extrapolation)
};
// A curve's first two rows are always taken (the extrapolating fit needs two points), shortest
// length first. Without a budget the rest go by length too (curve order on ties). On a budget
// (`budgeted`), a curve whose next row is predicted to cost more than `time_left_s` stops there,
// and of the rest the cheapest goes first: a cheap curve (Hyena on the CPU) is not starved by one
// expensive row of another (standard attention) that happened to come first in length order.
RowChoice choose_next_row(const std::vector<RowCandidate>& candidates, double time_left_s,
                          bool budgeted);

// The candidates measured together with the pick (measure_rows, timed in turns): the pick first,
// then every other candidate of the same op (curve_op: each curve's op) at the same length that
// the choice does not defer, in candidate order; on a budget, a curve past its first two rows
// joins only while the group's predicted cost stays within time_left_s. Empty without a pick.
std::vector<std::size_t> rows_timed_together(const std::vector<RowCandidate>& candidates,
                                             const RowChoice& choice,
                                             const std::vector<std::string>& curve_op,
                                             double time_left_s, bool budgeted);

// Parses "4k,8k,131072,1M" and ranges "4k..1M" (doubling). Throws InvalidArgument.
std::vector<std::int64_t> parse_lengths(const std::string& text);

// MemAvailable of /proc/meminfo in bytes (the CPU backend's default cap is 90% of it).
std::optional<std::size_t> available_memory_bytes();

// Returns the process exit status (0: every row recorded, checks passed).
int run_sweep(const SweepOptions& opt);

// Set by SIGINT/SIGTERM: the sweep stops after the current row.
extern volatile std::sig_atomic_t g_stop_requested;

// A row as one JSON object and back (the row process prints one).
std::string row_to_json(const Row& r);
Row row_from_json(const std::string& text);

// The environment of a run (JSON object as text), shared with `report`.
std::string environment_json(Backend& be, const SweepOptions& opt);

}  // namespace longmix
