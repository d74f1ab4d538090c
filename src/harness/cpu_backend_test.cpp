// The CPU backend's runners against the float64 reference, through the same path the sweep
// measures (Problem → Backend::make → forward → output): both scopes, ragged lengths, batch 2.
#include <gtest/gtest.h>

#include <string>

#include "common/compare.h"
#include "harness/backend.h"
#include "harness/measure.h"

using namespace longmix;

namespace {

void expect_matches(Backend& be, const std::string& impl, const Workload& w) {
  ASSERT_TRUE(be.unsupported(impl, w).empty()) << be.unsupported(impl, w);
  const Problem p = Problem::make(w);
  const auto ref = reference_output(p);
  auto runner = be.make(impl, p);
  runner->forward();
  runner->forward();  // a second call on the same plan gives the same answer
  be.synchronize();
  const auto out = runner->output();
  ASSERT_EQ(out.size(), ref.size()) << impl << " " << w.describe();
  const auto c = compare(out, ref);
  EXPECT_EQ(c.nonfinite, 0u) << impl << " " << w.describe();
  EXPECT_LE(c.rel_l2, tolerance_for("fp32")) << impl << " " << w.describe() << ": " << c.summary();
}

}  // namespace

TEST(CpuBackend, HyenaBothScopesMatchTheFloat64ReferenceAtRaggedLengths) {
  auto be = make_cpu_backend();
  for (const std::string scope : {"core", "layer"})
    for (const std::int64_t L : {1, 77, 1000})
      for (const int order : {2, 3})
        for (const bool cached : {false, true}) {
          Workload w;
          w.op = "hyena"; w.scope = scope; w.B = 2; w.L = L; w.l_max = L;
          w.H = 2; w.d = 24; w.order = order; w.filter_cached = cached; w.seed = 11;
          expect_matches(*be, "hyena-cpu", w);
        }
}

TEST(CpuBackend, AttentionBothScopesMatchTheFloat64ReferenceAtRaggedLengths) {
  auto be = make_cpu_backend();
  for (const std::string impl : {"flash-cpu", "attention-cpu"})
    for (const std::string scope : {"core", "layer"})
      for (const std::int64_t L : {1, 77, 300})
        for (const bool causal : {true, false}) {
          Workload w;
          w.op = impl == "flash-cpu" ? "flash" : "attention"; w.scope = scope; w.B = 2; w.L = L;
          w.H = 2; w.d = 32; w.causal = causal; w.seed = 5;
          expect_matches(*be, impl, w);
        }
}
