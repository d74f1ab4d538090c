// Attention (CPU) against an independent float64 implementation.
#include "ops/attention/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "common/compare.h"
#include "common/cpu_math.h"
#include "common/rng.h"

namespace longmix {
namespace {

std::vector<float> randn(std::size_t n, std::uint64_t seed) {
  Rng r(seed);
  std::vector<float> v(n);
  r.fill_normal(v);
  return v;
}

// Direct float64 softmax attention, (B, L, H, d) with row stride ld for inputs; lse (B, H, L).
void reference_attention(const AttentionParams& p, const float* q, const float* k, const float* v,
                         std::int64_t ld, std::vector<double>& o, std::vector<double>& lse) {
  const std::int64_t B = p.B, L = p.L, H = p.H, d = p.d;
  o.assign(B * L * H * d, 0.0);
  lse.assign(B * H * L, 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> s(L);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < L; ++i) {
        const std::int64_t n = p.causal ? i + 1 : L;
        double mx = -INFINITY;
        for (std::int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (std::int64_t c = 0; c < d; ++c)
            acc += static_cast<double>(q[(b * L + i) * ld + h * d + c]) *
                   k[(b * L + j) * ld + h * d + c];
          s[j] = acc * scale;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (std::int64_t j = 0; j < n; ++j) sum += std::exp(s[j] - mx);
        for (std::int64_t j = 0; j < n; ++j) {
          const double pj = std::exp(s[j] - mx) / sum;
          for (std::int64_t c = 0; c < d; ++c)
            o[((b * L + i) * H + h) * d + c] += pj * v[(b * L + j) * ld + h * d + c];
        }
        lse[(b * H + h) * L + i] = mx + std::log(sum);
      }
}

using Shape = std::tuple<std::int64_t, std::int64_t, std::int64_t, bool>;  // L, d, H, causal

class AttentionShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(AttentionShapes, FlashAndStandardMatchFloat64Reference) {
  auto [L, d, H, causal] = GetParam();
  AttentionParams p{.B = 1, .L = L, .H = H, .d = d, .causal = causal};
  const std::size_t n = static_cast<std::size_t>(L * H * d);
  auto q = randn(n, 1), k = randn(n, 2), v = randn(n, 3);
  std::vector<double> oref, lref;
  reference_attention(p, q.data(), k.data(), v.data(), H * d, oref, lref);

  CpuAllocator alloc;
  std::vector<float> of(n, NAN), os(n, NAN), lf(L * H, NAN), ls(L * H, NAN);
  attention_flash_cpu(p, q.data(), k.data(), v.data(), of.data(), lf.data(), alloc);
  attention_standard_cpu(p, q.data(), k.data(), v.data(), os.data(), ls.data(), alloc);
  const auto cf = compare(of, oref), cs = compare(os, oref);
  EXPECT_TRUE(cf.passes(1e-5)) << "flash: " << cf.summary();
  EXPECT_TRUE(cs.passes(1e-5)) << "standard: " << cs.summary();
  const auto clf = compare(lf, lref), cls = compare(ls, lref);
  EXPECT_TRUE(clf.passes(1e-5)) << "flash lse: " << clf.summary();
  EXPECT_TRUE(cls.passes(1e-5)) << "standard lse: " << cls.summary();
  // FlashAttention equals standard attention.
  std::vector<double> os64(os.begin(), os.end());
  const auto cfs = compare(of, os64);
  EXPECT_TRUE(cfs.passes(1e-5)) << "flash vs standard: " << cfs.summary();
  EXPECT_EQ(alloc.current(), 0u) << "every working buffer returned";
}

INSTANTIATE_TEST_SUITE_P(Matrix, AttentionShapes,
                         ::testing::Combine(::testing::Values(1, 7, 100, 1000),
                                            ::testing::Values(32, 64, 128),
                                            ::testing::Values(1, 4), ::testing::Bool()));

TEST(Attention, BatchAndRaggedLength) {
  AttentionParams p{.B = 3, .L = 333, .H = 2, .d = 64, .causal = true};
  const std::size_t n = static_cast<std::size_t>(p.B * p.L * p.H * p.d);
  auto q = randn(n, 4), k = randn(n, 5), v = randn(n, 6);
  std::vector<double> oref, lref;
  reference_attention(p, q.data(), k.data(), v.data(), p.D(), oref, lref);
  CpuAllocator alloc;
  std::vector<float> o(n), l(p.B * p.H * p.L);
  attention_flash_cpu(p, q.data(), k.data(), v.data(), o.data(), l.data(), alloc);
  EXPECT_TRUE(compare(o, oref).passes(1e-5)) << compare(o, oref).summary();
}

// Perturbing q, k, v at position t changes no output before t, and does change row t.
TEST(Attention, Causality) {
  AttentionParams p{.B = 1, .L = 300, .H = 2, .d = 32, .causal = true};
  const std::size_t n = static_cast<std::size_t>(p.L * p.D());
  auto q = randn(n, 7), k = randn(n, 8), v = randn(n, 9);
  CpuAllocator alloc;
  for (int kind = 0; kind < 2; ++kind) {
    auto run = [&](const std::vector<float>& qq, const std::vector<float>& kk,
                   const std::vector<float>& vv) {
      std::vector<float> o(n), l(p.H * p.L);
      if (kind == 0)
        attention_flash_cpu(p, qq.data(), kk.data(), vv.data(), o.data(), l.data(), alloc);
      else
        attention_standard_cpu(p, qq.data(), kk.data(), vv.data(), o.data(), l.data(), alloc);
      return o;
    };
    const auto base = run(q, k, v);
    for (std::int64_t t : {0, 63, 64, 200, 299}) {
      auto q2 = q, k2 = k, v2 = v;
      for (std::int64_t c = 0; c < p.D(); ++c) {
        q2[t * p.D() + c] += 1.5f;
        k2[t * p.D() + c] -= 2.0f;
        v2[t * p.D() + c] += 3.0f;
      }
      const auto o = run(q2, k2, v2);
      double before = 0, at = 0;
      for (std::int64_t i = 0; i < t * p.D(); ++i) before = std::max(before, double(std::fabs(o[i] - base[i])));
      for (std::int64_t c = 0; c < p.D(); ++c)
        at = std::max(at, double(std::fabs(o[t * p.D() + c] - base[t * p.D() + c])));
      EXPECT_EQ(before, 0.0) << "kind " << kind << " t=" << t;
      EXPECT_GT(at, 1e-3) << "kind " << kind << " t=" << t;
    }
  }
}

TEST(AttentionLayer, MatchesFloat64Reference) {
  for (bool flash : {true, false}) {
    AttentionParams p{.B = 2, .L = 129, .H = 4, .d = 32, .causal = true};
    const std::int64_t D = p.D(), BL = p.B * p.L;
    auto w = AttentionLayerWeights::init(D, p.H, 11);
    auto x = randn(BL * D, 12);
    // float64 layer: qkv, attention, out_proj.
    std::vector<float> qkv(BL * 3 * D);
    std::vector<double> qkv64(BL * 3 * D);
    for (std::int64_t r = 0; r < BL; ++r)
      for (std::int64_t j = 0; j < 3 * D; ++j) {
        double acc = w.Wqkv_bias[j];
        for (std::int64_t c = 0; c < D; ++c) acc += double(x[r * D + c]) * w.Wqkv_weight[j * D + c];
        qkv64[r * 3 * D + j] = acc;
        qkv[r * 3 * D + j] = static_cast<float>(acc);
      }
    std::vector<double> o64, lse64;
    reference_attention(p, qkv.data(), qkv.data() + D, qkv.data() + 2 * D, 3 * D, o64, lse64);
    std::vector<double> yref(BL * D);
    for (std::int64_t r = 0; r < BL; ++r)
      for (std::int64_t j = 0; j < D; ++j) {
        double acc = w.out_proj_bias[j];
        for (std::int64_t c = 0; c < D; ++c) acc += o64[r * D + c] * w.out_proj_weight[j * D + c];
        yref[r * D + j] = acc;
      }
    CpuAllocator alloc;
    std::vector<float> y(BL * D, NAN);
    AttentionLayerView view{w.Wqkv_weight.data(), w.Wqkv_bias.data(), w.out_proj_weight.data(),
                            w.out_proj_bias.data()};
    attention_layer_cpu(p, view, x.data(), y.data(),
                        flash ? AttentionKind::kFlash : AttentionKind::kStandard, alloc);
    const auto c = compare(y, yref);
    EXPECT_TRUE(c.passes(1e-5)) << (flash ? "flash " : "standard ") << c.summary();
  }
}

// Working bytes: FlashAttention's grow linearly with L, standard attention's quadratically.
std::size_t working_bytes(std::int64_t L, bool flash) {
  AttentionParams p{.B = 1, .L = L, .H = 4, .d = 64, .causal = true};
  const std::size_t n = static_cast<std::size_t>(L * p.D());
  CpuAllocator alloc;
  Buffer<float> q(alloc, n), k(alloc, n), v(alloc, n);
  for (std::size_t i = 0; i < n; ++i) q[i] = k[i] = v[i] = 0.01f * static_cast<float>(i % 97);
  const std::size_t before = alloc.current();
  alloc.reset_peak();
  {
    Buffer<float> o(alloc, n), lse(alloc, static_cast<std::size_t>(p.H * L));
    if (flash) attention_flash_cpu(p, q.data(), k.data(), v.data(), o.data(), lse.data(), alloc);
    else attention_standard_cpu(p, q.data(), k.data(), v.data(), o.data(), lse.data(), alloc);
  }
  return alloc.peak() - before;
}

// Growth measured by differences, so fixed per-thread scratch cancels: at L, 2L, 3L a linear
// curve has equal steps, a quadratic one steps in the ratio (9-4)/(4-1) = 5/3.
TEST(AttentionMemory, FlashLinearStandardQuadratic) {
  const double f1 = working_bytes(2048, true), f2 = working_bytes(4096, true), f3 = working_bytes(6144, true);
  const double s1 = working_bytes(512, false), s2 = working_bytes(1024, false), s3 = working_bytes(1536, false);
  EXPECT_NEAR((f3 - f2) / (f2 - f1), 1.0, 0.05) << f1 << " " << f2 << " " << f3;
  EXPECT_NEAR((s3 - s2) / (s2 - s1), 5.0 / 3.0, 0.05) << s1 << " " << s2 << " " << s3;
  // Standard attention holds at least the B·H·L² scores.
  EXPECT_GE(s2, 4.0 * 1024 * 1024 * 4);
}

TEST(AttentionMemory, CapBelowNeedGivesOwnErrorAndFreesEverything) {
  AttentionParams p{.B = 1, .L = 2048, .H = 4, .d = 64, .causal = true};
  const std::size_t n = static_cast<std::size_t>(p.L * p.D());
  CpuAllocator alloc;
  Buffer<float> q(alloc, n), k(alloc, n), v(alloc, n), o(alloc, n), l(alloc, p.H * p.L);
  const std::size_t held = alloc.current();
  alloc.set_cap(held + 1024 * 1024);  // 1 MiB: far below the 64 MiB of scores
  EXPECT_THROW(attention_standard_cpu(p, q.data(), k.data(), v.data(), o.data(), l.data(), alloc),
               OutOfMemory);
  EXPECT_EQ(alloc.current(), held);
  alloc.set_cap(held + 1024);  // below even the flash scratch
  EXPECT_THROW(attention_flash_cpu(p, q.data(), k.data(), v.data(), o.data(), l.data(), alloc),
               OutOfMemory);
  EXPECT_EQ(alloc.current(), held);
}

TEST(Attention, BadInputNamesTheArgument) {
  CpuAllocator alloc;
  std::vector<float> x(64 * 64);
  auto expect_msg = [&](AttentionParams p, const char* word) {
    try {
      attention_flash_cpu(p, x.data(), x.data(), x.data(), x.data(), x.data(), alloc);
      ADD_FAILURE() << "no error for " << word;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
    }
  };
  expect_msg({.B = 1, .L = 0, .H = 1, .d = 64}, "L");
  expect_msg({.B = 1, .L = -4, .H = 1, .d = 64}, "-4");
  expect_msg({.B = 0, .L = 4, .H = 1, .d = 64}, "batch");
  expect_msg({.B = 1, .L = 4, .H = 0, .d = 64}, "heads");
  expect_msg({.B = 1, .L = 4, .H = 1, .d = 12}, "head dim d=12");
  expect_msg({.B = 1, .L = 4, .H = 1, .d = 512}, "d=512");
  EXPECT_THROW(AttentionLayerWeights::init(100, 3, 1), InvalidArgument);
}

TEST(FastExp2, RelativeErrorAndLimits) {
  double worst = 0;
  for (int i = -126000; i <= 127000; i += 7) {
    const float x = i / 1000.0f;
    const double ref = std::exp2(static_cast<double>(x));
    worst = std::max(worst, std::fabs(fast_exp2(x) - ref) / ref);
  }
  EXPECT_LT(worst, 2.5e-7);
  EXPECT_EQ(fast_exp2(-INFINITY), 0.0f);
  EXPECT_EQ(fast_exp2(-200.0f), 0.0f);
  EXPECT_EQ(fast_exp2(0.0f), 1.0f);
}

// The row helpers (AVX2 in x86-64-v3 builds) against the scalar loops they replace, at every
// length 0 … 70 (vector bodies, tails and rows shorter than one vector), with -inf, NaN and
// values below the clamp among the elements.
TEST(SoftmaxRowHelpers, MatchTheScalarLoops) {
  std::vector<float> base(70);
  for (std::size_t i = 0; i < base.size(); ++i)
    base[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * 40.0 - 5.0);
  base[13] = -INFINITY;
  base[29] = -300.0f;
  for (std::int64_t n = 0; n <= 70; ++n) {
    const float* s = base.data();
    float m = -INFINITY;
    for (std::int64_t c = 0; c < n; ++c) m = std::max(m, s[c]);
    ASSERT_EQ(row_max(s, n, -INFINITY), m) << "n=" << n;
    ASSERT_EQ(row_max(s, n, 1000.0f), 1000.0f) << "n=" << n;
    const float shift = n > 0 ? m : 0.0f;
    for (const float mul : {1.0f, 1.4426950408889634f}) {
      std::vector<float> got(s, s + n), want(s, s + n);
      double sum = 0;
      for (std::int64_t c = 0; c < n; ++c) {
        want[c] = fast_exp2((want[c] - shift) * mul);
        sum += want[c];
      }
      const float total = exp2_row_sum(got.data(), n, shift, mul);
      for (std::int64_t c = 0; c < n; ++c)
        ASSERT_NEAR(got[c], want[c], 2e-7f * std::max(1.0f, want[c])) << "n=" << n << " c=" << c;
      ASSERT_NEAR(total, sum, 1e-6 * std::max(1.0, sum)) << "n=" << n;
    }
  }
  // NaN: ignored by the max (as std::max(m, x)), kept by the exponential.
  std::vector<float> nan_row(20, 1.0f);
  nan_row[3] = nan_row[17] = NAN;
  EXPECT_EQ(row_max(nan_row.data(), 20, -INFINITY), 1.0f);
  EXPECT_TRUE(std::isnan(exp2_row_sum(nan_row.data(), 20, 1.0f, 1.0f)));
  EXPECT_TRUE(std::isnan(nan_row[3]) && std::isnan(nan_row[17]));
  EXPECT_EQ(nan_row[0], 1.0f);
}

}  // namespace
}  // namespace longmix
