// GPU ops against the float64 reference (ctest label gpu). Without a usable GPU every test
// says "skipped: no GPU" and is counted as skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "common/compare.h"
#include "harness/backend.h"
#include "harness/measure.h"
#ifdef LONGMIX_HAVE_CUDA  // the plan-level test below drives the CUDA library directly
#include "common/cuda_check.h"
#include "common/cuda_context.h"
#include "common/cuda_workspace.h"
#include "common/rng.h"
#include "ops/attention/attention_flash.h"
#include "ops/hyena/hyena_cuda.h"
#include "ops/hyena/hyena_fused.h"
#include "ops/hyena/hyena_fused_params.h"
#endif

using namespace longmix;

namespace {

Backend* gpu(std::string* why) {
  static std::string reason;
  static std::unique_ptr<Backend> be = make_cuda_backend(&reason);
  *why = reason;
  return be.get();
}

#define REQUIRE_GPU(be)                                          \
  std::string why_;                                              \
  Backend* be = gpu(&why_);                                      \
  if (!be) GTEST_SKIP() << "skipped: no GPU (" << why_ << ")"

double tolerance(const std::string& op, const std::string& dtype) {
  const double fp16 = op == "hyena" ? 5e-3 : 2e-3;
  return dtype == "fp16" ? fp16 : 8 * fp16;  // bf16 keeps 3 fewer mantissa bits
}

void expect_matches(Backend& be, const std::string& impl, Workload w) {
  Problem p = Problem::make(w);
  p.round_to(w.dtype);  // the float64 reference sees the inputs the GPU stores
  const auto ref = reference_output(p);
  be.set_poison_outputs(true);  // unwritten outputs stay NaN and fail
  auto runner = be.make(impl, p);
  runner->forward();
  be.synchronize();
  const auto out = runner->output();
  be.set_poison_outputs(false);
  const auto c = compare(out, ref);
  EXPECT_EQ(c.nonfinite, 0u) << impl << " " << w.describe();
  EXPECT_LE(c.rel_l2, tolerance(w.op, w.dtype)) << impl << " " << w.describe() << ": " << c.summary();
  runner.reset();
  be.release_cached();
}

using AttnShape = std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t, bool, std::string>;
class GpuAttention : public ::testing::TestWithParam<AttnShape> {};

TEST_P(GpuAttention, MatchesFloat64Reference) {
  REQUIRE_GPU(be);
  auto [impl, L, d, H, causal, dtype] = GetParam();
  for (const std::string scope : {"core", "layer"}) {
    Workload w;
    w.op = impl.rfind("flash", 0) == 0 ? "flash" : "attention";
    w.scope = scope;
    w.B = scope == "layer" ? 2 : 1;
    w.L = L; w.d = d; w.H = H; w.causal = causal; w.dtype = dtype; w.seed = 3;
    const std::string why = be->unsupported(impl, w);
    ASSERT_TRUE(why.empty()) << why;
    expect_matches(*be, impl, w);
  }
}

INSTANTIATE_TEST_SUITE_P(Ragged, GpuAttention,
    ::testing::Combine(::testing::Values("flash-own", "flash-cudnn", "attention-cuda"), ::testing::Values(1, 77, 256, 513),
                       ::testing::Values(64, 128), ::testing::Values(1, 4), ::testing::Bool(),
                       ::testing::Values("fp16", "bf16")));

using HyenaShape = std::tuple<std::string, std::int64_t, std::int64_t, int, bool, std::string>;
class GpuHyena : public ::testing::TestWithParam<HyenaShape> {};

TEST_P(GpuHyena, MatchesFloat64Reference) {
  REQUIRE_GPU(be);
  auto [impl, L, D, order, cached, dtype] = GetParam();
  for (const std::string scope : {"layer", "core"}) {
    Workload w;
    w.op = "hyena"; w.scope = scope; w.B = 2; w.L = L; w.H = D / 64; w.d = 64; w.order = order;
    w.filter_cached = cached; w.dtype = dtype; w.l_max = std::max<std::int64_t>(L, 1024); w.seed = 5;
    const std::string why = be->unsupported(impl, w);
    ASSERT_TRUE(why.empty()) << why;
    expect_matches(*be, impl, w);
  }
}

INSTANTIATE_TEST_SUITE_P(Ragged, GpuHyena,
    ::testing::Combine(::testing::Values("hyena-cuda", "hyena-fused"), ::testing::Values(1, 77, 300, 1000, 2500),
                       ::testing::Values(64, 256), ::testing::Values(2, 3), ::testing::Bool(),
                       ::testing::Values("fp16", "bf16")));

// Long lengths take the larger FFT sizes (N1 × N2 up to 1024 × 2048 at 600k): checked against
// the float64 reference on a subset of outputs would need O(L²) work, so against hyena-cuda
// (itself checked above) at the same inputs, relative L2 ≤ 5e-3.
TEST(GpuHyenaFused, AgreesWithHyenaCudaAtLongLengths) {
  REQUIRE_GPU(be);
  for (std::int64_t L : {8192, 65536, 262144, 600000}) {
    Workload w;
    w.op = "hyena"; w.L = L; w.l_max = L; w.dtype = "fp16"; w.seed = 11;
    const Problem p = Problem::make(w);
    std::vector<float> outs[2];
    int i = 0;
    for (const std::string impl : {"hyena-cuda", "hyena-fused"}) {
      auto r = be->make(impl, p);
      r->forward();
      be->synchronize();
      outs[i++] = r->output();
    }
    const auto c = compare(outs[1], std::vector<double>(outs[0].begin(), outs[0].end()));
    EXPECT_EQ(c.nonfinite, 0u) << "L=" << L;
    EXPECT_LE(c.rel_l2, 5e-3) << "L=" << L << ": " << c.summary();
    be->release_cached();
  }
}

// The graph is captured on the first call and replayed: later calls give the same output.
TEST(GpuHyenaFused, GraphReplayGivesTheSameOutputEveryCall) {
  REQUIRE_GPU(be);
  Workload w;
  w.op = "hyena"; w.L = 3000; w.l_max = 4096; w.dtype = "fp16"; w.seed = 2;
  const Problem p = Problem::make(w);
  auto r = be->make("hyena-fused", p);
  r->forward();
  be->synchronize();
  const auto a = r->output();
  r->forward();
  r->forward();
  be->synchronize();
  const auto b = r->output();
  EXPECT_EQ(a, b);
  be->release_cached();
}

#ifdef LONGMIX_HAVE_CUDA
// One hyena-fused forward of p's input with options opt, its output NaN-poisoned first.
std::vector<float> fused_output(const Problem& p, CudaContext& ctx, const HyenaFusedOptions& opt) {
  const Workload& w = p.w;
  const std::size_t n = p.x.size();
  const Buffer<char> x = upload_as(*ctx.alloc, p.x, DType::kF16, ctx.stream);
  Buffer<char> y(*ctx.alloc, n * 2);
  HyenaFusedPlan plan(p.hyena, w.B, w.L, DType::kF16, false, ctx, opt);
  fill_nan_cuda(DType::kF16, y.data(), n, ctx.stream);
  plan.forward(x.data(), y.data());
  return download_as(y, n, DType::kF16, *ctx.alloc, ctx.stream);
}

// hyena-cuda's output for p (cuFFT in fp32: the yardstick where the float64 reference, O(L²),
// takes minutes).
std::vector<double> hyena_cuda_output(Backend& be, const Problem& p) {
  auto r = be.make("hyena-cuda", p);
  r->forward();
  be.synchronize();
  const auto o = r->output();
  return {o.begin(), o.end()};
}

// The Hyena layer problem (B = 1, D = 64·H, fp16-rounded inputs) the hyena-fused option tests
// compare on.
Problem fused_problem(std::int64_t L, std::int64_t H, std::uint64_t seed) {
  Workload w;
  w.op = "hyena"; w.B = 1; w.L = L; w.l_max = L; w.H = H; w.dtype = "fp16"; w.seed = seed;
  Problem p = Problem::make(w);
  p.round_to("fp16");
  return p;
}

// One hyena-fused output against ref: the comparison printed as "hyena-fused WHAT: …" (for
// bench/NOTES.md), every value finite and the relative L2 error within the layer's fp16 bound.
void expect_fused_close(const std::vector<float>& out, const std::vector<double>& ref, const std::string& what) {
  const auto c = compare(out, ref);
  std::printf("hyena-fused %s: %s\n", what.c_str(), c.summary().c_str());
  EXPECT_EQ(c.nonfinite, 0u) << what;
  EXPECT_LE(c.rel_l2, 5e-3) << what << ": " << c.summary();
}

// The spectra between FFT passes are fp16 by default; fp32 spectra are the precision yardstick.
// Both against the float64 reference; the errors are printed for bench/NOTES.md.
TEST(GpuHyenaFused, Fp16AndFp32SpectraMatchTheReference) {
  REQUIRE_GPU(be);
  Workload w;
  w.op = "hyena"; w.B = 1; w.L = 1500; w.l_max = 2048; w.dtype = "fp16"; w.seed = 7;
  Problem p = Problem::make(w);
  p.round_to("fp16");
  const auto ref = reference_output(p);
  {
    OwnedCudaContext tc(be->allocator());
    for (bool half : {true, false}) {
      for (const bool graph : {true, false}) {
        HyenaFusedOptions opt;
        opt.fp16_spectra = half;
        opt.graph = graph;
        expect_fused_close(fused_output(p, tc.ctx, opt), ref,
                           "L=" + std::to_string(w.L) + " spectra=" + (half ? "fp16" : "fp32") +
                               " graph=" + std::to_string(int(graph)));
      }
    }
  }
  be->release_cached();
}

// Both FFT splits where they differ: at L = 3000 (N = 8192: 64 × 128 or 128 × 64) against the
// float64 reference, D = 256 and 1024; at L = 10000 (N = 32768: 128 × 256 or 256 × 128, where the
// float64 reference takes minutes at D = 1024) against hyena-cuda, as the long-length test does.
TEST(GpuHyenaFused, WideAndTallSplitsMatchTheReference) {
  REQUIRE_GPU(be);
  using Split = HyenaFusedOptions::Split;
  for (const int H : {4, 16}) {
    for (const std::int64_t L : {3000, 10000}) {
      const Problem p = fused_problem(L, H, 5);
      OwnedCudaContext tc(be->allocator());
      std::vector<float> out[2];
      for (const Split split : {Split::kWide, Split::kTall}) {
        HyenaFusedOptions opt;
        opt.split = split;
        out[split == Split::kTall] = fused_output(p, tc.ctx, opt);
      }
      const bool exact = L <= 4096;
      const std::vector<double> ref = exact ? reference_output(p) : hyena_cuda_output(*be, p);
      for (const int i : {0, 1}) {
        expect_fused_close(out[i], ref,
                           "D=" + std::to_string(64 * H) + " L=" + std::to_string(L) + " split=" +
                               (i ? "tall" : "wide") + " vs " + (exact ? "float64" : "hyena-cuda"));
      }
    }
  }
  be->release_cached();
}

// The filter's path on a second stream (overlap) against the serial order: on by default at
// L = 3000 (against float64), forced on at L = 40000 (auto leaves it off there; against
// hyena-cuda); the two orders run the same kernels on the same data, so their outputs differ
// only by the filter's last-layer GEMM (cuBLASLt without a workspace on the side stream).
TEST(GpuHyenaFused, OverlappedFilterPathMatchesTheSerialOne) {
  REQUIRE_GPU(be);
  using Overlap = HyenaFusedOptions::Overlap;
  for (const std::int64_t L : {3000, 40000}) {
    const Problem p = fused_problem(L, 4, 11);
    const bool exact = L <= 4096;
    const std::vector<double> ref = exact ? reference_output(p) : hyena_cuda_output(*be, p);
    OwnedCudaContext tc(be->allocator());
    std::vector<float> out[2];
    for (const Overlap ov : {Overlap::kOff, Overlap::kOn}) {
      for (const bool graph : {true, false}) {
        HyenaFusedOptions opt;
        opt.overlap = ov;
        opt.graph = graph;
        const std::vector<float> o = fused_output(p, tc.ctx, opt);
        expect_fused_close(o, ref,
                           "L=" + std::to_string(L) + " overlap=" + (ov == Overlap::kOn ? "on" : "off") +
                               " graph=" + std::to_string(int(graph)) + " vs " + (exact ? "float64" : "hyena-cuda"));
        if (graph) out[ov == Overlap::kOn] = o;
      }
    }
    const std::vector<double> off(out[0].begin(), out[0].end());
    const auto c = compare(out[1], off);
    std::printf("hyena-fused L=%lld overlap on vs off: %s\n", static_cast<long long>(L), c.summary().c_str());
    EXPECT_LE(c.rel_l2, 1e-3) << c.summary();
  }
  be->release_cached();
}

// The column passes' 8-row accesses against the scalar ones, where they apply (R % 8 == 0):
// L = 1000 (N = 4096 = 64 × 64, R = 16, the last row ragged) and 3072 (64 × 128, R = 24)
// against float64; L = 65536 (256 × 512, R = 128; D = 256 and 1024) and 131000 (512 × 512,
// R = 256, ragged) against hyena-cuda; at N1 = 1024, where the 8-row kernels have their own
// register bound and the signal's pass A takes the 8-row path by default, L = 516000 (1024 ×
// 1024, R = 504, ragged) and 1031000 (1024 × 2048, R = 504, ragged) at D = 64 against hyena-cuda.
// Order 3 (a fp32 prev between the steps) at L = 1000; the tensor-core column kernels, which
// share the prologue and epilogue, at 131000.
// The two accesses read the same values and differ only in the signal past L (zero or the
// short conv's bias: never an input of a kept output), so their outputs agree to rounding; so
// do the mixed choices (the signal's pass A on the other access than the other two passes).
TEST(GpuHyenaFused, EightRowColumnAccessesMatchTheScalarOnes) {
  REQUIRE_GPU(be);
  using ColAccess = HyenaFusedOptions::ColAccess;
  using ColFft = HyenaFusedOptions::ColFft;
  struct Case {
    std::int64_t L, H;
    int order;
    ColFft col;
  };
  for (const Case k : {Case{1000, 4, 2, ColFft::kAuto}, Case{1000, 4, 3, ColFft::kAuto}, Case{3072, 4, 2, ColFft::kAuto},
                       Case{65536, 4, 2, ColFft::kAuto}, Case{65536, 16, 2, ColFft::kAuto},
                       Case{131000, 4, 2, ColFft::kAuto}, Case{131000, 4, 2, ColFft::kTensor},
                       Case{516000, 1, 2, ColFft::kAuto}, Case{1031000, 1, 2, ColFft::kAuto}}) {
    {  // the plan's split: every case must have R % 8 == 0, or both runs are scalar
      int n1 = 0, n2 = 0;
      hyena_fused_split(hyena_fused_fft_size(k.L), 64 * k.H, HyenaFusedOptions::Split::kAuto, &n1, &n2);
      ASSERT_EQ((k.L + n2 - 1) / n2 % 8, 0) << "L=" << k.L << ": the 8-row path would not run (N1=" << n1 << ")";
    }
    Workload w;
    w.op = "hyena"; w.B = 1; w.L = k.L; w.l_max = k.L; w.H = k.H; w.order = k.order; w.dtype = "fp16"; w.seed = 17;
    Problem p = Problem::make(w);
    p.round_to("fp16");
    const bool exact = k.L <= 4096;
    const std::vector<double> ref = exact ? reference_output(p) : hyena_cuda_output(*be, p);
    OwnedCudaContext tc(be->allocator());
    // (the other column passes, the signal's pass A): both scalar first, then both 8-row, and
    // each mixed choice (signal_access overriding col_access for that pass)
    const std::pair<ColAccess, ColAccess> choices[] = {{ColAccess::kScalar, ColAccess::kScalar},
                                                       {ColAccess::kVec8, ColAccess::kAuto},
                                                       {ColAccess::kVec8, ColAccess::kScalar},
                                                       {ColAccess::kScalar, ColAccess::kVec8}};
    std::vector<float> scalar_out;
    for (const auto& [acc, sig] : choices) {
      HyenaFusedOptions opt;
      opt.col_access = acc;
      opt.signal_access = sig;
      opt.col_fft = k.col;
      const std::string name = std::string("access=") + (acc == ColAccess::kVec8 ? "8-row" : "scalar") +
                               " signal=" + (sig == ColAccess::kAuto ? "same" : sig == ColAccess::kVec8 ? "8-row" : "scalar");
      const std::vector<float> out = fused_output(p, tc.ctx, opt);
      expect_fused_close(out, ref,
                         "D=" + std::to_string(64 * k.H) + " L=" + std::to_string(k.L) + " order " +
                             std::to_string(k.order) + (k.col == ColFft::kTensor ? " tensor columns " : " ") + name +
                             " vs " + (exact ? "float64" : "hyena-cuda"));
      if (acc == ColAccess::kScalar && sig == ColAccess::kScalar) {
        scalar_out = out;
        continue;
      }
      const auto c = compare(out, std::vector<double>(scalar_out.begin(), scalar_out.end()));
      std::printf("hyena-fused L=%lld %s vs scalar: %s\n", static_cast<long long>(k.L), name.c_str(), c.summary().c_str());
      EXPECT_LE(c.rel_l2, 1e-3) << "L=" << k.L << " " << name << ": " << c.summary();
    }
  }
  be->release_cached();
}

// v21: the short convs' rows and the filter's h rows and time grid staged in shared memory
// (HyenaFusedOptions::stage) against the global loads, under each column access: the same loads of the same values, so the outputs must
// be bit-identical. Every case has R % 8 == 0, or nothing would be staged; L ≤ 4096 against
// float64 too.
struct StageCase {
  std::int64_t L, H;
  int order;
};
void expect_staged_equals_global(Backend& be, std::initializer_list<StageCase> cases) {
  using ColAccess = HyenaFusedOptions::ColAccess;
  using Stage = HyenaFusedOptions::Stage;
  for (const StageCase k : cases) {
    {
      int n1 = 0, n2 = 0;
      hyena_fused_split(hyena_fused_fft_size(k.L), 64 * k.H, HyenaFusedOptions::Split::kAuto, &n1, &n2);
      ASSERT_EQ((k.L + n2 - 1) / n2 % 8, 0) << "L=" << k.L << ": nothing would be staged";
    }
    Workload w;
    w.op = "hyena"; w.B = 1; w.L = k.L; w.l_max = k.L; w.H = k.H; w.order = k.order; w.dtype = "fp16"; w.seed = 23;
    Problem p = Problem::make(w);
    p.round_to("fp16");
    const bool exact = k.L <= 4096;
    const std::vector<double> ref = exact ? reference_output(p) : std::vector<double>{};
    OwnedCudaContext tc(be.allocator());
    for (const ColAccess acc : {ColAccess::kAuto, ColAccess::kScalar, ColAccess::kVec8}) {
      std::vector<float> out[2];
      for (const Stage st : {Stage::kOff, Stage::kOn}) {
        HyenaFusedOptions opt;
        opt.col_access = acc;
        opt.signal_access = acc;
        opt.stage = st;
        out[st == Stage::kOn] = fused_output(p, tc.ctx, opt);
      }
      const std::string name = "D=" + std::to_string(64 * k.H) + " L=" + std::to_string(k.L) + " order " +
                               std::to_string(k.order) + " access=" +
                               (acc == ColAccess::kAuto ? "auto" : acc == ColAccess::kVec8 ? "8-row" : "scalar");
      if (exact) expect_fused_close(out[1], ref, name + " staged vs float64");
      const auto c = compare(out[1], std::vector<double>(out[0].begin(), out[0].end()));
      std::printf("hyena-fused %s staged vs global: %s\n", name.c_str(), c.summary().c_str());
      EXPECT_EQ(c.nonfinite, 0u) << name;
      EXPECT_EQ(c.rel_l2, 0.0) << name << ": " << c.summary();
    }
  }
  be.release_cached();
}
// L = 3072 (64 × 128, R = 24; orders 2 and 3, where the middle step's fp32-prev source is not
// staged): small enough for the sanitizers.
TEST(GpuHyenaFused, StagedShortConvRowsMatchTheGlobalOnesShort) {
  REQUIRE_GPU(be);
  expect_staged_equals_global(*be, {StageCase{3072, 4, 2}, StageCase{3072, 4, 3}});
}
// L = 65536 (256 × 512, R = 128), 131000 (512 × 512, R = 256, the last row ragged) at D = 256;
// 516000 (1024 × 1024, R = 504) at D = 64, where N1 = 1024 has its own 8-row bound.
TEST(GpuHyenaFused, StagedShortConvRowsMatchTheGlobalOnesLong) {
  REQUIRE_GPU(be);
  expect_staged_equals_global(*be, {StageCase{65536, 4, 2}, StageCase{131000, 4, 2}, StageCase{516000, 1, 2}});
}

// pass B's cuFFTDx rows with 2 and 4 row pairs a block against one pair, where they apply
// (N2 ≤ 256): L = 1500 (N = 4096 = 64 × 64) at D = 256 and 1024, L = 3000 (64 × 128 wide at
// D = 256, 128 × 64 tall at D = 1024) against float64, L = 10000 (128 × 256 wide, 256 × 128
// tall) against hyena-cuda;
// the same FFTs on the same rows, so their outputs agree to rounding.
TEST(GpuHyenaFused, MultiPairRowBlocksMatchTheOnePairOnes) {
  REQUIRE_GPU(be);
  using RowPairs = HyenaFusedOptions::RowPairs;
  for (const int H : {4, 16}) {
    for (const std::int64_t L : {1500, 3000, 10000}) {
      const Problem p = fused_problem(L, H, 19);
      const bool exact = L <= 4096;
      const std::vector<double> ref = exact ? reference_output(p) : hyena_cuda_output(*be, p);
      OwnedCudaContext tc(be->allocator());
      std::vector<float> one;
      for (const RowPairs rp : {RowPairs::kOne, RowPairs::kTwo, RowPairs::kFour}) {
        HyenaFusedOptions opt;
        opt.row_pairs = rp;
        const int n = rp == RowPairs::kOne ? 1 : rp == RowPairs::kTwo ? 2 : 4;
        const std::string what = "D=" + std::to_string(64 * H) + " L=" + std::to_string(L) + " row pairs " +
                                 std::to_string(n);
        const std::vector<float> out = fused_output(p, tc.ctx, opt);
        expect_fused_close(out, ref, what + " vs " + (exact ? "float64" : "hyena-cuda"));
        if (n == 1) {
          one = out;
          continue;
        }
        const auto c = compare(out, std::vector<double>(one.begin(), one.end()));
        std::printf("hyena-fused %s vs one pair: %s\n", what.c_str(), c.summary().c_str());
        EXPECT_LE(c.rel_l2, 1e-3) << what << ": " << c.summary();
      }
    }
  }
  be->release_cached();
}

// pass B's row FFTs on tensor cores (N2 = 512: L = 40000 gives N = 2^17 = 256 × 512, ragged;
// L = 100000 gives 512 × 512), fp16 rows staged and direct, against cuFFTDx's, fp16 and fp32 spectra, D = 256, every output
// against hyena-cuda (fp32 cuFFT). Asking for them where N2 is not 512 is an error.
TEST(GpuHyenaFused, TensorCoreRowFftsMatchTheReference) {
  REQUIRE_GPU(be);
  using RowFft = HyenaFusedOptions::RowFft;
  for (const std::int64_t L : {40000, 100000}) {
    const Problem p = fused_problem(L, 4, 13);
    const std::vector<double> ref = hyena_cuda_output(*be, p);
    OwnedCudaContext tc(be->allocator());
    for (const bool half : {true, false}) {
      for (const RowFft row : {RowFft::kCufftdx, RowFft::kTensor, RowFft::kTensorDirect}) {
        if (!half && row == RowFft::kTensorDirect) continue;  // fp32 rows are never staged
        HyenaFusedOptions opt;
        opt.fp16_spectra = half;
        opt.row_fft = row;
        const char* name = row == RowFft::kTensor ? "tensor" : row == RowFft::kTensorDirect ? "tensor-direct" : "cufftdx";
        expect_fused_close(fused_output(p, tc.ctx, opt), ref,
                           "L=" + std::to_string(L) + " spectra=" + (half ? "fp16" : "fp32") + " rows=" + name +
                               " vs hyena-cuda");
      }
    }
  }
  {
    Workload w;
    w.op = "hyena"; w.B = 1; w.L = 3000; w.l_max = 3000; w.dtype = "fp16"; w.seed = 13;
    const Problem p = Problem::make(w);
    OwnedCudaContext tc(be->allocator());
    for (const RowFft row : {RowFft::kTensor, RowFft::kTensorDirect}) {
      HyenaFusedOptions opt;
      opt.row_fft = row;
      EXPECT_THROW(fused_output(p, tc.ctx, opt), InvalidArgument);
    }
  }
  be->release_cached();
}

// The benchmarks' A/B switches (no GPU needed): unset keeps the given options, each spelling
// sets its value, anything else is an error naming the variable.
TEST(HyenaFusedOptionsFromEnv, ParsesEverySwitchAndRejectsUnknownValues) {
  using Split = HyenaFusedOptions::Split;
  using RowFft = HyenaFusedOptions::RowFft;
  using ColFft = HyenaFusedOptions::ColFft;
  using Overlap = HyenaFusedOptions::Overlap;
  using ColAccess = HyenaFusedOptions::ColAccess;
  for (const char* n : kHyenaFusedEnvSwitches) unsetenv(n);
  HyenaFusedOptions base;
  base.tune_gemm = false;
  const HyenaFusedOptions same = hyena_fused_options_from_env(base);
  EXPECT_EQ(same.split, Split::kAuto);
  EXPECT_EQ(same.row_fft, RowFft::kAuto);
  EXPECT_EQ(same.col_fft, ColFft::kAuto);
  EXPECT_FALSE(same.tune_gemm);
  EXPECT_FALSE(same.gemm_enumerate);
  EXPECT_EQ(same.overlap, Overlap::kAuto);
  EXPECT_EQ(same.col_access, ColAccess::kAuto);
  EXPECT_EQ(same.signal_access, ColAccess::kAuto);
  EXPECT_EQ(same.row_pairs, HyenaFusedOptions::RowPairs::kAuto);
  EXPECT_EQ(same.stage, HyenaFusedOptions::Stage::kAuto);
  setenv("LONGMIX_FUSED_SPLIT", "tall", 1);
  setenv("LONGMIX_FUSED_ROW", "direct", 1);
  setenv("LONGMIX_FUSED_COL", "tensor", 1);
  setenv("LONGMIX_GEMM_TUNE", "1", 1);
  setenv("LONGMIX_FUSED_OVERLAP", "off", 1);
  setenv("LONGMIX_FUSED_ACCESS", "vec8", 1);
  setenv("LONGMIX_FUSED_SIGNAL_ACCESS", "scalar", 1);
  setenv("LONGMIX_FUSED_ROW_PAIRS", "4", 1);
  setenv("LONGMIX_FUSED_STAGE", "off", 1);
  const HyenaFusedOptions set = hyena_fused_options_from_env(base);
  EXPECT_EQ(set.stage, HyenaFusedOptions::Stage::kOff);
  EXPECT_EQ(set.row_pairs, HyenaFusedOptions::RowPairs::kFour);
  EXPECT_EQ(set.overlap, Overlap::kOff);
  EXPECT_EQ(set.col_access, ColAccess::kVec8);
  EXPECT_EQ(set.signal_access, ColAccess::kScalar);
  EXPECT_EQ(set.split, Split::kTall);
  EXPECT_EQ(set.row_fft, RowFft::kTensorDirect);
  EXPECT_EQ(set.col_fft, ColFft::kTensor);
  EXPECT_TRUE(set.tune_gemm);
  EXPECT_FALSE(set.gemm_enumerate);
  setenv("LONGMIX_GEMM_TUNE", "enumerate", 1);
  EXPECT_TRUE(hyena_fused_options_from_env(base).gemm_enumerate);
  EXPECT_TRUE(hyena_fused_options_from_env(base).tune_gemm);
  setenv("LONGMIX_GEMM_TUNE", "0", 1);
  EXPECT_FALSE(hyena_fused_options_from_env(base).tune_gemm);
  EXPECT_FALSE(hyena_fused_options_from_env(base).gemm_enumerate);
  setenv("LONGMIX_FUSED_COL", "tensr", 1);
  try {
    hyena_fused_options_from_env(base);
    ADD_FAILURE() << "LONGMIX_FUSED_COL=tensr accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("LONGMIX_FUSED_COL must be one of cufftdx, auto, tensor, not 'tensr'"),
              std::string::npos)
        << e.what();
  }
  for (const char* n : kHyenaFusedEnvSwitches) unsetenv(n);
}

// v21's staging layout (no GPU needed), for every plan shape it applies to (R % 8 == 0) from
// N1 = 64 to 2048 at D = 256 and 1024: every position a staged block's short convs read (the
// scalar path's taps t, t − 1, t − 2 of its rows n1 < N1/2 below L; the 8-row path's 16-byte runs
// at p, p − R, p − 2R) lies in the staged run; every staged area fits where it is put (the
// signal's four rows in the tile, pass A⁻¹'s two x0 rows and the filter's h rows and time grid in
// its rows n1 ≥ N1/2); every copy starts and ends on 16 bytes.
TEST(HyenaFusedStageLayout, EveryStagedLoadLiesInTheRunAndEveryRunFitsTheTile) {
  std::set<int> sizes;
  int shapes = 0;
  for (const std::int64_t D : {256, 1024}) {
    for (const std::int64_t L : {3072, 4096, 8192, 16384, 32768, 65536, 131000, 131072, 262144, 516000, 524288,
                                 1048576, 2097152}) {
      int N1 = 0, N2 = 0;
      hyena_fused_split(hyena_fused_fft_size(L), D, HyenaFusedOptions::Split::kAuto, &N1, &N2);
      const int R = static_cast<int>((L + N2 - 1) / N2), W = fused::col_width_of(N1);
      ASSERT_GT(W, 0) << "N1=" << N1;
      if (R % 8 != 0) continue;
      ++shapes;
      sizes.insert(N1);
      const std::string at = "L=" + std::to_string(L) + " D=" + std::to_string(D) + " N1=" + std::to_string(N1) +
                             " N2=" + std::to_string(N2) + " W=" + std::to_string(W) + " R=" + std::to_string(R);
      const long long tile = fused::col_tile_bytes(N1, W);
      EXPECT_LE(fused::stage_signal_bytes(W, R), tile) << at;
      EXPECT_LE(fused::stage_x0_bytes(W, R), tile / 2) << at;
      EXPECT_LE(fused::stage_filter_bytes(W, R), tile / 2) << at;
      EXPECT_EQ(tile / 2 % 16, 0) << at;
      EXPECT_EQ(fused::stage_span(W, R) * 2 % 16, 0) << at;
      EXPECT_EQ(2LL * W * R * 2 % 16, 0) << at;  // the filter's time grid after its two h rows
      bool inside = true;
      for (int col0 = W; col0 < N2 && inside; col0 += W) {  // every block but the first (W ≥ 2)
        const int first = fused::stage_first(col0, R), span = fused::stage_span(W, R);
        EXPECT_EQ(first * 2 % 16, 0) << at;
        for (int n1 = 0; n1 < N1 / 2 && inside; ++n1) {
          for (int w = 0; w < W; ++w) {
            for (int j = 0; j < 3; ++j) {  // the scalar path's loads
              const long long t = static_cast<long long>(n1) * N2 + col0 + w - j;
              if (t < 0 || t >= L) continue;
              const long long q = fused::pos_at(t, N2, R) - first;
              if (q < 0 || q >= span) {
                inside = false;
                ADD_FAILURE() << at << " col0=" << col0 << " t=" << t << " at " << q << " of " << span;
                break;
              }
            }
            if (n1 % 8 == 0 && n1 < R) {  // the 8-row path's runs of columns n2, n2 − 1, n2 − 2
              const long long p = static_cast<long long>(col0 + w) * R + n1 - first;
              if (p - 2 * R < 0 || p + 8 > span) {
                inside = false;
                ADD_FAILURE() << at << " col0=" << col0 << " 8-row run at " << p << " of " << span;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GE(shapes, 20);
  EXPECT_EQ(sizes, (std::set<int>{64, 128, 256, 512, 1024, 2048}));
}

// Where the column passes stage the short convs' rows (no GPU needed): R % 8 == 0, K = 3,
// cuFFTDx columns, and not switched off.
TEST(HyenaFusedStagePolicy, NeedsWholeRunsTheThreeTapFilterAndCufftdxColumns) {
  using Stage = HyenaFusedOptions::Stage;
  HyenaFusedOptions opt;  // kAuto: off until measured on a GPU
  EXPECT_FALSE(hyena_fused_stages(opt, 256, 3, false));
  EXPECT_FALSE(hyena_fused_stages_filter(opt, 256, false));
  opt.stage = Stage::kOn;
  EXPECT_TRUE(hyena_fused_stages(opt, 256, 3, false));
  EXPECT_TRUE(hyena_fused_stages(opt, 24, 3, false));
  EXPECT_FALSE(hyena_fused_stages(opt, 196, 3, false));  // L = 100000 at 512 × 512
  EXPECT_FALSE(hyena_fused_stages(opt, 256, 5, false));
  EXPECT_FALSE(hyena_fused_stages(opt, 256, 3, true));
  EXPECT_TRUE(hyena_fused_stages_filter(opt, 24, false));
  EXPECT_FALSE(hyena_fused_stages_filter(opt, 20, false));
  EXPECT_FALSE(hyena_fused_stages_filter(opt, 24, true));
  opt.fp16_spectra = false;  // the staged kernels are built for fp16 spectra only
  EXPECT_FALSE(hyena_fused_stages(opt, 256, 3, false));
  EXPECT_FALSE(hyena_fused_stages_filter(opt, 256, false));
  opt.fp16_spectra = true;
  opt.stage = Stage::kSignal;
  EXPECT_TRUE(hyena_fused_stages(opt, 256, 3, false));
  EXPECT_FALSE(hyena_fused_stages_filter(opt, 256, false));
  opt.stage = Stage::kOff;
  EXPECT_FALSE(hyena_fused_stages(opt, 256, 3, false));
  EXPECT_FALSE(hyena_fused_stages_filter(opt, 256, false));
}

// Where the filter's path overlaps the signal's (no GPU needed): auto up to 32k, never cached.
TEST(HyenaFusedOverlapPolicy, AutoUpTo32kNeverWithTheFilterCached) {
  using Overlap = HyenaFusedOptions::Overlap;
  HyenaFusedOptions opt;
  EXPECT_TRUE(hyena_fused_overlaps(opt, 4096, false));
  EXPECT_TRUE(hyena_fused_overlaps(opt, 32768, false));
  EXPECT_FALSE(hyena_fused_overlaps(opt, 32769, false));
  EXPECT_FALSE(hyena_fused_overlaps(opt, 4096, true));
  opt.overlap = Overlap::kOn;
  EXPECT_TRUE(hyena_fused_overlaps(opt, 1 << 20, false));
  EXPECT_FALSE(hyena_fused_overlaps(opt, 1 << 20, true));
  opt.overlap = Overlap::kOff;
  EXPECT_FALSE(hyena_fused_overlaps(opt, 4096, false));
}

// passes A and A⁻¹'s column FFTs on tensor cores (N1 = 512: L = 100000 gives N = 2^18 = 512 × 512,
// L = 200000 gives 512 × 1024, both ragged), against cuFFTDx's, fp16 and fp32 spectra, with pass
// B's rows on tensor cores and on cuFFTDx, D = 256, every output against hyena-cuda (fp32 cuFFT).
// Asking for them where N1 is not 512 is an error.
TEST(GpuHyenaFused, TensorCoreColumnFftsMatchTheReference) {
  REQUIRE_GPU(be);
  using ColFft = HyenaFusedOptions::ColFft;
  using RowFft = HyenaFusedOptions::RowFft;
  for (const std::int64_t L : {100000, 200000}) {
    const Problem p = fused_problem(L, 4, 17);
    const std::vector<double> ref = hyena_cuda_output(*be, p);
    OwnedCudaContext tc(be->allocator());
    for (const bool half : {true, false}) {
      for (const ColFft col : {ColFft::kCufftdx, ColFft::kTensor}) {
        for (const RowFft row : {RowFft::kCufftdx, RowFft::kAuto}) {
          if (L > 131072 && row == RowFft::kAuto) continue;  // N2 = 1024: cuFFTDx rows only
          HyenaFusedOptions opt;
          opt.fp16_spectra = half;
          opt.col_fft = col;
          opt.row_fft = row;
          expect_fused_close(fused_output(p, tc.ctx, opt), ref,
                             "L=" + std::to_string(L) + " spectra=" + (half ? "fp16" : "fp32") +
                                 " cols=" + (col == ColFft::kTensor ? "tensor" : "cufftdx") +
                                 " rows=" + (row == RowFft::kAuto ? "auto" : "cufftdx") + " vs hyena-cuda");
        }
      }
    }
  }
  {
    Workload w;
    w.op = "hyena"; w.B = 1; w.L = 40000; w.l_max = 40000; w.dtype = "fp16"; w.seed = 17;
    const Problem p = Problem::make(w);  // N = 2^17 = 256 × 512
    OwnedCudaContext tc(be->allocator());
    HyenaFusedOptions opt;
    opt.col_fft = ColFft::kTensor;
    EXPECT_THROW(fused_output(p, tc.ctx, opt), InvalidArgument);
  }
  be->release_cached();
}

// Every flash-own kernel variant, O and LSE against a float64 reference: ragged L (not a
// multiple of any tile), causal and not, fp16 and bf16, packed (B, L, H, d) rows and the
// layer's qkv rows (stride 3D); O poisoned with NaN first.
using FlashOwnShape = std::tuple<std::int64_t, bool, std::string>;
class GpuFlashOwn : public ::testing::TestWithParam<FlashOwnShape> {};

TEST_P(GpuFlashOwn, EveryVariantMatchesFloat64Reference) {
  REQUIRE_GPU(be);
  auto [d, causal, dtype] = GetParam();
  const DType t = parse_dtype(dtype);
  CudaContext ctx;
  ctx.alloc = &be->allocator();
  CUDA_CHECK(cudaStreamCreate(&ctx.stream));
  for (const std::int64_t L : {1, 77, 200, 513, 1000}) {
    for (const std::int64_t ld_mult : {1, 3}) {
      const std::int64_t B = 2, H = L >= 1000 ? 2 : 3, D = H * d, ld = ld_mult * D;
      AttentionParams p{B, L, H, d, causal, 0};
      std::vector<float> q(B * L * ld), k(B * L * ld), v(B * L * ld);
      Rng rng(static_cast<std::uint64_t>(L * 31 + d + ld_mult));
      for (auto& x : q) x = static_cast<float>(3.0 * rng.normal());  // sharp rows: the running max moves
      for (auto& x : k) x = static_cast<float>(rng.normal());
      for (auto& x : v) x = static_cast<float>(rng.uniform(-1, 1));
      for (auto* a : {&q, &k, &v}) round_to_dtype(*a, dtype);
      // float64 reference: O (B, L, H, d), LSE (B, H, L).
      std::vector<double> oref(B * L * D), lref(B * H * L);
      const double scale = 1.0 / std::sqrt(double(d));
      std::vector<double> sc(L);
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < H; ++h)
          for (std::int64_t i = 0; i < L; ++i) {
            const std::int64_t n = causal ? i + 1 : L;
            double mx = -1e300;
            for (std::int64_t j = 0; j < n; ++j) {
              double acc = 0;
              for (std::int64_t c = 0; c < d; ++c)
                acc += double(q[(b * L + i) * ld + h * d + c]) * double(k[(b * L + j) * ld + h * d + c]);
              sc[j] = acc * scale;
              mx = std::max(mx, sc[j]);
            }
            double sum = 0;
            for (std::int64_t j = 0; j < n; ++j) sum += (sc[j] = std::exp(sc[j] - mx));
            for (std::int64_t c = 0; c < d; ++c) {
              double acc = 0;
              for (std::int64_t j = 0; j < n; ++j) acc += sc[j] * double(v[(b * L + j) * ld + h * d + c]);
              oref[(b * L + i) * D + h * d + c] = acc / sum;
            }
            lref[(b * H + h) * L + i] = mx + std::log(sum);
          }
      const Buffer<char> dq = upload_as(*ctx.alloc, q, t, ctx.stream), dk = upload_as(*ctx.alloc, k, t, ctx.stream),
                         dv = upload_as(*ctx.alloc, v, t, ctx.stream);
      Buffer<char> o(*ctx.alloc, B * L * D * 2);
      Buffer<float> lse(*ctx.alloc, B * H * L);
      for (const auto& variant : flash_own_variants(p)) {
        FlashOwnArgs a;
        a.q = dq.data(); a.k = dk.data(); a.v = dv.data(); a.o = o.data(); a.lse = lse.data();
        a.ld_in = ld; a.ld_o = D;
        Buffer<char> ws = flash_own_workspace(p, variant, *ctx.alloc, ctx.stream);
        a.workspace = ws.data(); a.workspace_bytes = ws.bytes();
        // Short grids are cut over keys here (up to 8 chunks of one key tile at L = 1000).
        if (variant.find("-split") != std::string::npos && L >= 513) {
          EXPECT_GT(ws.bytes(), 0u) << variant;
        }
        if (variant.find("-persist") != std::string::npos) {
          EXPECT_GT(ws.bytes(), 0u) << variant;
        }
        // Every call is checked; the second and third find the counters the one before left.
        // Persistent grids run with one CTA per SM first (one item each at these sizes), then
        // with 3 CTAs, so that each CTA works through many items of different lengths.
        for (int call = 0; call < 3; ++call) {
          a.max_ctas = call == 0 ? 0 : 3;
          fill_nan_cuda(t, o.data(), B * L * D, ctx.stream);
          CUDA_CHECK(cudaMemsetAsync(lse.data(), 0xff, lse.bytes(), ctx.stream));  // NaN
          flash_own_forward(p, t, a, ctx.stream, variant);
          CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
          const auto co = compare(download_as(o, B * L * D, t, *ctx.alloc, ctx.stream), oref);
          std::vector<float> lh(B * H * L);
          CUDA_CHECK(cudaMemcpy(lh.data(), lse.data(), lse.bytes(), cudaMemcpyDeviceToHost));
          const auto cl = compare(lh, lref);
          const std::string what = variant + " L=" + std::to_string(L) + " H=" + std::to_string(H) + " ld=" +
                                   std::to_string(ld) + " " + dtype + (causal ? " causal" : "") + " call " +
                                   std::to_string(call);
          EXPECT_EQ(co.nonfinite, 0u) << what;
          EXPECT_LE(co.rel_l2, tolerance("flash", dtype)) << what << ": O " << co.summary();
          EXPECT_EQ(cl.nonfinite, 0u) << what;
          EXPECT_LE(cl.max_abs, 2e-3) << what << ": LSE " << cl.summary();
        }
      }
    }
  }
  cudaStreamDestroy(ctx.stream);
  be->release_cached();
}

INSTANTIATE_TEST_SUITE_P(Variants, GpuFlashOwn,
    ::testing::Combine(::testing::Values(64, 128), ::testing::Bool(), ::testing::Values("fp16", "bf16")));
#endif  // LONGMIX_HAVE_CUDA

TEST(GpuMemory, CapMakesStandardAttentionOomAndTheAllocatorRecovers) {
  REQUIRE_GPU(be);
  Workload w;
  w.op = "attention"; w.scope = "core"; w.L = 16384; w.dtype = "fp16";
  const std::size_t held = be->allocator().current();
  be->allocator().set_cap(held + (256ull << 20));  // 256 MiB: scores need 4·16k²·2 B = 2 GiB
  const Row r = measure_row(*be, "attention-cuda", w, RepPolicy{1, 1, 0, 1});
  be->allocator().set_cap(std::nullopt);
  EXPECT_EQ(r.status, "OOM") << r.note;
  EXPECT_EQ(be->allocator().current(), held);
  Workload f = w;
  f.op = "flash";
  be->allocator().set_cap(held + (256ull << 20));
  const Row rf = measure_row(*be, "flash-cudnn", f, RepPolicy{1, 1, 0, 1});
  be->allocator().set_cap(std::nullopt);
  EXPECT_EQ(rf.status, "ok") << rf.note;
}

// Every byte the libraries use on the device comes from the project's allocator: the driver's
// count of used memory grows by what the allocator reserved, within a few MB.
TEST(GpuMemory, DriverSeesWhatTheAllocatorReserved) {
  REQUIRE_GPU(be);
  for (const std::string impl : {"hyena-cuda", "hyena-fused", "flash-cudnn", "flash-own", "attention-cuda"}) {
    Workload w;
    w.op = impl.rfind("hyena", 0) == 0 ? "hyena" : impl.rfind("flash", 0) == 0 ? "flash" : "attention";
    w.L = 32768; w.l_max = 32768; w.dtype = "fp16";
    be->release_cached();
    const Row r = measure_row(*be, impl, w, RepPolicy{1, 1, 0, 1});
    ASSERT_EQ(r.status, "ok") << impl << ": " << r.note;
    ASSERT_TRUE(r.device_GB && r.reserved_GB);
    EXPECT_NEAR(*r.device_GB, *r.reserved_GB, 64.0 / 1024) << impl << " (GiB)";
    EXPECT_GE(*r.reserved_GB + 1e-9, *r.mem_GB - *r.work_GB) << impl;
  }
}

TEST(GpuBadInput, UnsupportedHeadDimIsAClearMessage) {
  REQUIRE_GPU(be);
  Workload w;
  w.op = "flash"; w.d = 96; w.dtype = "fp16";
  EXPECT_NE(be->unsupported("flash-cudnn", w).find("head dims 64 and 128"), std::string::npos);
  EXPECT_NE(be->unsupported("flash-own", w).find("head dims 64 and 128"), std::string::npos);
  w.dtype = "fp32";
  EXPECT_NE(be->unsupported("hyena-cuda", w).find("fp16 or bf16"), std::string::npos);
  EXPECT_NE(be->unsupported("hyena-fused", w).find("fp16 or bf16"), std::string::npos);
  w.dtype = "fp16";
  w.op = "hyena";
  w.L = 4 << 20;
  EXPECT_NE(be->unsupported("hyena-fused", w).find("L up to"), std::string::npos);
}

#ifdef LONGMIX_HAVE_CUDA
// Host-side limits of hyena-cuda (no GPU needed): channels are transformed in pairs.
TEST(HyenaCudaLimits, OddWidthAndLongShortFilterAreClearMessages) {
  HyenaConfig cfg;
  cfg.D = 63;
  EXPECT_NE(hyena_cuda_unsupported(cfg, DType::kF16).find("odd d_model 63"), std::string::npos);
  cfg.D = 64;
  EXPECT_EQ(hyena_cuda_unsupported(cfg, DType::kF16), "");
  cfg.short_filter_order = 10;
  EXPECT_NE(hyena_cuda_unsupported(cfg, DType::kBF16).find("up to 9"), std::string::npos);
}

// flash-own's -split plan (host-side, no GPU needed): every (query block, key tile) in exactly one
// item, items longest first and no longer than the chunk, a cut only where the grid is short.
TEST(FlashOwnSplitPlan, CoversEveryKeyTileOnceLongestFirst) {
  struct Case {
    std::int64_t B, L, H;
    bool causal, cut;
  };
  for (const Case& k : {Case{1, 4096, 4, true, true}, Case{2, 1000, 2, false, true}, Case{2, 1000, 2, true, true},
                        Case{1, 4096, 16, true, false}, Case{1, 16384, 4, true, false}, Case{1, 1, 1, true, false},
                        Case{1, 131072, 4, true, false}, Case{1, 16384, 1, true, true}}) {
    const AttentionParams p{k.B, k.L, k.H, 64, k.causal, 0};
    const FlashSplitPlan sp = flash_own_split_plan(p, 132);
    const std::string what = "L=" + std::to_string(k.L) + " H=" + std::to_string(k.H) + (k.causal ? " causal" : "");
    EXPECT_EQ(sp.cut(), k.cut) << what << ": chunk " << sp.chunk << " of " << sp.n_max;
    EXPECT_EQ(sp.num_m, (k.L + 127) / 128) << what;
    if (!sp.cut()) {
      EXPECT_TRUE(sp.items.empty()) << what;
      continue;
    }
    EXPECT_LE(static_cast<int>(sp.items.size()), kFlashSplitMaxItems) << what;
    std::vector<std::vector<int>> seen(sp.num_m);  // per block: how often each key tile is visited
    int last_len = sp.chunk, s_max = 0;
    for (const auto& [m, c] : sp.items) {
      ASSERT_GE(m, 0);
      ASSERT_LT(m, sp.num_m);
      const int n = k.causal ? std::min(sp.num_m, m + 1) : sp.num_m;
      seen[m].resize(n);
      const int len = std::min(sp.chunk, n - c * sp.chunk);
      ASSERT_GT(len, 0) << what << ": empty chunk " << c << " of block " << m;
      EXPECT_LE(len, last_len) << what << ": not longest first";
      last_len = len;
      for (int t = c * sp.chunk; t < c * sp.chunk + len; ++t) ++seen[m][t];
      s_max = std::max(s_max, c + 1);
    }
    EXPECT_EQ(s_max, sp.s_max) << what;
    for (int m = 0; m < sp.num_m; ++m) {
      const int n = k.causal ? std::min(sp.num_m, m + 1) : sp.num_m;
      ASSERT_EQ(static_cast<int>(seen[m].size()), n) << what << ": block " << m << " has no item";
      for (int t = 0; t < n; ++t) EXPECT_EQ(seen[m][t], 1) << what << ": block " << m << " tile " << t;
    }
  }
  // 4k, H = 4: 128 blocks for 132 SMs, the longest 32 tiles against a mean of 16: chunks of 8.
  EXPECT_EQ(flash_own_split_plan(AttentionParams{1, 4096, 4, 64, true, 0}, 132).chunk, 8);
}
#endif

#ifdef LONGMIX_HAVE_CUDA
// The tuner's screening (host-only): within the band of the fastest, fastest first, capped, and
// the variant it must keep.
TEST(FlashOwnTuneFinalists, KeepsTheBandFastestFirstAndCaps) {
  const std::vector<std::pair<float, std::string>> t{{1.10f, "a"}, {1.00f, "b"}, {1.03f, "c"}, {1.039f, "d"},
                                                      {1.02f, "e"}, {2.0f, "f"}};
  EXPECT_EQ(flash_own_tune_finalists(t, 0.04, 8), (std::vector<std::string>{"b", "e", "c", "d"}));
  EXPECT_EQ(flash_own_tune_finalists(t, 0.04, 2), (std::vector<std::string>{"b", "e"}));
  EXPECT_EQ(flash_own_tune_finalists(t, 0.0, 8), (std::vector<std::string>{"b"}));
  EXPECT_EQ(flash_own_tune_finalists({{1.0f, "x"}, {1.0f, "y"}}, 0.0, 8), (std::vector<std::string>{"x", "y"}));
  // `also` joins the band's finalists once, after them, even past the cap
  EXPECT_EQ(flash_own_tune_finalists(t, 0.04, 2, "f"), (std::vector<std::string>{"b", "e", "f"}));
  EXPECT_EQ(flash_own_tune_finalists(t, 0.04, 8, "c"), (std::vector<std::string>{"b", "e", "c", "d"}));
}
#endif

#ifdef LONGMIX_HAVE_CUDA
// The tuner's choice on a fake timer (host-only): warm-ups, two screening calls each in shuffled
// turns, the finalists (band, and the fastest -persist variant when asked) to >= 9 calls and
// >= 40 ms each, the lowest median.
TEST(FlashOwnTunePick, ScreensInTurnsThenTimesTheFinalists) {
  const std::vector<std::string> v{"a", "b-persist", "c", "d"};
  const std::map<std::string, float> ms{{"a", 9.2f}, {"b-persist", 9.5f}, {"c", 9.0f}, {"d", 12.0f}};
  for (const bool with_persist : {false, true}) {
    std::vector<std::string> calls;
    const std::string pick = flash_own_tune_pick(v, with_persist, [&](const std::string& x) {
      calls.push_back(x);
      return ms.at(x);
    });
    EXPECT_EQ(pick, "c");
    std::map<std::string, int> n;
    for (const auto& x : calls) ++n[x];
    // a and c are within 4% of c; b-persist (5.6% off) joins them only with_persist; d never.
    EXPECT_EQ(n["d"], 3);
    EXPECT_EQ(n["c"], 3 + 1 + 9);
    EXPECT_EQ(n["a"], 3 + 1 + 9);
    EXPECT_EQ(n["b-persist"], with_persist ? 3 + 1 + 9 : 3);
    // warm-ups in the list's order, then the screening's first round: every variant once
    ASSERT_GE(calls.size(), 8u);
    EXPECT_EQ(std::vector<std::string>(calls.begin(), calls.begin() + 4), v);
    EXPECT_EQ(std::set<std::string>(calls.begin() + 4, calls.begin() + 8), std::set<std::string>(v.begin(), v.end()));
  }
  // Short calls: the finalists run until each has 40 ms of calls (0.5 ms a call: 80 calls).
  std::map<std::string, int> n;
  flash_own_tune_pick({"x", "y"}, false, [&](const std::string& x) {
    ++n[x];
    return x == "x" ? 0.5f : 0.505f;
  });
  EXPECT_EQ(n["x"], 3 + 1 + 80);
  EXPECT_EQ(n["y"], 3 + 1 + 80);
  // The median decides, not the best call: y has one very fast call among slow ones.
  int y_calls = 0;
  EXPECT_EQ(flash_own_tune_pick({"x", "y"}, false,
                                [&](const std::string& x) { return x == "x" ? 10.0f : (++y_calls == 5 ? 1.0f : 10.3f); }),
            "x");
  EXPECT_EQ(flash_own_tune_pick({"only"}, true, [](const std::string&) -> float { throw std::logic_error("timed"); }),
            "only");
}
#endif

#ifdef LONGMIX_HAVE_CUDA
// The persistent grids' item order (host copy of the kernel's mapping): every (query block, b·h)
// once; within a group of heads, longest block first over the group's heads; group 1 head-major;
// -lpt's group as many heads as fit half the L2.
TEST(FlashOwnPersistOrder, EveryItemOnceLongestFirstWithinGroupsOfHeads) {
  for (const bool causal : {true, false})
    for (const auto& [bh, num_m] : std::vector<std::pair<int, int>>{{1, 1}, {4, 32}, {16, 7}, {5, 3}, {3, 1}})
      for (int group = 1; group <= bh; ++group) {
        const auto order = flash_own_persist_order(bh, num_m, group, causal);
        ASSERT_EQ(order.size(), static_cast<std::size_t>(bh * num_m));
        std::set<std::pair<int, int>> seen(order.begin(), order.end());
        EXPECT_EQ(seen.size(), order.size()) << bh << " " << num_m << " " << group;
        for (std::size_t j = 0; j < order.size(); ++j) {
          const auto [m, h] = order[j];
          ASSERT_TRUE(m >= 0 && m < num_m && h >= 0 && h < bh);
          EXPECT_EQ(static_cast<int>(j) / (group * num_m), h / group);  // a group's items together
          if (j == 0) continue;
          const auto [pm, ph] = order[j - 1];
          if (ph / group != h / group) continue;
          // within a group: blocks in order (longest first when causal), heads in turn
          const int step = causal ? pm - m : m - pm;
          EXPECT_TRUE((step == 0 && h == ph + 1) || (step == 1 && h < ph) || (step == 1 && h == ph))
              << "bh " << bh << " num_m " << num_m << " group " << group << " item " << j;
        }
      }
  // group 1 is head-major: head 0's blocks, longest first, then head 1's
  EXPECT_EQ(flash_own_persist_order(2, 3, 1, true),
            (std::vector<std::pair<int, int>>{{2, 0}, {1, 0}, {0, 0}, {2, 1}, {1, 1}, {0, 1}}));
  // all heads at once: each block over every head
  EXPECT_EQ(flash_own_persist_order(2, 3, 2, true),
            (std::vector<std::pair<int, int>>{{2, 0}, {2, 1}, {1, 0}, {1, 1}, {0, 0}, {0, 1}}));
  // 5 heads in groups of 2: the last group holds one
  EXPECT_EQ(flash_own_persist_order(5, 2, 2, false),
            (std::vector<std::pair<int, int>>{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {0, 4}, {1, 4}}));
  const std::size_t l2 = 50u << 20;  // the H100's and H200's 50 MiB
  EXPECT_EQ(flash_own_lpt_group(4096, 64, 16, l2), 16);    // 1 MiB of K/V a head: all 16
  EXPECT_EQ(flash_own_lpt_group(16384, 64, 16, l2), 6);    // 4 MiB
  EXPECT_EQ(flash_own_lpt_group(32768, 64, 16, l2), 3);
  EXPECT_EQ(flash_own_lpt_group(65536, 64, 16, l2), 1);    // 16 MiB: head-major
  EXPECT_EQ(flash_own_lpt_group(131072, 64, 4, l2), 1);
  EXPECT_EQ(flash_own_lpt_group(16384, 128, 4, l2), 3);
  EXPECT_EQ(flash_own_lpt_group(4096, 64, 16, 0), 1);      // no L2 reported
}
#endif

#ifdef LONGMIX_HAVE_CUDA
// The column passes' 8-row tasks (host-only): over one block's tasks every (row, column) of its
// N1/2 × W tile comes once; a task inside the stored runs (n1 < R) reads one aligned run of 8
// positions within the row, which hold its 8 times (and, at n2 ≥ 2, the runs R and 2R before
// hold the times 1 and 2 earlier); a task past the runs holds only times ≥ L.
TEST(HyenaFusedVec8Tasks, CoverTheTileOnceWithAlignedRunsOfTheRightTimes) {
  struct Case {
    int N1, N2, W;
    long long L;
  };
  for (const Case c : {Case{64, 64, 16, 1000}, Case{64, 128, 16, 3072}, Case{256, 512, 8, 65536},
                       Case{512, 512, 8, 131000}, Case{512, 512, 8, 131072}, Case{1024, 2048, 4, 1 << 20}}) {
    const int R = static_cast<int>((c.L + c.N2 - 1) / c.N2);
    ASSERT_EQ(R % 8, 0) << "case needs R % 8 == 0";
    const long long Lp = static_cast<long long>(c.N2) * R;
    const std::string what = "N1=" + std::to_string(c.N1) + " N2=" + std::to_string(c.N2) + " L=" + std::to_string(c.L);
    for (int col0 = 0; col0 < c.N2; col0 += c.W) {
      std::vector<int> seen(static_cast<std::size_t>(c.N1 / 2 * c.W), 0);
      for (int task = 0; task < c.N1 / 16 * c.W; ++task) {
        const fused::Vec8Task k = fused::vec8_task(task, c.W, col0, c.N2, R);
        ASSERT_EQ(k.n2, col0 + k.w) << what;
        for (int i = 0; i < 8; ++i) ++seen[static_cast<std::size_t>((k.n1 + i) * c.W + k.w)];
        if (k.n1 >= R) {
          EXPECT_GE(k.t0, c.L) << what << " task " << task;
          continue;
        }
        ASSERT_EQ(k.p % 8, 0) << what;
        ASSERT_LE(k.p + 8, Lp) << what;
        for (int i = 0; i < 8; ++i) {
          const long long t = k.t0 + static_cast<long long>(i) * c.N2;
          if (t >= c.L) continue;
          ASSERT_EQ(fused::pos_at(t, c.N2, R), k.p + i) << what << " t=" << t;
          if (k.n2 >= 2) {
            ASSERT_EQ(fused::pos_at(t - 1, c.N2, R), k.p - R + i) << what << " t=" << t;
            ASSERT_EQ(fused::pos_at(t - 2, c.N2, R), k.p - 2 * R + i) << what << " t=" << t;
          }
        }
      }
      for (std::size_t j = 0; j < seen.size(); ++j) ASSERT_EQ(seen[j], 1) << what << " col0=" << col0 << " slot " << j;
    }
  }
}

// Where the column passes take the 8-row accesses (host-only): forced either way, or by kAuto from
// B·D·L = 2^23 on; never where a column's run of R rows is not a multiple of 8.
TEST(HyenaFusedVec8Choice, AutoFromTheMeasuredSizeOnAndOnlyWhereRunsAlign) {
  using A = HyenaFusedOptions::ColAccess;
  HyenaFusedOptions o;
  EXPECT_EQ(o.col_access, A::kAuto);
  EXPECT_FALSE(hyena_fused_uses_vec8(o, 1, 256, 4096, 64));        // 4k, D = 256: scalar measured faster
  EXPECT_TRUE(hyena_fused_uses_vec8(o, 1, 1024, 16384, 32));       // 16k, D = 1024: 2^24
  EXPECT_TRUE(hyena_fused_uses_vec8(o, 1, 256, 32768, 128));       // 32k, D = 256: 2^23, the cut
  EXPECT_FALSE(hyena_fused_uses_vec8(o, 1, 256, 16384, 64));       // 16k, D = 256: 2^22
  EXPECT_TRUE(hyena_fused_uses_vec8(o, 1, 256, 131072, 256));      // 128k, D = 256
  EXPECT_TRUE(hyena_fused_uses_vec8(o, 4, 256, 16384, 32));        // the batch counts
  EXPECT_FALSE(hyena_fused_uses_vec8(o, 1, 256, 131000, 256 - 1)); // R % 8 != 0
  o.col_access = A::kVec8;
  EXPECT_TRUE(hyena_fused_uses_vec8(o, 1, 256, 4096, 64));
  EXPECT_FALSE(hyena_fused_uses_vec8(o, 1, 256, 1000, 63));
  o.col_access = A::kScalar;
  EXPECT_FALSE(hyena_fused_uses_vec8(o, 1, 256, 1 << 20, 2048));
}

// The signal's pass A: kAuto takes the 8-row path only where the other column passes do and the
// column FFTs have N1 ≥ 1024 points (scalar measured faster at N1 = 512); either choice
// overrides the other passes' for that pass alone, and no choice takes the 8-row path where the
// runs do not align.
TEST(HyenaFusedVec8Choice, SignalPassByColumnSizeOrForced) {
  using A = HyenaFusedOptions::ColAccess;
  HyenaFusedOptions o;
  EXPECT_EQ(o.signal_access, A::kAuto);
  EXPECT_FALSE(hyena_fused_signal_uses_vec8(o, 1, 256, 131072, 256, 512));   // 128k: N1 = 512
  EXPECT_TRUE(hyena_fused_uses_vec8(o, 1, 256, 131072, 256));                // the other passes: 8-row
  EXPECT_TRUE(hyena_fused_signal_uses_vec8(o, 1, 256, 1 << 20, 512, 1024));  // 1M: N1 = 1024
  EXPECT_TRUE(hyena_fused_signal_uses_vec8(o, 1, 1024, 524288, 512, 1024));  // 512k, D = 1024
  EXPECT_FALSE(hyena_fused_signal_uses_vec8(o, 1, 256, 4096, 64, 1024));     // below the 8-row cut
  o.col_access = A::kScalar;
  EXPECT_FALSE(hyena_fused_signal_uses_vec8(o, 1, 256, 1 << 20, 512, 1024)); // follows a forced scalar
  o.signal_access = A::kScalar;
  o.col_access = A::kAuto;
  EXPECT_FALSE(hyena_fused_signal_uses_vec8(o, 1, 256, 1 << 20, 512, 1024));
  EXPECT_TRUE(hyena_fused_uses_vec8(o, 1, 256, 1 << 20, 512));  // the other passes keep theirs
  o.signal_access = A::kVec8;
  o.col_access = A::kScalar;
  EXPECT_TRUE(hyena_fused_signal_uses_vec8(o, 1, 256, 4096, 64, 64));
  EXPECT_FALSE(hyena_fused_uses_vec8(o, 1, 256, 4096, 64));
  EXPECT_FALSE(hyena_fused_signal_uses_vec8(o, 1, 256, 1000, 63, 64));
}

// pass B's row pairs a block (no GPU needed): auto is four where N2 ≤ 256 and one past it; 1, 2
// or 4 when asked, but never more than one past 256.
TEST(HyenaFusedRowPairs, FourByDefaultAndOnlyForShortRows) {
  using RowPairs = HyenaFusedOptions::RowPairs;
  HyenaFusedOptions o;
  for (const std::int64_t N2 : {64, 128, 256}) EXPECT_EQ(hyena_fused_row_pairs(o, N2), 4) << N2;
  for (const std::int64_t N2 : {512, 1024, 2048}) EXPECT_EQ(hyena_fused_row_pairs(o, N2), 1) << N2;
  o.row_pairs = RowPairs::kTwo;
  EXPECT_EQ(hyena_fused_row_pairs(o, 64), 2);
  EXPECT_EQ(hyena_fused_row_pairs(o, 256), 2);
  EXPECT_EQ(hyena_fused_row_pairs(o, 512), 1);
  o.row_pairs = RowPairs::kFour;
  EXPECT_EQ(hyena_fused_row_pairs(o, 128), 4);
  EXPECT_EQ(hyena_fused_row_pairs(o, 1024), 1);
  o.row_pairs = RowPairs::kOne;
  EXPECT_EQ(hyena_fused_row_pairs(o, 128), 1);
}

// gemm_tune_cuda over the heuristic's candidates alone and with the enumerated configurations:
// the choice is one that runs, heuristic_ms is timed, and the product it then computes (fp16,
// strided batches with a bias, as the hyena-fused projections' shapes) matches float64.
TEST(GpuGemmTune, EnumeratedChoiceComputesTheProduct) {
  REQUIRE_GPU(be);
  OwnedCudaContext owned(be->allocator());
  CudaContext& ctx = owned.ctx;
  const std::int64_t m = 192, n = 40, k = 128;
  const int batch = 3;
  // Column-major, op(A) = Aᵀ (A stored k × m), B (k × n) per batch, D (m × n) per batch.
  Rng rng(11);
  std::vector<float> A(k * m), B(batch * k * n), bias(m);
  for (auto& x : A) x = static_cast<float>(rng.uniform(-1, 1));
  for (auto& x : B) x = static_cast<float>(rng.uniform(-1, 1));
  for (auto& x : bias) x = static_cast<float>(rng.uniform(-1, 1));
  const DType t = DType::kF16;
  const Buffer<char> dA = upload_as(*ctx.alloc, A, t, ctx.stream), dB = upload_as(*ctx.alloc, B, t, ctx.stream),
                     dbias = upload_as(*ctx.alloc, bias, t, ctx.stream);
  Buffer<char> dD(*ctx.alloc, batch * m * n * dtype_size(t)), flush(*ctx.alloc, std::size_t(64) << 20);
  const auto Ah = download_as(dA, A.size(), t, *ctx.alloc, ctx.stream),
             Bh = download_as(dB, B.size(), t, *ctx.alloc, ctx.stream),
             bh = download_as(dbias, bias.size(), t, *ctx.alloc, ctx.stream);
  std::vector<double> ref(batch * m * n);
  for (int j = 0; j < batch; ++j)
    for (std::int64_t c = 0; c < n; ++c)
      for (std::int64_t r = 0; r < m; ++r) {
        double acc = bh[r];
        for (std::int64_t i = 0; i < k; ++i) acc += double(Ah[r * k + i]) * double(Bh[j * k * n + c * k + i]);
        ref[j * m * n + c * m + r] = acc;
      }
  GemmArgs g;
  g.ta = true; g.m = m; g.n = n; g.k = k;
  g.A = dA.data(); g.lda = k; g.B = dB.data(); g.ldb = k; g.D = dD.data(); g.ldd = m; g.bias = dbias.data();
  g.batch = batch; g.sb = k * n; g.sd = m * n;
  for (const bool enumerate : {false, true}) {
    const GemmTuning r = gemm_tune_cuda(t, g, ctx, flush.data(), flush.bytes(), 8, enumerate);
    EXPECT_GT(r.candidates, 0) << enumerate;
    EXPECT_GE(r.chosen, 0) << enumerate;
    EXPECT_GT(r.chosen_ms, 0.0f) << enumerate;
    EXPECT_GT(r.heuristic_ms, 0.0f) << enumerate;
    EXPECT_LE(r.chosen_ms, r.heuristic_ms) << enumerate;
    EXPECT_FALSE(r.chosen_config.empty()) << enumerate;
    if (!enumerate) {
      EXPECT_EQ(r.enumerated, 0);
    }
    EXPECT_LE(r.enumerated, kGemmEnumerateMax);
    std::printf("gemm_tune_cuda enumerate=%d: %d candidates, %d enumerated, chose %d (%s) %.4f ms, heuristic %.4f\n",
                int(enumerate), r.candidates, r.enumerated, r.chosen, r.chosen_config.c_str(), r.chosen_ms,
                r.heuristic_ms);
    fill_nan_cuda(t, dD.data(), batch * m * n, ctx.stream);
    gemm_cuda(t, g, ctx);
    const auto c = compare(download_as(dD, batch * m * n, t, *ctx.alloc, ctx.stream), ref);
    EXPECT_EQ(c.nonfinite, 0u) << enumerate;
    EXPECT_LT(c.rel_l2, 2e-3) << enumerate;
  }
  be->release_cached();
}

// The tuner's random inputs: in range, not constant, the same for the same seed.
TEST(GpuFillUniform, InRangeSpreadAndReproducible) {
  REQUIRE_GPU(be);
  CudaContext ctx;
  ctx.alloc = &be->allocator();
  CUDA_CHECK(cudaStreamCreate(&ctx.stream));
  for (const DType t : {DType::kF16, DType::kBF16, DType::kF32}) {
    const std::size_t n = 100003;
    Buffer<char> a(*ctx.alloc, n * dtype_size(t)), b(*ctx.alloc, n * dtype_size(t));
    fill_uniform_cuda(t, a.data(), n, -1.0f, 1.0f, 7, ctx.stream);
    fill_uniform_cuda(t, b.data(), n, -1.0f, 1.0f, 7, ctx.stream);
    const auto x = download_as(a, n, t, *ctx.alloc, ctx.stream), y = download_as(b, n, t, *ctx.alloc, ctx.stream);
    double sum = 0, sq = 0;
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_GE(x[i], -1.0f) << i;
      ASSERT_LE(x[i], 1.0f) << i;
      ASSERT_EQ(x[i], y[i]) << i;
      sum += x[i];
      sq += double(x[i]) * x[i];
    }
    EXPECT_NEAR(sum / n, 0.0, 0.01) << "dtype " << static_cast<int>(t);
    EXPECT_NEAR(sq / n, 1.0 / 3.0, 0.01) << "dtype " << static_cast<int>(t);  // the variance of U(-1, 1)
  }
  cudaStreamDestroy(ctx.stream);
  be->release_cached();
}

// The tuner picks one of its candidates (the "ws-" family on Hopper), and the same one again.
TEST(GpuFlashOwnTune, PicksACandidateAndCachesIt) {
  REQUIRE_GPU(be);
  OwnedCudaContext tc(be->allocator());
  CudaContext& ctx = tc.ctx;
  for (const std::int64_t d : {64, 128}) {
    const AttentionParams p{1, 3000, 4, d, true, 0};
    const auto cands = flash_own_tune_candidates(p);
    ASSERT_FALSE(cands.empty());
    int cc_major = 0, dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, dev));
    for (const auto& v : cands) {
      if (cc_major == 9) {
        EXPECT_EQ(v.rfind("ws-", 0), 0u) << v;
      }
    }
    // Separate q, k, v (rows D apart) and the layer's packed qkv (rows 3·D apart): each layout is
    // tuned and cached on its own.
    for (const std::int64_t ld : {p.D(), 3 * p.D()}) {
      const std::string pick = flash_own_tune(p, DType::kF16, *ctx.alloc, ctx.stream, ld);
      EXPECT_NE(std::find(cands.begin(), cands.end(), pick), cands.end()) << pick << " ld " << ld;
      EXPECT_EQ(flash_own_tune(p, DType::kF16, *ctx.alloc, ctx.stream, ld), pick) << "ld " << ld;
    }
    EXPECT_THROW(flash_own_tune(p, DType::kF16, *ctx.alloc, ctx.stream, p.D() - 1), InvalidArgument);
  }
  be->release_cached();
}

// LONGMIX_FLASH_VARIANT fixes the kernel (the tuner times nothing); a name that is not a variant of
// the shape is an error that lists the variants.
TEST(GpuFlashOwnTune, VariantFromTheEnvironment) {
  REQUIRE_GPU(be);
  OwnedCudaContext tc(be->allocator());
  CudaContext& ctx = tc.ctx;
  const AttentionParams p{1, 2000, 4, 64, true, 0};
  const auto all = flash_own_variants(p);
  ASSERT_FALSE(all.empty());
  struct Unset { ~Unset() { unsetenv("LONGMIX_FLASH_VARIANT"); } } unset;  // also when a check fails
  setenv("LONGMIX_FLASH_VARIANT", all.back().c_str(), 1);
  EXPECT_EQ(flash_own_forced_variant(p), all.back());
  EXPECT_EQ(flash_own_tune(p, DType::kF16, *ctx.alloc, ctx.stream), all.back());
  setenv("LONGMIX_FLASH_VARIANT", "no-such-kernel", 1);
  try {
    flash_own_tune(p, DType::kF16, *ctx.alloc, ctx.stream);
    ADD_FAILURE() << "no error for an unknown variant";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-kernel"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(all.front()), std::string::npos) << e.what();
  }
  unsetenv("LONGMIX_FLASH_VARIANT");
  EXPECT_EQ(flash_own_forced_variant(p), "");
  be->release_cached();
}
#endif

TEST(GpuAvailability, ReasonIsGivenWithoutAGpu) {
  std::string why;
  if (gpu(&why)) GTEST_SKIP() << "a GPU is present";
  EXPECT_FALSE(why.empty());
}

}  // namespace
