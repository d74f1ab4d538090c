// Hyena (CPU) against an independent float64 transcription of SPEC §3 with a direct causal sum.
#include "ops/hyena/hyena.h"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "common/compare.h"
#include "common/rng.h"

namespace longmix {
namespace {

constexpr double kPi = 3.14159265358979323846;

std::vector<float> randn(std::size_t n, std::uint64_t seed) {
  Rng r(seed);
  std::vector<float> v(n);
  r.fill_normal(v);
  return v;
}

// SPEC §3 step 4 evaluated directly in float64 at time index i, every filter channel.
std::vector<double> filter_at(const HyenaWeights& w, std::int64_t i) {
  const auto& cfg = w.cfg;
  const std::int64_t F = cfg.filter_order, Dh = cfg.Dh(), E = cfg.emb_dim;
  const int bands = (cfg.emb_dim - 1) / 2;
  const double t = cfg.l_max == 1 ? 0.0 : double(i) / double(cfg.l_max - 1);
  const double om = 2 * kPi * double(i) / double(cfg.l_max);
  std::vector<double> z(E);
  z[0] = t;
  for (int b = 0; b < bands; ++b) {
    const double f = bands == 1 ? 1e-4 : 1e-4 + (bands - 1 - 1e-4) * b / (bands - 1);
    z[1 + b] = std::cos(f * om);
    z[1 + bands + b] = -std::sin(f * om);
  }
  std::vector<double> a = z;
  const int nl = cfg.num_inner_mlps + 2;
  for (int l = 0; l < nl; ++l) {
    const std::int64_t in = l == 0 ? E : F, out = l == nl - 1 ? Dh : F;
    std::vector<double> nxt(out);
    for (std::int64_t o = 0; o < out; ++o) {
      double acc = l == nl - 1 ? 0.0 : w.mlp_bias[l][o];
      for (std::int64_t c = 0; c < in; ++c) acc += double(w.mlp_weight[l][o * in + c]) * a[c];
      nxt[o] = l == nl - 1 ? acc : std::sin(double(w.freq[o]) * acc);
    }
    a.swap(nxt);
  }
  const double max_decay = std::log(double(cfg.target)) / cfg.fast_decay_pct;
  const double min_decay = std::log(double(cfg.target)) / cfg.slow_decay_pct;
  for (std::int64_t c = 0; c < Dh; ++c) {
    const double delta = Dh == 1 ? min_decay : min_decay + (max_decay - min_decay) * c / (Dh - 1);
    a[c] *= std::exp(-t * std::fabs(delta)) + cfg.shift;
  }
  return a;
}

// The whole operator in float64 for u (B, L, D).
std::vector<double> reference_hyena(const HyenaWeights& w, std::int64_t B, std::int64_t L,
                                    const std::vector<float>& u) {
  const auto& cfg = w.cfg;
  const std::int64_t D = cfg.D, C = cfg.C(), N = cfg.order, K = cfg.short_filter_order;
  std::vector<std::vector<double>> h(L);
  for (std::int64_t i = 0; i < L; ++i) h[i] = filter_at(w, i);
  std::vector<double> y(B * L * D);
  for (std::int64_t b = 0; b < B; ++b) {
    std::vector<double> z(L * C), zc(L * C);
    for (std::int64_t t = 0; t < L; ++t)
      for (std::int64_t c = 0; c < C; ++c) {
        double acc = w.in_proj_bias[c];
        for (std::int64_t j = 0; j < D; ++j)
          acc += double(u[(b * L + t) * D + j]) * w.in_proj_weight[c * D + j];
        z[t * C + c] = acc;
      }
    for (std::int64_t t = 0; t < L; ++t)
      for (std::int64_t c = 0; c < C; ++c) {
        double acc = w.short_filter_bias[c];
        for (std::int64_t j = 0; j < K; ++j)
          if (t + j - (K - 1) >= 0) acc += w.short_filter_weight[c * K + j] * z[(t + j - (K - 1)) * C + c];
        zc[t * C + c] = acc;
      }
    std::vector<double> yg(L * D);
    for (std::int64_t c = 0; c < D; ++c) {
      std::vector<double> v(L), nv(L);
      for (std::int64_t t = 0; t < L; ++t) v[t] = zc[t * C + N * D + c];
      for (std::int64_t o = 0; o < N - 1; ++o) {
        for (std::int64_t t = 0; t < L; ++t) v[t] *= zc[t * C + (N - 1 - o) * D + c];
        for (std::int64_t t = 0; t < L; ++t) {
          double acc = 0;
          for (std::int64_t s = 0; s <= t; ++s) acc += h[t - s][o * D + c] * v[s];
          nv[t] = acc + double(w.filter_bias[o * D + c]) * v[t];
        }
        v.swap(nv);
      }
      for (std::int64_t t = 0; t < L; ++t) yg[t * D + c] = v[t] * zc[t * C + c];
    }
    for (std::int64_t t = 0; t < L; ++t)
      for (std::int64_t j = 0; j < D; ++j) {
        double acc = w.out_proj_bias[j];
        for (std::int64_t c = 0; c < D; ++c) acc += yg[t * D + c] * w.out_proj_weight[j * D + c];
        y[(b * L + t) * D + j] = acc;
      }
  }
  return y;
}

using HShape = std::tuple<std::int64_t, int, std::int64_t>;  // L, order, D
class HyenaShapes : public ::testing::TestWithParam<HShape> {};

TEST_P(HyenaShapes, MatchesFloat64Reference) {
  auto [L, order, D] = GetParam();
  HyenaConfig cfg;
  cfg.D = D;
  cfg.order = order;
  cfg.l_max = std::max<std::int64_t>(L, 1000);  // grid from l_max, not L
  cfg.filter_order = 16;
  auto w = HyenaWeights::init(cfg, 42 + L);
  const std::int64_t B = 1;
  auto u = randn(B * L * D, 7 + L);
  const auto ref = reference_hyena(w, B, L, u);
  CpuAllocator alloc;
  for (bool cached : {false, true}) {
    std::vector<float> y(B * L * D, NAN);
    HyenaCpuPlan plan(view_of(w), L, cached, alloc);
    plan.forward(B, u.data(), y.data(), alloc);
    const auto c = compare(y, ref);
    EXPECT_TRUE(c.passes(1e-5)) << (cached ? "cached: " : "recompute: ") << c.summary();
  }
  EXPECT_EQ(alloc.current(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Matrix, HyenaShapes,
                         ::testing::Combine(::testing::Values(1, 7, 100, 1000),
                                            ::testing::Values(2, 3), ::testing::Values(8, 24)));

// The short conv's unrolled path (K = 3) and its general one (any K) against the float64
// reference; L = 2100 crosses two of the row conv's 1024-step blocks (the K − 1 inputs carried
// over), L = 131 stays inside one.
TEST(Hyena, ShortFilterOrdersOnBothConvPathsMatchTheReference) {
  for (int K : {1, 3, 5, 16, 17})
    for (const std::int64_t L : {131, 2100}) {
      HyenaConfig cfg;
      cfg.D = 24;  // C = 72
      cfg.short_filter_order = K;
      cfg.l_max = L;
      cfg.filter_order = 16;
      auto w = HyenaWeights::init(cfg, 11 + K);
      const std::int64_t B = 2;
      auto u = randn(B * L * cfg.D, 13 + K);
      const auto ref = reference_hyena(w, B, L, u);
      CpuAllocator alloc;
      HyenaCpuPlan plan(view_of(w), L, false, alloc);
      std::vector<float> y(B * L * cfg.D, NAN);
      plan.forward(B, u.data(), y.data(), alloc);
      const auto c = compare(y, ref);
      EXPECT_TRUE(c.passes(1e-5)) << "K=" << K << " L=" << L << " " << c.summary();
    }
}

TEST(Hyena, DefaultWidthBatchTwoEqualsTwoSingleCalls) {
  HyenaConfig cfg;
  cfg.D = 64;
  cfg.l_max = 300;
  auto w = HyenaWeights::init(cfg, 3);
  const std::int64_t L = 257, D = cfg.D;
  auto u = randn(2 * L * D, 4);
  CpuAllocator alloc;
  HyenaCpuPlan plan(view_of(w), L, false, alloc);
  std::vector<float> y2(2 * L * D), y0(L * D), y1(L * D);
  plan.forward(2, u.data(), y2.data(), alloc);
  plan.forward(1, u.data(), y0.data(), alloc);
  plan.forward(1, u.data() + L * D, y1.data(), alloc);
  // Equal up to float rounding: OpenBLAS blocks a product of 2L rows differently from one of L
  // rows, so the last bits may differ (observed: 5 ulp); a batch mix-up would differ by O(1).
  for (std::int64_t i = 0; i < L * D; ++i) {
    ASSERT_NEAR(y2[i], y0[i], 1e-6f * (1.0f + std::abs(y0[i]))) << i;
    ASSERT_NEAR(y2[L * D + i], y1[i], 1e-6f * (1.0f + std::abs(y1[i]))) << i;
  }
  const auto ref = reference_hyena(w, 2, L, u);
  EXPECT_TRUE(compare(y2, ref).passes(1e-5)) << compare(y2, ref).summary();
}

TEST(Hyena, FftLongConvEqualsDirectCausalSum) {
  for (std::int64_t L : {1, 5, 1000, 4097}) {
    auto x = randn(L, 100 + L), h = randn(L, 200 + L);
    std::vector<float> y(L, NAN);
    causal_conv_fft_cpu(L, x.data(), h.data(), y.data());
    std::vector<double> ref(L);
    for (std::int64_t t = 0; t < L; ++t) {
      double acc = 0;
      for (std::int64_t s = 0; s <= t; ++s) acc += double(h[t - s]) * x[s];
      ref[t] = acc;
    }
    const auto c = compare(y, ref);
    EXPECT_TRUE(c.passes(1e-5)) << "L=" << L << " " << c.summary();
  }
}

TEST(Hyena, FilterEqualsDirectEvaluation) {
  HyenaConfig cfg;
  cfg.D = 32;
  cfg.order = 3;
  cfg.l_max = 5000;
  auto w = HyenaWeights::init(cfg, 9);
  const std::int64_t L = 4000, Dh = cfg.Dh();
  CpuAllocator alloc;
  std::vector<float> h(L * Dh);
  hyena_filter_cpu(view_of(w), L, h.data(), alloc);
  for (std::int64_t i : {0, 1, 17, 2500, 3999}) {
    const auto ref = filter_at(w, i);
    const auto c = compare(h.data() + i * Dh, ref.data(), Dh);
    EXPECT_TRUE(c.passes(1e-5)) << "i=" << i << " " << c.summary();
  }
  // The positional buffers equal SPEC's grid: t_i = i/(l_max-1), z = [t, cos(f w), -sin(f w)].
  EXPECT_FLOAT_EQ(w.pos_emb_t[4999], 1.0f);
  EXPECT_NEAR(w.pos_emb_z[1234 * 3 + 2], -std::sin(1e-4 * 2 * kPi * 1234 / 5000), 1e-7);
}

// Perturbing u at t changes no output before t beyond FFT round-off, and does change row t.
TEST(Hyena, Causality) {
  HyenaConfig cfg;
  cfg.D = 16;
  cfg.l_max = 512;
  auto w = HyenaWeights::init(cfg, 5);
  const std::int64_t L = 512, D = cfg.D;
  auto u = randn(L * D, 6);
  CpuAllocator alloc;
  HyenaCpuPlan plan(view_of(w), L, false, alloc);
  std::vector<float> base(L * D), y(L * D);
  plan.forward(1, u.data(), base.data(), alloc);
  double scale = 0;
  for (float x : base) scale = std::max(scale, double(std::fabs(x)));
  for (std::int64_t t : {1, 100, 511}) {
    auto u2 = u;
    for (std::int64_t c = 0; c < D; ++c) u2[t * D + c] += 5.0f;
    plan.forward(1, u2.data(), y.data(), alloc);
    double before = 0, at = 0;
    for (std::int64_t i = 0; i < t * D; ++i) before = std::max(before, double(std::fabs(y[i] - base[i])));
    for (std::int64_t c = 0; c < D; ++c) at = std::max(at, double(std::fabs(y[t * D + c] - base[t * D + c])));
    EXPECT_LT(before, 1e-6 * scale) << "t=" << t;
    EXPECT_GT(at, 1e-2 * scale) << "t=" << t;
  }
}

TEST(Hyena, WorkingMemoryIsLinearInL) {
  HyenaConfig cfg;
  cfg.D = 64;
  cfg.l_max = 16384;
  auto w = HyenaWeights::init(cfg, 1);
  auto work = [&](std::int64_t L) {
    CpuAllocator alloc;
    Buffer<float> u(alloc, L * cfg.D), y(alloc, L * cfg.D);
    for (std::size_t i = 0; i < u.size(); ++i) u[i] = 0.001f * (i % 101);
    HyenaCpuPlan plan(view_of(w), L, false, alloc);
    const std::size_t before = alloc.current();
    alloc.reset_peak();
    plan.forward(1, u.data(), y.data(), alloc);
    return double(alloc.peak() - before);
  };
  EXPECT_NEAR(work(16384) / work(8192), 2.0, 0.1);
}

TEST(Hyena, CapBelowNeedGivesOwnErrorAndFreesEverything) {
  HyenaConfig cfg;
  cfg.D = 64;
  cfg.l_max = 4096;
  auto w = HyenaWeights::init(cfg, 1);
  CpuAllocator alloc;
  std::vector<float> u(4096 * 64, 0.1f), y(4096 * 64);
  HyenaCpuPlan plan(view_of(w), 4096, false, alloc);
  const std::size_t held = alloc.current();
  alloc.set_cap(held + 4096 * 64 * 4);
  EXPECT_THROW(plan.forward(1, u.data(), y.data(), alloc), OutOfMemory);
  EXPECT_EQ(alloc.current(), held);
}

TEST(Hyena, BadInputNamesTheArgument) {
  auto expect_msg = [](HyenaConfig cfg, const char* word) {
    try {
      HyenaWeights::init(cfg, 1);
      ADD_FAILURE() << "no error for " << word;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
    }
  };
  HyenaConfig c;
  c.order = 1;
  expect_msg(c, "order 1");
  c = {};
  c.D = 0;
  expect_msg(c, "D must be positive, got 0");
  c = {};
  c.l_max = -3;
  expect_msg(c, "l_max");
  c = {};
  c.emb_dim = 4;
  expect_msg(c, "emb_dim");
  HyenaConfig ok;
  ok.D = 8;
  ok.l_max = 100;
  auto w = HyenaWeights::init(ok, 1);
  CpuAllocator alloc;
  try {
    HyenaCpuPlan plan(view_of(w), 101, false, alloc);
    ADD_FAILURE() << "L > l_max accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("l_max=100"), std::string::npos) << e.what();
  }
}

TEST(HyenaWeights, StateDictNamesAndShapes) {
  HyenaConfig cfg;
  cfg.D = 256;
  cfg.l_max = 1024;
  auto w = HyenaWeights::init(cfg, 1);
  w.validate();
  std::map<std::string, std::vector<std::int64_t>> shapes;
  for (auto& t : w.named()) shapes[t.name] = t.shape;
  EXPECT_EQ(shapes.at("in_proj.weight"), (std::vector<std::int64_t>{768, 256}));
  EXPECT_EQ(shapes.at("short_filter.weight"), (std::vector<std::int64_t>{768, 1, 3}));
  EXPECT_EQ(shapes.at("filter_fn.implicit_filter.0.weight"), (std::vector<std::int64_t>{64, 3}));
  EXPECT_EQ(shapes.at("filter_fn.implicit_filter.6.weight"), (std::vector<std::int64_t>{256, 64}));
  EXPECT_EQ(shapes.at("filter_fn.implicit_filter.5.freq"), (std::vector<std::int64_t>{1, 64}));
  EXPECT_EQ(shapes.at("filter_fn.pos_emb.z"), (std::vector<std::int64_t>{1, 1024, 3}));
  EXPECT_EQ(shapes.count("filter_fn.implicit_filter.6.bias"), 0u);
  EXPECT_EQ(shapes.size(), 20u);
  // PyTorch's uniform(±1/sqrt(fan_in)) init: short conv has fan_in 3.
  for (float x : w.short_filter_weight) EXPECT_LE(std::fabs(x), 1.0 / std::sqrt(3.0));
  for (float x : w.in_proj_weight) EXPECT_LE(std::fabs(x), 1.0 / 16.0);
  EXPECT_FLOAT_EQ(w.modulation_deltas.front(), std::log(1e-2f) / 1.5f);
  EXPECT_FLOAT_EQ(w.modulation_deltas.back(), std::log(1e-2f) / 0.3f);
}

}  // namespace
}  // namespace longmix
