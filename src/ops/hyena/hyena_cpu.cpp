// Hyena forward on the CPU, fp32 (SPEC §3): OpenBLAS projections, short causal depthwise
// conv, implicit filter MLP, FFTW r2c/c2r long convolution of size 2L per channel with the
// skip term and gates, out_proj.
//
// Versions
//   v1: channel-parallel (OpenMP over the D channels of v); per channel the whole recurrence
//     (gate, FFT conv, skip) runs on thread-local 2L buffers, so nothing (L, (N-1)D)-sized
//     in the frequency domain is held unless filter=cached. Plans: FFTW_ESTIMATE, built once
//     per HyenaCpuPlan, executed with fftwf_execute_dft_r2c/c2r on new arrays.
//   v2: channel-major. v1 read every channel's v, gates and filter as columns of the (L, C) and
//     (L, Dh) arrays (stride C or Dh floats: one cache line per element) and wrote y the same
//     way; perf at 64k, D = 256 put 46% of the samples in those loops against 13% in FFTW.
//     Now the short conv writes zT (B, C, L) through 16-channel × 64-step tiles (each line of z
//     read once, whole), the filter is computed as hT (Dh, L) by a transposed last-layer
//     product, the recurrence runs on contiguous rows and writes yT (B, D, L) in place, and
//     out_proj reads yT as a transposed operand. FFTW_MEASURE plans from n = 2^14. Peak memory: z and zT coexist only during the
//     conv (as z and zc did in v1); the layer no longer holds z during the convolution.
//   v6 (layer scope): in_proj's product written channel-major straight away (zT_b = W_in · u_bᵀ),
//     its bias and the short conv then run along each contiguous row in place (blocks of 1024
//     times through a small buffer), so the time-major z (B, L, C) and the transposing conv
//     (16% of the samples at 32k) are gone. 2-core Xeon build machine, old / new binary
//     alternating, two rounds: 4k 19.5–20.6 / 15.0–17.0 ms, 32k 176–180 / 143–145 ms. The core
//     scope (its input is z itself) transposes z with the tiled transpose and runs the same row
//     conv, which replaced v2's transposing conv there too: 4k 13.2–13.5 / 11.4 ms, 32k
//     121–128 / 107–112 ms (same machine, alternating, two rounds).
#include <fftw3.h>
#include <omp.h>

#include <algorithm>
#include <complex>
#include <mutex>
#include <vector>

#include "common/cpu_math.h"
#include "ops/hyena/hyena.h"

namespace longmix {

namespace {
std::mutex& planner_mutex() {
  static std::mutex mu;
  return mu;
}
// Thread buffers start on 64-byte lines so new-array execution keeps the plans' alignment.
constexpr std::int64_t round16(std::int64_t n) { return (n + 15) / 16 * 16; }

constexpr std::int64_t kMeasuredPlanFrom = 1 << 14;  // FFT size n = 2L
constexpr double kPlanSeconds = 5.0;                 // per plan, FFTW's planner time limit

struct FftPair {
  fftwf_plan r2c = nullptr, c2r = nullptr;
  std::int64_t n = 0;
  explicit FftPair(std::int64_t n_) : n(n_) {
    std::lock_guard<std::mutex> lock(planner_mutex());
    float* x = fftwf_alloc_real(n);
    fftwf_complex* X = fftwf_alloc_complex(n / 2 + 1);
    // Measured plans where they pay: r2c + c2r at 2^15 / 2^17 / 2^19 take 0.091 / 0.455 /
    // 2.18 ms measured against 0.144 / 0.634 / 3.29 ms estimated (2-core EPYC dev machine),
    // for 1-11 s of planning once per size and process (FFTW keeps the wisdom). Small sizes
    // (tests, the start-of-run check) keep FFTW_ESTIMATE.
    const unsigned flags = n >= kMeasuredPlanFrom ? FFTW_MEASURE : FFTW_ESTIMATE;
    fftwf_set_timelimit(kPlanSeconds);
    r2c = fftwf_plan_dft_r2c_1d(static_cast<int>(n), x, X, flags);
    c2r = fftwf_plan_dft_c2r_1d(static_cast<int>(n), X, x, flags);
    fftwf_free(x);
    fftwf_free(X);
    if (!r2c || !c2r) throw RuntimeFailure(detail::concat("FFTW could not plan size ", n));
  }
  ~FftPair() {
    std::lock_guard<std::mutex> lock(planner_mutex());
    if (r2c) fftwf_destroy_plan(r2c);
    if (c2r) fftwf_destroy_plan(c2r);
  }
  FftPair(const FftPair&) = delete;
  FftPair& operator=(const FftPair&) = delete;
};

// y = x conv h via X·Hf/n, where Hf is the unscaled spectrum of zero-padded h.
inline void spectral_product(std::int64_t nc, fftwf_complex* X, const fftwf_complex* Hf,
                             float inv_n) {
#pragma omp simd
  for (std::int64_t i = 0; i < nc; ++i) {
    const float xr = X[i][0], xi = X[i][1], hr = Hf[i][0], hi = Hf[i][1];
    X[i][0] = (xr * hr - xi * hi) * inv_n;
    X[i][1] = (xr * hi + xi * hr) * inv_n;
  }
}
}  // namespace

struct HyenaCpuPlan::Impl {
  FftPair fft;
  Buffer<float> spectra;  // filter=cached: ((N-1)D, L+1, 2) unscaled spectra of h
  explicit Impl(std::int64_t L) : fft(2 * L) {}
};

HyenaCpuPlan::HyenaCpuPlan(const HyenaView& w, std::int64_t L, bool cache_filter,
                           Allocator& alloc)
    : w_(w), L_(L), cached_(cache_filter) {
  w.cfg.validate();
  LONGMIX_REQUIRE(L > 0, "hyena: sequence length L must be positive, got ", L);
  LONGMIX_REQUIRE(L <= w.cfg.l_max, "hyena: L=", L, " is longer than l_max=", w.cfg.l_max,
                  " of these weights (the filter's time grid t_i = i/(l_max-1) is fixed by l_max)");
  impl_ = std::make_unique<Impl>(L);
  if (cached_) {
    const std::int64_t Dh = w.cfg.Dh(), n = 2 * L, nc = L + 1;
    impl_->spectra = Buffer<float>(alloc, static_cast<std::size_t>(Dh * nc * 2));
    Buffer<float> h(alloc, static_cast<std::size_t>(L * Dh));  // (Dh, L)
    hyena_filter_cpu(w, L, h.data(), alloc, FilterLayout::kChannelMajor);
    const int nt = omp_get_max_threads();
    Buffer<float> xb(alloc, static_cast<std::size_t>(round16(n) * nt));
#pragma omp parallel for schedule(static)
    for (std::int64_t c = 0; c < Dh; ++c) {
      float* x = xb.data() + round16(n) * omp_get_thread_num();
      std::copy(h.data() + c * L, h.data() + (c + 1) * L, x);
      std::fill(x + L, x + n, 0.0f);
      fftwf_execute_dft_r2c(impl_->fft.r2c, x,
                            reinterpret_cast<fftwf_complex*>(impl_->spectra.data() + c * nc * 2));
    }
  }
}

HyenaCpuPlan::~HyenaCpuPlan() = default;

namespace {
// Step 2, short causal depthwise conv on channel-major rows (v6), in place: zT (B, C, L) holds z
// (bias: in_proj's bias still to add, as the layer's product leaves it; nullptr where z has it).
// A row goes in blocks of kBlk times through a small buffer that also holds the K − 1 inputs
// before the block (their row entries are outputs by then); times before 0 are zero.
void bias_short_conv_rows(const HyenaView& w, std::int64_t B, std::int64_t L, const float* bias, float* zT) {
  const std::int64_t C = w.cfg.C(), K = w.cfg.short_filter_order;
  constexpr std::int64_t kBlk = 1024;
#pragma omp parallel
  {
    std::vector<float> tmp(static_cast<std::size_t>(K - 1 + kBlk)), wt(static_cast<std::size_t>(K));
#pragma omp for schedule(static)
    for (std::int64_t row = 0; row < B * C; ++row) {
      const std::int64_t c = row % C;
      float* z = zT + row * L;
      const float bin = bias ? bias[c] : 0.0f, sb = w.short_filter_bias[c];
      for (std::int64_t j = 0; j < K; ++j) wt[j] = w.short_filter_weight[c * K + j];
      float* x = tmp.data();
      for (std::int64_t j = 0; j < K - 1; ++j) x[j] = 0.0f;  // z before time 0
      for (std::int64_t t0 = 0; t0 < L; t0 += kBlk) {
        const std::int64_t n = std::min(kBlk, L - t0);
#pragma omp simd
        for (std::int64_t i = 0; i < n; ++i) x[K - 1 + i] = z[t0 + i] + bin;
        if (K == 3) {  // the reference's length: taps unrolled
          const float w0 = wt[0], w1 = wt[1], w2 = wt[2];
#pragma omp simd
          for (std::int64_t i = 0; i < n; ++i) z[t0 + i] = sb + w0 * x[i] + w1 * x[i + 1] + w2 * x[i + 2];
        } else {
          for (std::int64_t i = 0; i < n; ++i) {
            float acc = sb;
            for (std::int64_t j = 0; j < K; ++j) acc += wt[j] * x[i + j];
            z[t0 + i] = acc;
          }
        }
        for (std::int64_t j = 0; j < K - 1; ++j) x[j] = x[n + j];  // the block's last K − 1 inputs
      }
    }
  }
}

// (R, Cc) row-major -> (Cc, R) row-major, R and Cc in 32 × 32 tiles.
void transpose(std::int64_t R, std::int64_t Cc, const float* in, float* out) {
  constexpr std::int64_t kT = 32;
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t r0 = 0; r0 < R; r0 += kT)
    for (std::int64_t c0 = 0; c0 < Cc; c0 += kT) {
      const std::int64_t r1 = std::min(R, r0 + kT), c1 = std::min(Cc, c0 + kT);
      for (std::int64_t c = c0; c < c1; ++c)
        for (std::int64_t r = r0; r < r1; ++r) out[c * R + r] = in[r * Cc + c];
    }
}
}  // namespace

void HyenaCpuPlan::core_channel_major(std::int64_t B, const float* zT, float* yT,
                                      Allocator& alloc) {
  const HyenaConfig& cfg = w_.cfg;
  const std::int64_t L = L_, D = cfg.D, C = cfg.C(), N = cfg.order, n = 2 * L, nc = L + 1;

  // Step 4 (filter=recompute): hT (Dh, L) from the weights, every call like the reference.
  Buffer<float> h;
  if (!cached_) {
    h = Buffer<float>(alloc, static_cast<std::size_t>(L * cfg.Dh()));
    hyena_filter_cpu(w_, L, h.data(), alloc, FilterLayout::kChannelMajor);
  }

  // Steps 5-6 per channel c of v: thread buffers x (2L), X (L+1 complex), Hf ((N-1)(L+1));
  // v lives in its row of yT.
  const int nt = omp_get_max_threads();
  const std::int64_t per =
      round16(n) + round16(2 * nc) + (cached_ ? 0 : round16(2 * nc * (N - 1)));
  Buffer<float> scratch(alloc, static_cast<std::size_t>(per * nt));
  const float inv_n = 1.0f / static_cast<float>(n);
  const fftwf_plan r2c = impl_->fft.r2c, c2r = impl_->fft.c2r;

#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t c = 0; c < D; ++c) {
    float* x = scratch.data() + per * omp_get_thread_num();
    auto* X = reinterpret_cast<fftwf_complex*>(x + round16(n));
    auto* Hown = reinterpret_cast<fftwf_complex*>(x + round16(n) + round16(2 * nc));
    // Spectra of this channel's filters, o = 0..N-2.
    auto spectrum = [&](std::int64_t o) -> const fftwf_complex* {
      if (cached_)
        return reinterpret_cast<const fftwf_complex*>(impl_->spectra.data() +
                                                      (o * D + c) * nc * 2);
      return Hown + o * nc;
    };
    if (!cached_) {
      for (std::int64_t o = 0; o < N - 1; ++o) {
        const float* ho = h.data() + (o * D + c) * L;
        std::copy(ho, ho + L, x);
        std::fill(x + L, x + n, 0.0f);
        fftwf_execute_dft_r2c(r2c, x, Hown + o * nc);
      }
    }
    for (std::int64_t b = 0; b < B; ++b) {
      const float* zb = zT + b * C * L;
      float* v = yT + (b * D + c) * L;
      const float* vin = zb + (N * D + c) * L;  // v: last split
      std::copy(vin, vin + L, v);
      for (std::int64_t o = 0; o < N - 1; ++o) {
        const float* gate = zb + ((N - 1 - o) * D + c) * L;  // x_{N-1}, ..., x_1
#pragma omp simd
        for (std::int64_t t = 0; t < L; ++t) {
          v[t] *= gate[t];
          x[t] = v[t];
        }
        std::fill(x + L, x + n, 0.0f);
        fftwf_execute_dft_r2c(r2c, x, X);
        spectral_product(nc, X, spectrum(o), inv_n);
        fftwf_execute_dft_c2r(c2r, X, x);
        const float skip = w_.filter_bias[o * D + c];
#pragma omp simd
        for (std::int64_t t = 0; t < L; ++t) v[t] = x[t] + skip * v[t];
      }
      const float* x0 = zb + c * L;
#pragma omp simd
      for (std::int64_t t = 0; t < L; ++t) v[t] *= x0[t];  // ⊙ x0
    }
  }
}

void HyenaCpuPlan::core(std::int64_t B, const float* z, float* yg, Allocator& alloc) {
  LONGMIX_REQUIRE(B > 0, "hyena: batch B must be positive, got ", B);
  const std::int64_t L = L_, D = w_.cfg.D, C = w_.cfg.C();
  Buffer<float> yT(alloc, static_cast<std::size_t>(B * D * L));  // (B, D, L)
  {
    Buffer<float> zT(alloc, static_cast<std::size_t>(B * C * L));  // (B, C, L)
    for (std::int64_t b = 0; b < B; ++b) transpose(L, C, z + b * L * C, zT.data() + b * C * L);
    bias_short_conv_rows(w_, B, L, nullptr, zT.data());
    core_channel_major(B, zT.data(), yT.data(), alloc);
  }
  for (std::int64_t b = 0; b < B; ++b) transpose(D, L, yT.data() + b * D * L, yg + b * L * D);
}

void HyenaCpuPlan::forward(std::int64_t B, const float* u, float* y, Allocator& alloc) {
  LONGMIX_REQUIRE(B > 0, "hyena: batch B must be positive, got ", B);
  const std::int64_t L = L_, D = w_.cfg.D, C = w_.cfg.C();
  Buffer<float> yT;  // (B, D, L)
  {
    // in_proj channel-major (v6): zT_b (C, L) = W_in · u_bᵀ, then its bias and the short conv
    // along the rows in place (v5 and before: a time-major z (B, L, C) and a transposing conv).
    Buffer<float> zT(alloc, static_cast<std::size_t>(B * C * L));  // (B, C, L)
    for (std::int64_t b = 0; b < B; ++b)
      sgemm(false, true, C, L, D, 1.0f, w_.in_proj_weight, D, u + b * L * D, D, 0.0f, zT.data() + b * C * L, L);
    bias_short_conv_rows(w_, B, L, w_.in_proj_bias, zT.data());
    yT = Buffer<float>(alloc, static_cast<std::size_t>(B * D * L));
    core_channel_major(B, zT.data(), yT.data(), alloc);
  }
  // out_proj from the channel-major operand: y_b (L, D) = yT_bᵀ · Wᵀ + bias.
  for (std::int64_t i = 0; i < B * L; ++i) std::copy(w_.out_proj_bias, w_.out_proj_bias + D, y + i * D);
  for (std::int64_t b = 0; b < B; ++b)
    sgemm(true, true, L, D, D, 1.0f, yT.data() + b * D * L, L, w_.out_proj_weight, D, 1.0f,
          y + b * L * D, D);
}

void hyena_forward_cpu(const HyenaView& w, std::int64_t B, std::int64_t L, const float* u, float* y,
                       Allocator& alloc) {
  HyenaCpuPlan plan(w, L, false, alloc);
  plan.forward(B, u, y, alloc);
}

void causal_conv_fft_cpu(std::int64_t L, const float* x, const float* h, float* y) {
  LONGMIX_REQUIRE(L > 0, "causal_conv_fft_cpu: L must be positive, got ", L);
  const std::int64_t n = 2 * L, nc = L + 1;
  FftPair fft(n);
  float* a = fftwf_alloc_real(n);
  fftwf_complex* A = fftwf_alloc_complex(nc);
  fftwf_complex* Hf = fftwf_alloc_complex(nc);
  std::copy(h, h + L, a);
  std::fill(a + L, a + n, 0.0f);
  fftwf_execute_dft_r2c(fft.r2c, a, Hf);
  std::copy(x, x + L, a);
  std::fill(a + L, a + n, 0.0f);
  fftwf_execute_dft_r2c(fft.r2c, a, A);
  spectral_product(nc, A, Hf, 1.0f / static_cast<float>(n));
  fftwf_execute_dft_c2r(fft.c2r, A, a);
  std::copy(a, a + L, y);
  fftwf_free(a);
  fftwf_free(A);
  fftwf_free(Hf);
}

std::string fftw_version() { return fftwf_version; }

}  // namespace longmix
