#include "harness/measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <sstream>

#include "common/compare.h"
#include "common/turn_order.h"

namespace longmix {

Row row_of(const std::string& backend, const std::string& impl, const Workload& w) {
  Row r;
  r.L = w.L;
  r.impl = impl;
  r.op = w.op;
  r.scope = w.scope;
  r.backend = backend;
  r.dtype = w.dtype;
  r.B = w.B;
  r.H = w.H;
  r.d = w.d;
  r.D = w.D();
  r.filter = w.filter_name();
  return r;
}

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
Row base_row(const Backend& be, const std::string& impl, const Workload& w) { return row_of(be.name(), impl, w); }
}  // namespace

namespace {
// Setup of one runner and the peak memory of one call (SPEC §4), filling setup_ms, mem_GB,
// work_GB, device_GB and reserved_GB. False (and r.status = error) when that call's output
// holds NaN/Inf.
bool setup_and_peak(Backend& be, const std::string& impl, const Problem& p, Row& r,
                    std::unique_ptr<Runner>& runner) {
  Allocator& alloc = be.allocator();
  const auto t0 = std::chrono::steady_clock::now();
  runner = be.make(impl, p);
  be.synchronize();
  r.setup_ms = 1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Peak memory of one call: everything held at once, inputs and weights included.
  const std::size_t before = alloc.current();
  alloc.reset_peak();
  be.time_call([&] { runner->forward(); });
  const std::size_t peak = alloc.peak();
  r.mem_GB = peak / kGiB;
  r.work_GB = (peak - before) / kGiB;
  if (const std::size_t used = be.device_used_bytes()) r.device_GB = used / kGiB;
  if (const std::size_t res = be.reserved_bytes()) r.reserved_GB = res / kGiB;
  const auto out = runner->output();
  const auto bad = std::count_if(out.begin(), out.end(), [](float x) { return !std::isfinite(x); });
  if (!bad) return true;
  r.status = "error";
  r.note = "output holds " + std::to_string(bad) + " NaN/Inf values; time not reported";
  r.time_ms.reset();
  return false;
}

void set_times(Row& r, std::vector<double> t) {
  std::sort(t.begin(), t.end());
  const std::size_t n = t.size();
  r.time_ms = 1e3 * (n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]));
  r.time_min_ms = 1e3 * t.front();
  r.time_max_ms = 1e3 * t.back();
  r.reps = static_cast<int>(n);
  r.status = "ok";
}

bool reps_done(const std::vector<double>& t, const RepPolicy& pol) {
  double total = 0;
  for (double s : t) total += s;
  const int n = static_cast<int>(t.size());
  return (n >= pol.min_reps && total >= pol.min_seconds) || n >= pol.max_reps;
}
}  // namespace

Row measure_row(Backend& be, const std::string& impl, const Workload& w, const RepPolicy& pol) {
  Row r = base_row(be, impl, w);
  const std::string why = be.unsupported(impl, w);
  if (!why.empty()) {
    r.status = "skipped";
    r.note = why;
    return r;
  }
  try {
    std::unique_ptr<Runner> runner;
    {
      const Problem p = Problem::make(w);
      if (!setup_and_peak(be, impl, p, r, runner)) return r;
    }
    for (int i = 1; i < pol.warmup; ++i) runner->forward();
    be.synchronize();
    std::vector<double> t;
    while (!reps_done(t, pol)) t.push_back(be.time_call([&] { runner->forward(); }));
    set_times(r, std::move(t));
    r.note = runner->note();
  } catch (const OutOfMemory& e) {
    r = base_row(be, impl, w);
    r.status = "OOM";
    r.note = e.what();
  } catch (const std::exception& e) {
    r = base_row(be, impl, w);
    r.status = "error";
    r.note = e.what();
  }
  be.release_cached();
  return r;
}

std::vector<int> turn_calls(const std::vector<double>& call_s) {
  double longest = 0;
  for (double s : call_s) longest = std::max(longest, s);
  std::vector<int> n;
  for (double s : call_s)
    n.push_back(s > 0 ? std::clamp(static_cast<int>(std::lround(longest / s)), 1, kMaxCallsPerTurn) : 1);
  return n;
}

std::vector<Row> measure_rows(Backend& be, const std::vector<std::string>& impls, const Workload& w,
                              const RepPolicy& pol) {
  std::vector<Row> rows;
  std::vector<std::size_t> live;  // rows whose implementation takes w
  for (std::size_t k = 0; k < impls.size(); ++k) {
    rows.push_back(base_row(be, impls[k], w));
    const std::string why = be.unsupported(impls[k], w);
    if (why.empty()) {
      live.push_back(k);
    } else {
      rows[k].status = "skipped";
      rows[k].note = why;
    }
  }
  if (live.size() < 2) {
    for (std::size_t k : live) rows[k] = measure_row(be, impls[k], w, pol);
    return rows;
  }
  auto failed = [&](std::size_t k, const std::exception& e, const char* status) {
    rows[k] = base_row(be, impls[k], w);
    rows[k].status = status;
    rows[k].note = e.what();
  };
  std::vector<std::unique_ptr<Runner>> runners(impls.size());
  std::vector<std::size_t> timed;  // live rows whose one-call measurement passed
  try {
    const Problem p = Problem::make(w);
    // 1. Each implementation alone: setup and the peak of one call, as measure_row takes them
    //    (no other runner holds memory meanwhile).
    for (std::size_t k : live) {
      try {
        std::unique_ptr<Runner> one;
        if (setup_and_peak(be, impls[k], p, rows[k], one)) timed.push_back(k);
      } catch (const OutOfMemory& e) {
        failed(k, e, "OOM");
      } catch (const std::exception& e) {
        failed(k, e, "error");
      }
      be.release_cached();
    }
    // 2. All of them at once for the timing; where they do not fit together, each alone.
    try {
      for (std::size_t k : timed) runners[k] = be.make(impls[k], p);
    } catch (const OutOfMemory&) {
      for (auto& run : runners) run.reset();
      be.release_cached();
    }
  } catch (const std::exception& e) {  // the inputs themselves
    for (std::size_t k : live) failed(k, e, dynamic_cast<const OutOfMemory*>(&e) ? "OOM" : "error");
    be.release_cached();
    return rows;
  }
  // Each alone, as measure_row times it, where the runners did not fit together or a call ran out
  // of memory beside the others.
  auto time_alone = [&](const char* why) {
    runners.clear();
    be.release_cached();
    for (std::size_t k : timed) {
      rows[k] = measure_row(be, impls[k], w, pol);
      if (rows[k].status == "ok")
        rows[k].note += std::string(rows[k].note.empty() ? "" : "; ") + "timed alone (" + why + ")";
    }
    return rows;
  };
  if (timed.empty()) return rows;
  if (!runners[timed.front()]) return time_alone("the implementations did not fit on the device at once");
  try {
    // Warm-up of each, the last call's time setting how many calls each takes a turn.
    std::vector<double> call_s;
    for (std::size_t k : timed) {
      for (int i = 1; i < pol.warmup; ++i) runners[k]->forward();
      call_s.push_back(be.time_call([&] { runners[k]->forward(); }));
    }
    const std::vector<int> per_turn = turn_calls(call_s);
    std::vector<std::vector<double>> t(timed.size());
    take_turns(
        timed.size(),
        [&](std::size_t i) {
          for (int c = 0; c < per_turn[i]; ++c) t[i].push_back(be.time_call([&] { runners[timed[i]]->forward(); }));
        },
        [&](std::size_t i) { return reps_done(t[i], pol); });
    for (std::size_t i = 0; i < timed.size(); ++i) {
      Row& r = rows[timed[i]];
      set_times(r, std::move(t[i]));
      std::string with;
      for (std::size_t o : timed)
        if (o != timed[i]) with += (with.empty() ? "" : ", ") + impls[o];
      r.note = runners[timed[i]]->note();
      if (!with.empty())
        r.note += std::string(r.note.empty() ? "" : "; ") + "timed in turns with " + with + " (" +
                  std::to_string(per_turn[i]) + (per_turn[i] == 1 ? " call a turn)" : " calls a turn)");
    }
  } catch (const OutOfMemory&) {
    return time_alone("a call ran out of memory beside the other implementations' runners");
  } catch (const std::exception& e) {
    for (std::size_t k : timed) failed(k, e, "error");
  }
  runners.clear();
  be.release_cached();
  return rows;
}

double tolerance_for(const std::string& dtype) {
  if (dtype == "fp32") return 1e-4;
  if (dtype == "fp16") return 5e-3;
  return 1.5e-2;  // bf16: 8-bit mantissa
}

CheckResult check_impl(Backend& be, const std::string& impl, const Workload& w) {
  CheckResult c;
  c.impl = impl;
  c.op = w.op;
  c.scope = w.scope;
  c.dtype = w.dtype;
  c.shape = w.describe();
  c.tolerance = tolerance_for(w.dtype);
  const std::string why = be.unsupported(impl, w);
  if (!why.empty()) {
    c.skipped = true;
    c.message = why;
    return c;
  }
  try {
    Problem p = Problem::make(w);
    p.round_to(w.dtype);
    be.set_poison_outputs(true);
    auto runner = be.make(impl, p);
    runner->forward();
    be.set_poison_outputs(false);
    be.synchronize();
    const auto out = runner->output();
    const auto ref = reference_output(p);
    const auto cmp = compare(out, ref);
    c.rel_l2 = cmp.rel_l2;
    c.max_abs = cmp.max_abs;
    c.nonfinite = cmp.nonfinite;
    c.passed = cmp.passes(c.tolerance);
    c.message = cmp.summary();
  } catch (const std::exception& e) {
    c.passed = false;
    c.message = e.what();
  }
  be.release_cached();
  return c;
}

}  // namespace longmix
