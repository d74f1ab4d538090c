#include "harness/measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "common/compare.h"

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

Row measure_row(Backend& be, const std::string& impl, const Workload& w, const RepPolicy& pol) {
  Row r = base_row(be, impl, w);
  const std::string why = be.unsupported(impl, w);
  if (!why.empty()) {
    r.status = "skipped";
    r.note = why;
    return r;
  }
  Allocator& alloc = be.allocator();
  try {
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_ptr<Runner> runner;
    {
      const Problem p = Problem::make(w);
      runner = be.make(impl, p);
    }
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
    if (bad) {
      r.status = "error";
      r.note = "output holds " + std::to_string(bad) + " NaN/Inf values; time not reported";
      r.time_ms.reset();
      return r;
    }
    for (int i = 1; i < pol.warmup; ++i) runner->forward();
    be.synchronize();
    std::vector<double> t;
    double total = 0;
    while ((static_cast<int>(t.size()) < pol.min_reps || total < pol.min_seconds) &&
           static_cast<int>(t.size()) < pol.max_reps) {
      const double s = be.time_call([&] { runner->forward(); });
      t.push_back(s);
      total += s;
    }
    std::sort(t.begin(), t.end());
    const std::size_t n = t.size();
    r.time_ms = 1e3 * (n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]));
    r.time_min_ms = 1e3 * t.front();
    r.time_max_ms = 1e3 * t.back();
    r.reps = static_cast<int>(n);
    r.status = "ok";
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
