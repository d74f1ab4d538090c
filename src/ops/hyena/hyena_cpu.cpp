// Hyena forward on the CPU, fp32 (SPEC §3): OpenBLAS projections, short causal depthwise
// conv, implicit filter MLP, FFTW r2c/c2r long convolution of size 2L per channel with the
// skip term and gates, out_proj.
//
// Versions
//   v1: channel-parallel (OpenMP over the D channels of v); per channel the whole recurrence
//     (gate, FFT conv, skip) runs on thread-local 2L buffers, so nothing (L, (N-1)D)-sized
//     in the frequency domain is held unless filter=cached. Plans: FFTW_ESTIMATE, built once
//     per HyenaCpuPlan, executed with fftwf_execute_dft_r2c/c2r on new arrays.
#include <fftw3.h>
#include <omp.h>

#include <algorithm>
#include <complex>
#include <mutex>

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

struct FftPair {
  fftwf_plan r2c = nullptr, c2r = nullptr;
  std::int64_t n = 0;
  explicit FftPair(std::int64_t n_) : n(n_) {
    std::lock_guard<std::mutex> lock(planner_mutex());
    float* x = fftwf_alloc_real(n);
    fftwf_complex* X = fftwf_alloc_complex(n / 2 + 1);
    r2c = fftwf_plan_dft_r2c_1d(static_cast<int>(n), x, X, FFTW_ESTIMATE);
    c2r = fftwf_plan_dft_c2r_1d(static_cast<int>(n), X, x, FFTW_ESTIMATE);
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
    Buffer<float> h(alloc, static_cast<std::size_t>(L * Dh));  // (L, Dh)
    hyena_filter_cpu(w, L, h.data(), alloc);
    const int nt = omp_get_max_threads();
    Buffer<float> xb(alloc, static_cast<std::size_t>(round16(n) * nt));
#pragma omp parallel for schedule(static)
    for (std::int64_t c = 0; c < Dh; ++c) {
      float* x = xb.data() + round16(n) * omp_get_thread_num();
      for (std::int64_t t = 0; t < L; ++t) x[t] = h[t * Dh + c];
      std::fill(x + L, x + n, 0.0f);
      fftwf_execute_dft_r2c(impl_->fft.r2c, x,
                            reinterpret_cast<fftwf_complex*>(impl_->spectra.data() + c * nc * 2));
    }
  }
}

HyenaCpuPlan::~HyenaCpuPlan() = default;

void HyenaCpuPlan::core(std::int64_t B, const float* z, float* yg, Allocator& alloc) {
  LONGMIX_REQUIRE(B > 0, "hyena: batch B must be positive, got ", B);
  const HyenaConfig& cfg = w_.cfg;
  const std::int64_t L = L_, D = cfg.D, C = cfg.C(), Dh = cfg.Dh(), N = cfg.order;
  const std::int64_t K = cfg.short_filter_order, n = 2 * L, nc = L + 1;

  // Step 2: short causal depthwise conv, zc (B, L, C).
  Buffer<float> zc(alloc, static_cast<std::size_t>(B * L * C));
#pragma omp parallel for schedule(static)
  for (std::int64_t bt = 0; bt < B * L; ++bt) {
    const std::int64_t t = bt % L;
    float* out = zc.data() + bt * C;
    for (std::int64_t c = 0; c < C; ++c) out[c] = w_.short_filter_bias[c];
    for (std::int64_t j = 0; j < K; ++j) {
      const std::int64_t ts = t + j - (K - 1);
      if (ts < 0) continue;
      const float* in = z + (bt - t + ts) * C;
#pragma omp simd
      for (std::int64_t c = 0; c < C; ++c) out[c] += w_.short_filter_weight[c * K + j] * in[c];
    }
  }

  // Step 4 (filter=recompute): h (L, Dh) from the weights, every call like the reference.
  Buffer<float> h;
  if (!cached_) {
    h = Buffer<float>(alloc, static_cast<std::size_t>(L * Dh));
    hyena_filter_cpu(w_, L, h.data(), alloc);
  }

  // Step 5-6 per channel c of v: thread buffers x (2L), X (L+1 complex), v (L), Hf ((N-1)(L+1)).
  const int nt = omp_get_max_threads();
  const std::int64_t per = round16(n) + round16(2 * nc) + round16(L) +
                           (cached_ ? 0 : round16(2 * nc * (N - 1)));
  Buffer<float> scratch(alloc, static_cast<std::size_t>(per * nt));
  const float inv_n = 1.0f / static_cast<float>(n);
  const fftwf_plan r2c = impl_->fft.r2c, c2r = impl_->fft.c2r;

#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t c = 0; c < D; ++c) {
    float* x = scratch.data() + per * omp_get_thread_num();
    auto* X = reinterpret_cast<fftwf_complex*>(x + round16(n));
    float* v = x + round16(n) + round16(2 * nc);
    auto* Hown = reinterpret_cast<fftwf_complex*>(v + round16(L));
    // Spectra of this channel's filters, o = 0..N-2.
    auto spectrum = [&](std::int64_t o) -> const fftwf_complex* {
      if (cached_)
        return reinterpret_cast<const fftwf_complex*>(impl_->spectra.data() +
                                                      (o * D + c) * nc * 2);
      return Hown + o * nc;
    };
    if (!cached_) {
      for (std::int64_t o = 0; o < N - 1; ++o) {
        for (std::int64_t t = 0; t < L; ++t) x[t] = h[t * Dh + o * D + c];
        std::fill(x + L, x + n, 0.0f);
        fftwf_execute_dft_r2c(r2c, x, Hown + o * nc);
      }
    }
    for (std::int64_t b = 0; b < B; ++b) {
      const float* zb = zc.data() + b * L * C;
      for (std::int64_t t = 0; t < L; ++t) v[t] = zb[t * C + N * D + c];  // v: last split
      for (std::int64_t o = 0; o < N - 1; ++o) {
        const std::int64_t gate = (N - 1 - o) * D + c;  // x_{N-1}, ..., x_1
        for (std::int64_t t = 0; t < L; ++t) v[t] *= zb[t * C + gate];
        std::copy(v, v + L, x);
        std::fill(x + L, x + n, 0.0f);
        fftwf_execute_dft_r2c(r2c, x, X);
        spectral_product(nc, X, spectrum(o), inv_n);
        fftwf_execute_dft_c2r(c2r, X, x);
        const float skip = w_.filter_bias[o * D + c];
#pragma omp simd
        for (std::int64_t t = 0; t < L; ++t) v[t] = x[t] + skip * v[t];
      }
      float* yb = yg + b * L * D;
      for (std::int64_t t = 0; t < L; ++t) yb[t * D + c] = v[t] * zb[t * C + c];  // ⊙ x0
    }
  }
}

void HyenaCpuPlan::forward(std::int64_t B, const float* u, float* y, Allocator& alloc) {
  const std::int64_t L = L_, D = w_.cfg.D, C = w_.cfg.C();
  Buffer<float> yg(alloc, static_cast<std::size_t>(B * L * D));  // (B, L, D)
  {
    Buffer<float> z(alloc, static_cast<std::size_t>(B * L * C));  // (B, L, C)
    linear(B * L, C, D, u, w_.in_proj_weight, w_.in_proj_bias, z.data());
    core(B, z.data(), yg.data(), alloc);
  }
  linear(B * L, D, D, yg.data(), w_.out_proj_weight, w_.out_proj_bias, y);
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
