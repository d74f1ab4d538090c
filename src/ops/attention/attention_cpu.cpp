// CPU attention forward, fp32 (SPEC §2).
//
// Versions
//   standard: cblas_sgemm per (b, h) into one B·H·L² score buffer, row softmax with the
//     vectorised fast_exp2 (OpenMP over rows), then P·V by sgemm. O(L²) memory by design.
//   flash v1: FlashAttention-2 loop order (outer query blocks, inner key blocks) with
//     kBlockM = 64, kBlockN = 256; S block and P·V through single-threaded sgemm on each
//     OpenMP thread; causal blocks past the diagonal skipped; heavy (late) causal query blocks
//     scheduled first. Scores are pre-scaled by scale·log2(e) so the softmax uses exp2.
//     L = 4k, H = 4, d = 64 causal, 2-core AMD EPYC, idle: 84 GFLOP/s = 45% of sgemm.
//   flash v2: kBlockM = 128, kBlockN = 512 (fewer, larger sgemm calls; 330 KB of scratch per
//     thread stays in L2): 47.6–49.2% of sgemm in the same run. Also tried 64×512: 44%.
//   flash v3 (and standard's softmax): the row max and the exp2-and-sum loops in AVX2
//     (row_max, exp2_row_sum in cpu_math): GCC had left both scalar (the clamps are branches
//     and the max a conditional without -ffast-math; `omp simd` did not override that), a
//     4-cycle vmaxss chain a score. 4k, H = 4, 2-core Xeon build machine, same session:
//     109.5 → 55–58 ms (31% → 62–67% of sgemm).
//   flash v4: kBlockM = 256 (K/V blocks packed by OpenBLAS once per 256 query rows instead of
//     128: its packing routines were ~15% of the samples at 8k): bench_cpu_flash, 2-core Xeon,
//     alternating binaries, two rounds: 4k 62.8–63.0% → 68.1–72.1% of sgemm, 16k 758–767 →
//     701–726 ms; 512 × 512 level with it (67–68%, 698–709 ms), 256 × 256 no better than v3.
//     Layer sweep: 4k 60.8–61.8 → 56.0–60.3 ms, 16k 803–828 → 764–785 ms. 642 KiB of scratch per
//     thread.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/cpu_math.h"
#include "common/rng.h"
#include "ops/attention/attention.h"

namespace longmix {

namespace {
constexpr std::int64_t kBlockM = 256;
constexpr std::int64_t kBlockN = 512;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// q/k/v rows (one per token) are `ld_in` floats apart; o rows `ld_o` apart.
void standard_impl(const AttentionParams& p, const float* q, const float* k, const float* v,
                   std::int64_t ld_in, float* o, std::int64_t ld_o, float* lse,
                   Allocator& alloc) {
  const std::int64_t B = p.B, L = p.L, H = p.H, d = p.d;
  Buffer<float> S(alloc, static_cast<std::size_t>(B * H * L * L));  // (B, H, L, L)
  const float scale = p.softmax_scale();
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h) {
      float* Sbh = S.data() + (b * H + h) * L * L;
      sgemm(false, true, L, L, d, scale, q + b * L * ld_in + h * d, ld_in,
            k + b * L * ld_in + h * d, ld_in, 0.0f, Sbh, L);
    }
#pragma omp parallel for schedule(static)
  for (std::int64_t row = 0; row < B * H * L; ++row) {
    const std::int64_t i = row % L;
    float* s = S.data() + row * L;
    const std::int64_t n = p.causal ? i + 1 : L;
    const float mx = row_max(s, n, kNegInf);
    const float sum = exp2_row_sum(s, n, mx, kLog2e);
    const float inv = 1.0f / sum;
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) s[j] *= inv;
    for (std::int64_t j = n; j < L; ++j) s[j] = 0.0f;
    if (lse) lse[row] = mx + std::log(sum);
  }
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h) {
      const float* Pbh = S.data() + (b * H + h) * L * L;
      sgemm(false, false, L, d, L, 1.0f, Pbh, L, v + b * L * ld_in + h * d, ld_in, 0.0f,
            o + b * L * ld_o + h * d, ld_o);
    }
}

void flash_impl(const AttentionParams& p, const float* q, const float* k, const float* v,
                std::int64_t ld_in, float* o, std::int64_t ld_o, float* lse, Allocator& alloc) {
  const std::int64_t B = p.B, L = p.L, H = p.H, d = p.d;
  const std::int64_t nqb = (L + kBlockM - 1) / kBlockM;
  const int nthreads = omp_get_max_threads();
  // Per thread: Qs (kBlockM, d), S (kBlockM, kBlockN), Oacc (kBlockM, d), m, l (kBlockM).
  const std::int64_t per = kBlockM * d * 2 + kBlockM * kBlockN + 2 * kBlockM;
  Buffer<float> scratch(alloc, static_cast<std::size_t>(per * nthreads));
  const float qscale = p.softmax_scale() * kLog2e;
  BlasSingleThreaded single;

#pragma omp parallel num_threads(nthreads)
  {
    float* base = scratch.data() + per * omp_get_thread_num();
    float* Qs = base;
    float* S = Qs + kBlockM * d;
    float* Oacc = S + kBlockM * kBlockN;
    float* m = Oacc + kBlockM * d;
    float* l = m + kBlockM;
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t task = 0; task < B * H * nqb; ++task) {
      const std::int64_t b = task / (H * nqb), h = (task / nqb) % H;
      const std::int64_t qb = nqb - 1 - task % nqb;  // causal: longest rows first
      const std::int64_t i0 = qb * kBlockM, rows = std::min(kBlockM, L - i0);
      const float* Qp = q + (b * L + i0) * ld_in + h * d;
      for (std::int64_t r = 0; r < rows; ++r) {
#pragma omp simd
        for (std::int64_t c = 0; c < d; ++c) Qs[r * d + c] = Qp[r * ld_in + c] * qscale;
        m[r] = kNegInf;
        l[r] = 0.0f;
      }
      std::fill(Oacc, Oacc + rows * d, 0.0f);
      const std::int64_t kend = p.causal ? i0 + rows : L;
      for (std::int64_t j0 = 0; j0 < kend; j0 += kBlockN) {
        const std::int64_t cols = std::min(kBlockN, kend - j0);
        const float* Kp = k + (b * L + j0) * ld_in + h * d;
        const float* Vp = v + (b * L + j0) * ld_in + h * d;
        sgemm(false, true, rows, cols, d, 1.0f, Qs, d, Kp, ld_in, 0.0f, S, kBlockN);
        for (std::int64_t r = 0; r < rows; ++r) {
          float* s = S + r * kBlockN;
          const std::int64_t lim = p.causal ? std::min(cols, i0 + r - j0 + 1) : cols;
          if (lim <= 0) {
            std::fill(s, s + cols, 0.0f);
            continue;
          }
          const float mx = row_max(s, lim, m[r]);
          const float sum = exp2_row_sum(s, lim, mx, 1.0f);
          for (std::int64_t c = lim; c < cols; ++c) s[c] = 0.0f;
          const float corr = fast_exp2(m[r] - mx);  // 0 on the first block (m = -inf)
          l[r] = l[r] * corr + sum;
          m[r] = mx;
          if (corr != 1.0f) {
            float* orow = Oacc + r * d;
#pragma omp simd
            for (std::int64_t c = 0; c < d; ++c) orow[c] *= corr;
          }
        }
        sgemm(false, false, rows, d, cols, 1.0f, S, kBlockN, Vp, ld_in, 1.0f, Oacc, d);
      }
      float* Op = o + (b * L + i0) * ld_o + h * d;
      for (std::int64_t r = 0; r < rows; ++r) {
        const float inv = 1.0f / l[r];
#pragma omp simd
        for (std::int64_t c = 0; c < d; ++c) Op[r * ld_o + c] = Oacc[r * d + c] * inv;
        lse[(b * H + h) * L + i0 + r] = (m[r] + std::log2(l[r])) * kLn2;
      }
    }
  }
}
}  // namespace

float AttentionParams::softmax_scale() const {
  return scale != 0 ? scale : 1.0f / std::sqrt(static_cast<float>(d));
}

void AttentionParams::validate() const {
  LONGMIX_REQUIRE(B > 0, "attention: batch B must be positive, got ", B);
  LONGMIX_REQUIRE(L > 0, "attention: sequence length L must be positive, got ", L);
  LONGMIX_REQUIRE(H > 0, "attention: heads H must be positive, got ", H);
  LONGMIX_REQUIRE(d > 0, "attention: head dim d must be positive, got ", d);
  LONGMIX_REQUIRE(d % 8 == 0 && d <= 256,
                  "attention: unsupported head dim d=", d,
                  " on the CPU (supported: multiples of 8 up to 256)");
  LONGMIX_REQUIRE(std::isfinite(scale) && scale >= 0, "attention: bad softmax scale ", scale);
}

double AttentionParams::flops() const {
  const double f = 4.0 * B * H * static_cast<double>(L) * L * d;
  return causal ? f / 2 : f;
}

void attention_standard_cpu(const AttentionParams& p, const float* q, const float* k,
                            const float* v, float* o, float* lse, Allocator& alloc) {
  p.validate();
  standard_impl(p, q, k, v, p.D(), o, p.D(), lse, alloc);
}

void attention_flash_cpu(const AttentionParams& p, const float* q, const float* k, const float* v,
                         float* o, float* lse, Allocator& alloc) {
  p.validate();
  LONGMIX_REQUIRE(lse != nullptr, "attention_flash_cpu: lse output is required");
  flash_impl(p, q, k, v, p.D(), o, p.D(), lse, alloc);
}

AttentionLayerWeights AttentionLayerWeights::init(std::int64_t D, std::int64_t H,
                                                  std::uint64_t seed) {
  LONGMIX_REQUIRE(D > 0 && H > 0 && D % H == 0, "attention layer: D=", D,
                  " must be a positive multiple of heads H=", H);
  AttentionLayerWeights w;
  w.D = D;
  w.H = H;
  Rng rng(seed);
  const double bound = 1.0 / std::sqrt(static_cast<double>(D));
  w.Wqkv_weight.resize(3 * D * D);
  w.Wqkv_bias.resize(3 * D);
  w.out_proj_weight.resize(D * D);
  w.out_proj_bias.resize(D);
  rng.fill_uniform(w.Wqkv_weight, -bound, bound);
  rng.fill_uniform(w.Wqkv_bias, -bound, bound);
  rng.fill_uniform(w.out_proj_weight, -bound, bound);
  rng.fill_uniform(w.out_proj_bias, -bound, bound);
  return w;
}

void attention_layer_cpu(const AttentionParams& p, const AttentionLayerView& w, const float* x,
                         float* y, AttentionKind kind, Allocator& alloc) {
  p.validate();
  const std::int64_t D = p.D(), BL = p.B * p.L;
  Buffer<float> qkv(alloc, static_cast<std::size_t>(BL * 3 * D));  // (B, L, 3, H, d)
  linear(BL, 3 * D, D, x, w.Wqkv_weight, w.Wqkv_bias, qkv.data());
  Buffer<float> o(alloc, static_cast<std::size_t>(BL * D));         // (B, L, H, d)
  Buffer<float> lse(alloc, static_cast<std::size_t>(p.B * p.H * p.L));  // (B, H, L)
  if (kind == AttentionKind::kFlash)
    flash_impl(p, qkv.data(), qkv.data() + D, qkv.data() + 2 * D, 3 * D, o.data(), D, lse.data(),
               alloc);
  else
    standard_impl(p, qkv.data(), qkv.data() + D, qkv.data() + 2 * D, 3 * D, o.data(), D,
                  lse.data(), alloc);
  qkv.reset();
  linear(BL, D, D, o.data(), w.out_proj_weight, w.out_proj_bias, y);
}

}  // namespace longmix
