// hyena-cuda: see hyena_cuda.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cufft.h>

#include <cmath>
#include <vector>

#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "ops/hyena/hyena_cuda.h"
#include "ops/hyena/real_pair.cuh"

namespace longmix {

namespace {
constexpr int kTile = 32;
constexpr int kChunk = 1024;  // time points per block of the streaming kernels (256 threads, 4 each)
constexpr int kMaxTaps = 9;

// Channel pairs: channel 2j is the real part and 2j+1 the imaginary part of complex row j, so
// one complex FFT of size R = 2L transforms two real channels (their spectra are separated in
// the spectral kernel from Z[k] and Z[R-k]). Pair p of batch b: b = p / (D/2), j = p % (D/2).
//
// Channel-major projections: zg (B, (N-1)·D, L) holds x_0 .. x_{N-2}, zl (B, 2D, L) x_{N-1} and
// v, both straight from the in_proj product (its bias is added here, before the short conv, whose
// zero padding is not biased). w, bs, b_in are indexed by the group's channel gc = g·D + c.
struct ShortConv {
  const float *w, *bs, *b_in;
  int K;
  std::int64_t L;
};

// Stages rows[0..n) (each a channel row of L values of dtype T, group channels gc[i]) over the
// chunk [t0 - (K-1), t0 + kChunk) into xs, biased, zero outside [0, L); then returns the short
// conv of row i at chunk offset u through conv(i, u).
template <typename T, int kRows>
struct ConvStage {
  float xs[kRows][kChunk + kMaxTaps - 1];
  float w[kRows][kMaxTaps];
  float bs[kRows];
  __device__ void load(const ShortConv& sc, const T* const (&rows)[kRows], const std::int64_t (&gc)[kRows],
                       std::int64_t t0) {
    const int halo = sc.K - 1;
    for (int r = 0; r < kRows; ++r) {
      const float bi = sc.b_in ? sc.b_in[gc[r]] : 0.0f;
      for (int i = threadIdx.x; i < kChunk + halo; i += blockDim.x) {
        const std::int64_t ts = t0 - halo + i;
        xs[r][i] = ts >= 0 && ts < sc.L ? to_float(rows[r][ts]) + bi : 0.0f;
      }
      if (threadIdx.x < sc.K) w[r][threadIdx.x] = sc.w[gc[r] * sc.K + threadIdx.x];
      if (threadIdx.x == 0) bs[r] = sc.bs[gc[r]];
    }
    __syncthreads();
  }
  __device__ float conv(const ShortConv& sc, int r, int u) const {
    float acc = bs[r];
    for (int j = 0; j < sc.K; ++j) acc += w[r][j] * xs[r][u + j];
    return acc;
  }
};

// S (B·D/2 complex rows of R) = [v ⊙ x_{N-1} of channels (2j, 2j+1) for t < L, zeros after].
// Grid (ceil(R / kChunk), B·D/2), 256 threads; global reads and writes coalesced.
template <typename T>
__global__ void __launch_bounds__(256) conv_gate_kernel(const T* __restrict__ zl, ShortConv sc, int N,
                                                        std::int64_t D, float2* __restrict__ S, std::int64_t R) {
  __shared__ ConvStage<T, 4> st;
  const std::int64_t p = blockIdx.y, b = p / (D / 2), c0 = 2 * (p - b * (D / 2)), L = sc.L;
  const std::int64_t t0 = std::int64_t(blockIdx.x) * kChunk;
  float2* out = S + p * R + t0;
  const int n = int(std::min<std::int64_t>(kChunk, R - t0));
  if (t0 >= L) {  // the zero tail
    for (int i = threadIdx.x; i < n; i += 256) out[i] = make_float2(0.f, 0.f);
    return;
  }
  const std::int64_t gx = std::int64_t(N - 1) * D, gv = gx + D;  // group offsets of x_{N-1}, v
  const T* const rows[4] = {zl + (b * 2 * D + c0) * L, zl + (b * 2 * D + D + c0) * L,
                            zl + (b * 2 * D + c0 + 1) * L, zl + (b * 2 * D + D + c0 + 1) * L};
  const std::int64_t gc[4] = {gx + c0, gv + c0, gx + c0 + 1, gv + c0 + 1};
  st.load(sc, rows, gc, t0);
  for (int i = threadIdx.x; i < n; i += 256) {
    const bool in = t0 + i < L;
    out[i] = in ? make_float2(st.conv(sc, 0, i) * st.conv(sc, 1, i), st.conv(sc, 2, i) * st.conv(sc, 3, i))
                : make_float2(0.f, 0.f);
  }
}

// Order > 2: S = [y ⊙ x_g of both channels for t < L, zeros after] (the inverse FFT wrote the
// circular tail). Grid (ceil(R / kChunk), B·D/2).
template <typename T>
__global__ void __launch_bounds__(256) regate_kernel(float2* __restrict__ S, const T* __restrict__ zg, ShortConv sc,
                                                     int g, int G, std::int64_t D, std::int64_t R) {
  __shared__ ConvStage<T, 2> st;
  const std::int64_t p = blockIdx.y, b = p / (D / 2), c0 = 2 * (p - b * (D / 2)), L = sc.L;
  const std::int64_t t0 = std::int64_t(blockIdx.x) * kChunk;
  float2* row = S + p * R + t0;
  const int n = int(std::min<std::int64_t>(kChunk, R - t0));
  if (t0 >= L) {
    for (int i = threadIdx.x; i < n; i += 256) row[i] = make_float2(0.f, 0.f);
    return;
  }
  const T* const rows[2] = {zg + ((b * G + g) * D + c0) * L, zg + ((b * G + g) * D + c0 + 1) * L};
  const std::int64_t gc[2] = {std::int64_t(g) * D + c0, std::int64_t(g) * D + c0 + 1};
  st.load(sc, rows, gc, t0);
  for (int i = threadIdx.x; i < n; i += 256) {
    const float2 y = row[i];
    row[i] = t0 + i < L ? make_float2(y.x * st.conv(sc, 0, i), y.y * st.conv(sc, 1, i)) : make_float2(0.f, 0.f);
  }
}

// ygc (B, D, L) channel-major = y (pair rows of R, real part channel 2j, imaginary 2j+1) ⊙ x_0,
// t < L. Grid (ceil(L / kChunk), B·D/2).
template <typename T>
__global__ void __launch_bounds__(256) output_gate_kernel(const float2* __restrict__ S, const T* __restrict__ zg,
                                                          ShortConv sc, int G, std::int64_t D, std::int64_t R,
                                                          T* __restrict__ ygc) {
  __shared__ ConvStage<T, 2> st;
  const std::int64_t p = blockIdx.y, b = p / (D / 2), c0 = 2 * (p - b * (D / 2)), L = sc.L;
  const std::int64_t t0 = std::int64_t(blockIdx.x) * kChunk;
  const T* const rows[2] = {zg + (b * G * D + c0) * L, zg + (b * G * D + c0 + 1) * L};
  const std::int64_t gc[2] = {c0, c0 + 1};
  st.load(sc, rows, gc, t0);
  const int n = int(std::min<std::int64_t>(kChunk, L - t0));
  T* o0 = ygc + (b * D + c0) * L + t0;
  T* o1 = o0 + L;
  for (int i = threadIdx.x; i < n; i += 256) {
    const float2 y = S[p * R + t0 + i];
    o0[i] = from_float<T>(y.x * st.conv(sc, 0, i));
    o1[i] = from_float<T>(y.y * st.conv(sc, 1, i));
  }
}

// out (B, n, rows) = in (B, rows, ld_in)[:, :, col0 : col0 + n] transposed per batch: time-major
// <-> channel-major. Grid (ceil(n / 32), ceil(rows / 32), B), block (32, 8).
template <typename T>
__global__ void transpose_kernel(const T* __restrict__ in, std::int64_t rows, std::int64_t ld_in, std::int64_t col0,
                                 std::int64_t n, T* __restrict__ out) {
  __shared__ T tile[kTile][kTile + 1];
  const std::int64_t r0 = std::int64_t(blockIdx.y) * kTile, c0 = std::int64_t(blockIdx.x) * kTile, b = blockIdx.z;
  for (int rr = threadIdx.y; rr < kTile; rr += blockDim.y) {
    const std::int64_t r = r0 + rr, c = c0 + threadIdx.x;
    if (r < rows && c < n) tile[rr][threadIdx.x] = in[(b * rows + r) * ld_in + col0 + c];
  }
  __syncthreads();
  for (int cc = threadIdx.y; cc < kTile; cc += blockDim.y) {
    const std::int64_t c = c0 + cc, r = r0 + threadIdx.x;
    if (r < rows && c < n) out[(b * n + c) * rows + r] = tile[threadIdx.x][cc];
  }
}

// Filter MLP layer 0: act (L, F) = sin(freq ⊙ (z (L, E) · W0ᵀ + b0)).
__global__ void filter_first_kernel(const float* __restrict__ z, const float* __restrict__ W0,
                                    const float* __restrict__ b0, const float* __restrict__ freq,
                                    int E, int F, std::int64_t L, float* __restrict__ act) {
  const std::int64_t n = L * F;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t t = i / F;
    const int f = int(i - t * F);
    float acc = b0[f];
    for (int e = 0; e < E; ++e) acc += W0[f * E + e] * z[t * E + e];
    act[i] = sinf(freq[f] * acc);
  }
}

// act (L, F) = sin(freq ⊙ (act + b)) after a cuBLAS product.
__global__ void bias_sin_kernel(float* __restrict__ act, const float* __restrict__ bias,
                                const float* __restrict__ freq, int F, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const int f = int(i % F);
    act[i] = sinf(freq[f] * (act[i] + bias[f]));
  }
}

// Hz (Dh/2 complex rows of R) = [h ⊙ (exp(-t_t |δ_c|) + shift) of channels (2j, 2j+1) for
// t < L, zeros after], from the MLP's compact h (Dh, L). Grid (ceil(R / kChunk), Dh/2).
__global__ void __launch_bounds__(256) modulation_kernel(const float* __restrict__ h, const float* __restrict__ tgrid,
                                                         const float* __restrict__ deltas, float shift, std::int64_t L,
                                                         std::int64_t R, float2* __restrict__ Hz) {
  const std::int64_t j = blockIdx.y, t0 = std::int64_t(blockIdx.x) * kChunk;
  const float d0 = fabsf(deltas[2 * j]), d1 = fabsf(deltas[2 * j + 1]);
  const float* h0 = h + 2 * j * L;
  const float* h1 = h0 + L;
  float2* out = Hz + j * R;
  const std::int64_t n = std::min<std::int64_t>(kChunk, R - t0);
  for (int i = threadIdx.x; i < n; i += 256) {
    const std::int64_t t = t0 + i;
    out[t] = t < L ? make_float2(h0[t] * (__expf(-tgrid[t] * d0) + shift), h1[t] * (__expf(-tgrid[t] * d1) + shift))
                   : make_float2(0.f, 0.f);
  }
}

// In place on the signal pairs' spectra S (rows × R): from Z = FFT(x_a + i·x_b) the two real
// spectra X_a[k] = (Z[k] + conj Z[R-k]) / 2 and X_b[k] = (Z[k] - conj Z[R-k]) / 2i, likewise H_a,
// H_b from the filter pair's spectrum; Y = X · (H + skip) / R (the skip term folded in), and
// W = Y_a + i·Y_b so that the inverse FFT gives y_a + i·y_b. Thread (p, k) for k in [0, R/2]
// writes W[k] and W[R-k]. Grid (ceil((R/2 + 1) / 256), rows).
__global__ void __launch_bounds__(256) spectral_kernel(float2* __restrict__ S, const float2* __restrict__ Hz,
                                                       const float* __restrict__ skip, int o, std::int64_t D,
                                                       std::int64_t R, float inv_n) {
  const std::int64_t p = blockIdx.y, k = std::int64_t(blockIdx.x) * 256 + threadIdx.x;
  if (k > R / 2) return;
  const std::int64_t k2 = k == 0 ? 0 : R - k;
  const std::int64_t j = p % (D / 2), hj = std::int64_t(o) * (D / 2) + j;  // filter channel pair
  const float sa = skip[2 * hj], sb = skip[2 * hj + 1];
  float2* row = S + p * R;
  const float2* hrow = Hz + hj * R;
  const pair::PairFilter f = pair::pair_filter(hrow[k], hrow[k2], pair::pair_skip(sa, sb, inv_n));
  const float2 z1 = row[k], z2 = row[k2];
  row[k] = f.at_k(z1, z2);
  if (k2 != k) row[k2] = f.at_mirror(z1, z2);
}

unsigned grid1d(std::int64_t n) { return static_cast<unsigned>(std::min<std::int64_t>((n + 255) / 256, 132 * 32)); }

// In-place complex transforms of `batch` contiguous rows of n, both directions.
struct FftPlan {
  cufftHandle h = 0;
  std::size_t work = 0;
  FftPlan(std::int64_t n, std::int64_t batch, cudaStream_t s) {
    CUFFT_CHECK(cufftCreate(&h));
    try {
      CUFFT_CHECK(cufftSetAutoAllocation(h, 0));
      long long nn[1] = {n}, embed[1] = {n};
      CUFFT_CHECK(cufftMakePlanMany64(h, 1, nn, embed, 1, n, embed, 1, n, CUFFT_C2C, batch, &work));
      CUFFT_CHECK(cufftSetStream(h, s));
    } catch (...) {
      cufftDestroy(h);
      throw;
    }
  }
  ~FftPlan() { if (h) cufftDestroy(h); }
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;
  void exec(float2* x, int dir, void* work_area) const {
    CUFFT_CHECK(cufftSetWorkArea(h, work_area));
    auto* c = reinterpret_cast<cufftComplex*>(x);
    CUFFT_CHECK(cufftExecC2C(h, c, c, dir));
  }
};

}  // namespace

std::string hyena_cuda_unsupported(const HyenaConfig& cfg, DType t) {
  if (t == DType::kF32) return "hyena-cuda stores fp16 or bf16";
  if (cfg.short_filter_order > kMaxTaps)
    return "hyena-cuda: short filter of length " + std::to_string(cfg.short_filter_order) + " (supported: up to " +
           std::to_string(kMaxTaps) + ")";
  if (cfg.D % 2) return "hyena-cuda: odd d_model " + std::to_string(cfg.D) + " (channels are transformed in pairs)";
  return {};
}

std::string cufft_version_string() {
  int v = 0;
  cufftGetVersion(&v);
  return std::to_string(v);
}

struct HyenaCudaPlan::Impl {
  HyenaConfig cfg;
  std::int64_t B, L, R;  // R = 2L: complex rows of the zero-padded channel pairs
  DType t;
  bool cached;
  CudaContext ctx;
  Buffer<char> w_in, w_out;                              // (C, D), (D, D) in dtype t
  Buffer<char> b_in, sw, sb, fbias, pz, pt, freq, deltas;  // fp32
  Buffer<char> b_out;                                    // (D) in dtype t: in out_proj's epilogue
  std::vector<Buffer<char>> mlp_w, mlp_b;
  std::unique_ptr<FftPlan> plan_h, plan_s;
  Buffer<float2> spectrum;  // filter=cached: (Dh/2, R)

  const float* f(const Buffer<char>& b) const { return reinterpret_cast<const float*>(b.data()); }
  ShortConv short_conv(const float* bias_in) const { return ShortConv{f(sw), f(sb), bias_in, cfg.short_filter_order, L}; }
  dim3 rows_grid(std::int64_t len, std::int64_t rows) const {
    return dim3(unsigned((len + kChunk - 1) / kChunk), unsigned(rows));
  }
  // transpose_kernel over B batches: out (B, n, rows) = in (B, rows, ld_in)[:, :, col0 : col0 + n].
  template <typename T>
  void transpose(const T* in, std::int64_t rows, std::int64_t ld_in, std::int64_t col0, std::int64_t n, T* out) const {
    const dim3 grid(unsigned((n + kTile - 1) / kTile), unsigned((rows + kTile - 1) / kTile), unsigned(B));
    transpose_kernel<T><<<grid, dim3(kTile, 8), 0, ctx.stream>>>(in, rows, ld_in, col0, n, out);
    CUDA_CHECK_LAUNCH();
  }
  std::size_t work_bytes() const { return std::max(std::max(plan_h->work, plan_s->work), std::size_t(256)); }

  // The implicit filter's pair spectra (Dh/2, R), unscaled: the MLP's hidden layers as cuBLAS
  // fp32 products, the last (the widest, L·F·Dh) in TF32, modulation + pairing + padding in one
  // pass, one in-place complex FFT.
  Buffer<float2> filter_spectrum(Buffer<char>& work) {
    Allocator& a = *ctx.alloc;
    const std::int64_t F = cfg.filter_order, Dh = cfg.Dh();
    const int nl = cfg.num_linear();
    Buffer<float2> Hz(a, static_cast<std::size_t>(Dh / 2 * R));
    {
      Buffer<float> h(a, static_cast<std::size_t>(Dh * L));  // (Dh, L)
      {
        Buffer<float> act(a, static_cast<std::size_t>(L * F)), nxt(a, static_cast<std::size_t>(L * F));  // (L, F)
        filter_first_kernel<<<grid1d(L * F), 256, 0, ctx.stream>>>(f(pz), f(mlp_w[0]), f(mlp_b[0]), f(freq),
                                                                   cfg.emb_dim, int(F), L, act.data());
        CUDA_CHECK_LAUNCH();
        const float one = 1.0f, zero = 0.0f;
        for (int l = 1; l < nl - 1; ++l) {  // column-major nxtᵀ (F, L) = W_l · actᵀ
          CUBLAS_CHECK(cublasSgemm(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, int(F), int(L), int(F), &one, f(mlp_w[l]),
                                   int(F), act.data(), int(F), &zero, nxt.data(), int(F)));
          bias_sin_kernel<<<grid1d(L * F), 256, 0, ctx.stream>>>(nxt.data(), f(mlp_b[l]), f(freq), int(F), L * F);
          CUDA_CHECK_LAUNCH();
          std::swap(act, nxt);
        }
        // Column-major (L, Dh) = act (L, F) · W_lastᵀ: row-major h (Dh, L).
        CUBLAS_CHECK(cublasGemmEx(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, int(L), int(Dh), int(F), &one, act.data(),
                                  CUDA_R_32F, int(F), f(mlp_w[nl - 1]), CUDA_R_32F, int(F), &zero, h.data(),
                                  CUDA_R_32F, int(L), CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
      }
      modulation_kernel<<<rows_grid(R, Dh / 2), 256, 0, ctx.stream>>>(h.data(), f(pt), f(deltas), cfg.shift, L, R,
                                                                      Hz.data());
      CUDA_CHECK_LAUNCH();
    }
    plan_h->exec(Hz.data(), CUFFT_FORWARD, work.data());
    return Hz;
  }

  // The mixer between the projections, channel-major: zg (B, (N-1)D, L) = x_0 .. x_{N-2},
  // zl (B, 2D, L) = x_{N-1}, v (freed once read) -> ygc (B, D, L) = v ⊙ x_0.
  template <typename T>
  void mix(const T* zg, Buffer<char>& zl, const float* bias_in, const float2* Hz, Buffer<char>& work, T* ygc) {
    const std::int64_t D = cfg.D, N = cfg.order, pairs = B * D / 2;
    Allocator& a = *ctx.alloc;
    const ShortConv sc = short_conv(bias_in);
    Buffer<float2> S(a, static_cast<std::size_t>(pairs * R));  // (B, D/2, 2L) complex
    conv_gate_kernel<T><<<rows_grid(R, pairs), 256, 0, ctx.stream>>>(reinterpret_cast<const T*>(zl.data()), sc,
                                                                     int(N), D, S.data(), R);
    CUDA_CHECK_LAUNCH();
    zl.reset();  // stream order keeps it alive for the queued kernel
    const dim3 spec_grid(unsigned((R / 2 + 1 + 255) / 256), unsigned(pairs));
    for (int o = 0; o < N - 1; ++o) {
      if (o > 0) {  // gate with x_{N-1-o}
        regate_kernel<T><<<rows_grid(R, pairs), 256, 0, ctx.stream>>>(S.data(), zg, sc, int(N - 1 - o), int(N - 1),
                                                                      D, R);
        CUDA_CHECK_LAUNCH();
      }
      plan_s->exec(S.data(), CUFFT_FORWARD, work.data());
      spectral_kernel<<<spec_grid, 256, 0, ctx.stream>>>(S.data(), Hz, f(fbias), o, D, R, 1.0f / float(R));
      CUDA_CHECK_LAUNCH();
      plan_s->exec(S.data(), CUFFT_INVERSE, work.data());
    }
    output_gate_kernel<T><<<rows_grid(L, pairs), 256, 0, ctx.stream>>>(S.data(), zg, sc, int(N - 1), D, R, ygc);
    CUDA_CHECK_LAUNCH();
  }

  // Filter first (nothing of the signal is held yet), then the signal. u (layer) or z (core).
  template <typename T>
  void run(const T* u, const T* z, void* out) {
    const std::int64_t D = cfg.D, N = cfg.order, G = N - 1, C = cfg.C();
    Allocator& a = *ctx.alloc;
    const std::size_t es = sizeof(T);
    Buffer<char> work(a, work_bytes());
    Buffer<float2> hspec;
    const float2* Hz = spectrum.data();
    if (!cached) {
      hspec = filter_spectrum(work);
      Hz = hspec.data();
    }
    Buffer<char> zg(a, static_cast<std::size_t>(B * G * D * L) * es), zl(a, static_cast<std::size_t>(B * 2 * D * L) * es);
    if (u) {  // in_proj straight to channel-major: per batch, column-major (L, n) = u_b (L, D) · W[rows]ᵀ
      for (std::int64_t b = 0; b < B; ++b) {
        for (int part = 0; part < 2; ++part) {
          GemmArgs g;
          g.ta = true; g.m = L; g.n = (part ? 2 : G) * D; g.k = D;
          g.A = u + b * L * D; g.lda = D;
          g.B = static_cast<const char*>(w_in.data()) + (part ? G * D : 0) * D * es; g.ldb = D;
          g.D = (part ? zl.data() : zg.data()) + (b * g.n * L) * es; g.ldd = L;
          gemm_cuda(t, g, ctx);
        }
      }
    } else {  // core: z (B, L, C) from the caller, time-major
      transpose(z, L, C, 0, G * D, reinterpret_cast<T*>(zg.data()));
      transpose(z, L, C, G * D, 2 * D, reinterpret_cast<T*>(zl.data()));
    }
    Buffer<char> ygc(a, static_cast<std::size_t>(B * D * L) * es);  // (B, D, L)
    mix(reinterpret_cast<const T*>(zg.data()), zl, u ? f(b_in) : nullptr, Hz, work, reinterpret_cast<T*>(ygc.data()));
    zg.reset();
    hspec.reset();
    work.reset();
    if (u) {  // out_proj from channel-major: per batch, column-major y_b (D, L) = W · ygc_b, bias in the epilogue
      for (std::int64_t b = 0; b < B; ++b) {
        GemmArgs g;
        g.ta = true; g.tb = true; g.m = D; g.n = L; g.k = D;
        g.A = w_out.data(); g.lda = D;
        g.B = ygc.data() + b * D * L * es; g.ldb = L;
        g.D = static_cast<char*>(out) + b * L * D * es; g.ldd = D;
        g.bias = b_out.data();
        gemm_cuda(t, g, ctx);
      }
    } else {  // core: yg (B, L, D), time-major
      transpose(reinterpret_cast<const T*>(ygc.data()), D, L, 0, L, static_cast<T*>(out));
    }
  }

  void dispatch(const void* u, const void* z, void* out) {
    if (t == DType::kF16) run(static_cast<const __half*>(u), static_cast<const __half*>(z), out);
    else run(static_cast<const __nv_bfloat16*>(u), static_cast<const __nv_bfloat16*>(z), out);
  }
};

HyenaCudaPlan::HyenaCudaPlan(const HyenaWeights& w, std::int64_t B, std::int64_t L, DType t, bool cache_filter,
                             CudaContext& ctx)
    : impl_(std::make_unique<Impl>()) {
  w.require_plan("hyena-cuda", B, L, hyena_cuda_unsupported(w.cfg, t));
  LONGMIX_REQUIRE(B * w.cfg.D / 2 <= 65535 && w.cfg.Dh() / 2 <= 65535, "hyena-cuda: B·D/2 = ", B * w.cfg.D / 2,
                  " channel pairs (supported: up to 65535)");
  Impl& m = *impl_;
  m.cfg = w.cfg;
  m.B = B;
  m.L = L;
  m.R = 2 * L;
  m.t = t;
  m.cached = cache_filter;
  m.ctx = ctx;
  Allocator& a = *ctx.alloc;
  cudaStream_t s = ctx.stream;
  m.w_in = upload_as(a, w.in_proj_weight, t, s);
  m.w_out = upload_as(a, w.out_proj_weight, t, s);
  m.b_in = upload_as(a, w.in_proj_bias, DType::kF32, s);
  m.sw = upload_as(a, w.short_filter_weight, DType::kF32, s);
  m.sb = upload_as(a, w.short_filter_bias, DType::kF32, s);
  m.fbias = upload_as(a, w.filter_bias, DType::kF32, s);
  m.pz = upload_as(a, w.pos_emb_z, DType::kF32, s);
  m.pt = upload_as(a, w.pos_emb_t, DType::kF32, s);
  m.freq = upload_as(a, w.freq, DType::kF32, s);
  m.deltas = upload_as(a, w.modulation_deltas, DType::kF32, s);
  m.b_out = upload_as(a, w.out_proj_bias, t, s);
  for (std::size_t i = 0; i < w.mlp_weight.size(); ++i) {
    m.mlp_w.push_back(upload_as(a, w.mlp_weight[i], DType::kF32, s));
    m.mlp_b.push_back(upload_as(a, w.mlp_bias[i], DType::kF32, s));
  }
  m.plan_h = std::make_unique<FftPlan>(m.R, w.cfg.Dh() / 2, s);
  m.plan_s = std::make_unique<FftPlan>(m.R, B * w.cfg.D / 2, s);
  if (cache_filter) {
    Buffer<char> work(a, m.work_bytes());
    m.spectrum = m.filter_spectrum(work);
    CUDA_CHECK(cudaStreamSynchronize(s));
  }
}

HyenaCudaPlan::~HyenaCudaPlan() = default;

void HyenaCudaPlan::core(const void* z, void* yg) { impl_->dispatch(nullptr, z, yg); }

void HyenaCudaPlan::forward(const void* u, void* y) { impl_->dispatch(u, nullptr, y); }

}  // namespace longmix
