// hyena-cuda: see hyena_cuda.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cufft.h>
#include <cufftXt.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "ops/hyena/hyena_cuda.h"
#include "ops/hyena/hyena_cuda_callbacks.h"
#include "hyena_cuda_callbacks_fatbin.h"  // generated: the callbacks as LTO-IR

namespace longmix {

namespace {
constexpr int kTile = 32;
constexpr int kChunk = 1024;  // time points per block of the streaming kernels (256 threads × 4)

// Channel-major layout: zg (B, (N-1)·D, L) holds x_0 .. x_{N-2}, zl (B, 2D, L) x_{N-1} and v,
// both straight from the in_proj product (its bias is added here, before the short conv, whose
// zero padding is not biased). w, bs, b_in are indexed by the group's channel gc = g·D + c.
struct ShortConv {
  const float *w, *bs, *b_in;
  int K;
  std::int64_t L;
  // Short conv of one channel's row at t (causal, K taps, zero padding).
  template <typename T>
  __device__ __forceinline__ float at(const T* __restrict__ row, std::int64_t gc, std::int64_t t) const {
    float acc = bs[gc];
    const float bi = b_in ? b_in[gc] : 0.0f;
    for (int j = 0; j < K; ++j) {
      const std::int64_t ts = t - (K - 1) + j;
      if (ts >= 0 && ts < L) acc += w[gc * K + j] * (to_float(row[ts]) + bi);
    }
    return acc;
  }
};

// upad (B·D rows of R = 2L fp32) = [v ⊙ x_{N-1} for t < L, zeros for L <= t < R]. Grid
// (ceil(R / kChunk), B·D), 256 threads, time points threadIdx.x + 256·e (coalesced stores); both
// rows of the block's chunk (plus the K-1 halo) staged in shared memory, read coalesced.
template <typename T>
__global__ void __launch_bounds__(256) conv_gate_kernel(const T* __restrict__ zl, ShortConv sc, int N,
                                                        std::int64_t D, float* __restrict__ upad,
                                                        std::int64_t R) {
  __shared__ float xs[2][kChunk + 8];
  const std::int64_t row = blockIdx.y, b = row / D, c = row - b * D, L = sc.L;
  const std::int64_t t0 = std::int64_t(blockIdx.x) * kChunk;
  float* out = upad + row * R + t0;
  const std::int64_t n = std::min<std::int64_t>(kChunk, R - t0);
  if (t0 >= L) {  // the zero tail
    for (int i = threadIdx.x; i < n; i += 256) out[i] = 0.0f;
    return;
  }
  const int K = sc.K, halo = K - 1;
  for (int g = 0; g < 2; ++g) {  // g = 0: x_{N-1}, 1: v
    const std::int64_t gc = std::int64_t(N - 1 + g) * D + c;
    const T* src = zl + ((b * 2 + g) * D + c) * L;
    const float bi = sc.b_in ? sc.b_in[gc] : 0.0f;
    for (int i = threadIdx.x; i < kChunk + halo; i += 256) {
      const std::int64_t ts = t0 - halo + i;
      xs[g][i] = ts >= 0 && ts < L ? to_float(src[ts]) + bi : 0.0f;
    }
  }
  __syncthreads();
  const std::int64_t gx = std::int64_t(N - 1) * D + c, gv = gx + D;
  float wx[9], wv[9];
  for (int j = 0; j < K; ++j) { wx[j] = sc.w[gx * K + j]; wv[j] = sc.w[gv * K + j]; }
  const float bx = sc.bs[gx], bv = sc.bs[gv];
  for (int i = threadIdx.x; i < n; i += 256) {
    float ax = bx, av = bv;
    for (int j = 0; j < K; ++j) { ax += wx[j] * xs[0][i + j]; av += wv[j] * xs[1][i + j]; }
    out[i] = t0 + i < L ? ax * av : 0.0f;
  }
}

// Order > 2: upad = [y ⊙ x_g for t < L, zeros for L <= t < R] (C2R wrote the circular tail).
// Grid (ceil(R / kChunk), B·D).
template <typename T>
__global__ void __launch_bounds__(256) regate_kernel(float* __restrict__ upad, const T* __restrict__ zg, ShortConv sc,
                                                     int g, int G, std::int64_t D, std::int64_t R) {
  const std::int64_t row = blockIdx.y, b = row / D, c = row - b * D, L = sc.L;
  const T* x = zg + ((b * G + g) * D + c) * L;
  for (int e = 0; e < 4; ++e) {
    const std::int64_t t = std::int64_t(blockIdx.x) * kChunk + threadIdx.x * 4 + e;
    if (t < R) upad[row * R + t] = t < L ? upad[row * R + t] * sc.at(x, std::int64_t(g) * D + c, t) : 0.0f;
  }
}

// yg (B, D, L) channel-major = y (B·D rows of R) ⊙ x_0 for t < L. Grid (ceil(L / kChunk), B·D).
template <typename T>
__global__ void __launch_bounds__(256) output_gate_kernel(const float* __restrict__ y, const T* __restrict__ zg,
                                                          ShortConv sc, int G, std::int64_t D, std::int64_t R,
                                                          T* __restrict__ yg) {
  const std::int64_t row = blockIdx.y, b = row / D, c = row - b * D, L = sc.L;
  const T* x0 = zg + (b * G * D + c) * L;
  for (int e = 0; e < 4; ++e) {
    const std::int64_t t = std::int64_t(blockIdx.x) * kChunk + threadIdx.x * 4 + e;
    if (t < L) yg[row * L + t] = from_float<T>(y[row * R + t] * sc.at(x0, c, t));
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

// h (Dh rows of R) = [h ⊙ (exp(-t_t |δ_c|) + shift) for t < L, zeros for L <= t < R].
// Grid (ceil(R / kChunk), Dh).
__global__ void __launch_bounds__(256) modulation_kernel(float* __restrict__ h, const float* __restrict__ tgrid,
                                                         const float* __restrict__ deltas, float shift, std::int64_t L,
                                                         std::int64_t R) {
  const std::int64_t c = blockIdx.y;
  const float dc = fabsf(deltas[c]);
  for (int e = 0; e < 4; ++e) {
    const std::int64_t t = std::int64_t(blockIdx.x) * kChunk + threadIdx.x * 4 + e;
    if (t < R) h[c * R + t] = t < L ? h[c * R + t] * (__expf(-tgrid[t] * dc) + shift) : 0.0f;
  }
}

// U (B·D rows, nc) *= (Hf[o·D + c] + skip[o·D + c]) / n.
__global__ void spectral_kernel(float2* __restrict__ U, const float2* __restrict__ Hf,
                                const float* __restrict__ skip, int o, std::int64_t D,
                                std::int64_t rows, std::int64_t nc, float inv_n) {
  const std::int64_t n = rows * nc;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / nc, f = i - row * nc, c = o * D + row % D;
    float2 h = Hf[c * nc + f];
    h.x = (h.x + skip[c]) * inv_n;
    h.y *= inv_n;
    const float2 u = U[i];
    U[i] = make_float2(u.x * h.x - u.y * h.y, u.x * h.y + u.y * h.x);
  }
}

unsigned grid1d(std::int64_t n) { return static_cast<unsigned>(std::min<std::int64_t>((n + 255) / 256, 132 * 32)); }

// Out of place, contiguous rows: real rows of n floats (16-byte aligned), complex rows of n/2+1.
// With callbacks (cuFFT LTO callbacks from the embedded fatbin), set before planning as cuFFT
// requires; `info` is the device pointer every callback receives.
struct FftCallback {
  const char* symbol;
  cufftXtCallbackType type;
};
struct FftPlan {
  cufftHandle h = 0;
  std::size_t work = 0;
  FftPlan(cufftType type, std::int64_t n, std::int64_t batch, cudaStream_t s,
          const std::vector<FftCallback>& cbs = {}, void* info = nullptr) {
    CUFFT_CHECK(cufftCreate(&h));
    try {
      make(type, n, batch, s, cbs, info);
    } catch (...) {
      cufftDestroy(h);
      throw;
    }
  }
  void make(cufftType type, std::int64_t n, std::int64_t batch, cudaStream_t s, const std::vector<FftCallback>& cbs,
            void* info) {
    CUFFT_CHECK(cufftSetAutoAllocation(h, 0));
    for (const FftCallback& cb : cbs) {
      void* infos[1] = {info};
      CUFFT_CHECK(cufftXtSetJITCallback(h, cb.symbol, longmix_hyena_callbacks_fatbin,
                                        sizeof(longmix_hyena_callbacks_fatbin), cb.type, infos));
    }
    long long nn[1] = {n};
    long long real_embed[1] = {n}, cplx_embed[1] = {n / 2 + 1};
    const bool r2c = type == CUFFT_R2C;
    CUFFT_CHECK(cufftMakePlanMany64(h, 1, nn, r2c ? real_embed : cplx_embed, 1, r2c ? real_embed[0] : cplx_embed[0],
                                    r2c ? cplx_embed : real_embed, 1, r2c ? cplx_embed[0] : real_embed[0], type,
                                    batch, &work));
    CUFFT_CHECK(cufftSetStream(h, s));
  }
  ~FftPlan() { if (h) cufftDestroy(h); }
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;
};

}  // namespace

std::string hyena_cuda_unsupported(const HyenaConfig& cfg, DType t) {
  if (t == DType::kF32) return "hyena-cuda stores fp16 or bf16";
  if (cfg.short_filter_order > 9)
    return "hyena-cuda: short filter of length " + std::to_string(cfg.short_filter_order) + " (supported: up to 9)";
  return {};
}

std::string cufft_version_string() {
  int v = 0;
  cufftGetVersion(&v);
  return std::to_string(v);
}

struct HyenaCudaPlan::Impl {
  HyenaConfig cfg;
  std::int64_t B, L, R, nc;  // R = 2L: fp32 rows of the zero-padded signals; nc = L + 1
  DType t;
  bool cached;
  CudaContext ctx;
  Buffer<char> w_in, w_out;                       // (C, D), (D, D) in dtype t
  Buffer<char> b_in, sw, sb, fbias, pz, pt, freq, deltas;  // fp32
  Buffer<char> b_out;                             // (D) in dtype t
  std::vector<Buffer<char>> mlp_w, mlp_b;
  std::unique_ptr<FftPlan> plan_h, plan_u, plan_ui;
  Buffer<float2> spectrum;  // filter=cached: (Dh, nc)
  // Order 2 with cuFFT LTO callbacks (v4): the plans above carry them and no streaming kernel
  // runs; `callbacks_why` says why not when they could not be used.
  bool callbacks = false;
  std::string callbacks_why;
  Buffer<char> cb_dev;             // HyenaCallbackInfo on the device
  HyenaCallbackInfo cb_host{};     // what cb_dev holds
  bool cb_valid = false;

  // Points the callbacks at this call's buffers (a copy only when an address changed: the
  // caching allocator hands the same ones back call after call).
  void set_callback_info(const HyenaCallbackInfo& info) {
    if (cb_valid && std::memcmp(&info, &cb_host, sizeof(info)) == 0) return;
    cb_host = info;
    CUDA_CHECK(cudaMemcpyAsync(cb_dev.data(), &cb_host, sizeof(cb_host), cudaMemcpyHostToDevice, ctx.stream));
    cb_valid = true;
  }
  HyenaCallbackInfo base_info() const {
    HyenaCallbackInfo i{};
    i.w = f(sw); i.bs = f(sb); i.skip = f(fbias); i.tgrid = f(pt); i.deltas = f(deltas);
    i.shift = cfg.shift; i.inv_n = 1.0f / float(R);
    i.L = L; i.R = R; i.nc = nc; i.D = cfg.D;
    i.inv_R = 1.0 / double(R); i.inv_nc = 1.0 / double(nc); i.inv_D = 1.0 / double(cfg.D);
    i.K = cfg.short_filter_order;
    if (cb_valid) { i.zl = cb_host.zl; i.zg = cb_host.zg; i.ygc = cb_host.ygc; i.b_in = cb_host.b_in;
                    i.Hf = cb_host.Hf; i.h = cb_host.h; }
    return i;
  }

  const float* f(const Buffer<char>& b) const { return reinterpret_cast<const float*>(b.data()); }

  ShortConv short_conv(const float* bias_in) const {
    return ShortConv{f(sw), f(sb), bias_in, cfg.short_filter_order, L};
  }
  dim3 rows_grid(std::int64_t len, std::int64_t rows) const {
    return dim3(unsigned((len + kChunk - 1) / kChunk), unsigned(rows));
  }

  // The implicit filter's spectrum (Dh, nc), unscaled: the MLP's hidden layers as cuBLAS fp32
  // products, the last (the widest, L·F·Dh) in TF32, modulation and zero padding in one pass.
  Buffer<float2> filter_spectrum(Buffer<char>& work) {
    Allocator& a = *ctx.alloc;
    const std::int64_t F = cfg.filter_order, Dh = cfg.Dh();
    const int nl = cfg.num_linear();
    // (Dh, R) padded rows; with callbacks (Dh, L): the FFT's load callback modulates and pads.
    const std::int64_t ldh = callbacks ? L : R;
    Buffer<float> h(a, static_cast<std::size_t>(Dh * ldh));
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
      // Column-major (L, Dh) with ld R = act (L, F) · W_lastᵀ: row-major h (Dh, R).
      CUBLAS_CHECK(cublasGemmEx(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, int(L), int(Dh), int(F), &one, act.data(),
                                CUDA_R_32F, int(F), f(mlp_w[nl - 1]), CUDA_R_32F, int(F), &zero, h.data(),
                                CUDA_R_32F, int(ldh), CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
    }
    if (callbacks) {
      HyenaCallbackInfo i = base_info();
      i.h = h.data();
      set_callback_info(i);
    } else {
      modulation_kernel<<<rows_grid(R, Dh), 256, 0, ctx.stream>>>(h.data(), f(pt), f(deltas), cfg.shift, L, R);
      CUDA_CHECK_LAUNCH();
    }
    Buffer<float2> Hf(a, static_cast<std::size_t>(Dh * nc));
    CUFFT_CHECK(cufftSetWorkArea(plan_h->h, work.data()));
    CUFFT_CHECK(cufftExecR2C(plan_h->h, h.data(), reinterpret_cast<cufftComplex*>(Hf.data())));
    return Hf;
  }

  std::size_t work_bytes() const {
    return std::max(std::max(plan_h->work, plan_u->work), std::max(plan_ui->work, std::size_t(256)));
  }

  // The mixer between the projections, channel-major: zg (B, (N-1)D, L) = x_0 .. x_{N-2},
  // zl (B, 2D, L) = x_{N-1}, v (freed once read) -> ygc (B, D, L) = v ⊙ x_0.
  template <typename T>
  void mix(const T* zg, Buffer<char>& zl, const float* bias_in, const float2* Hf, Buffer<char>& work, T* ygc) {
    const std::int64_t D = cfg.D, N = cfg.order, rows = B * D;
    Allocator& a = *ctx.alloc;
    CUFFT_CHECK(cufftSetWorkArea(plan_u->h, work.data()));
    CUFFT_CHECK(cufftSetWorkArea(plan_ui->h, work.data()));
    if (callbacks) {  // R2C loads v ⊙ x_1 from zl, C2R loads U·(H+b)/2L and stores y ⊙ x_0 into ygc
      Buffer<float2> U(a, static_cast<std::size_t>(rows * nc));
      HyenaCallbackInfo i = base_info();
      i.zl = zl.data(); i.zg = zg; i.ygc = ygc; i.b_in = bias_in; i.Hf = Hf;
      set_callback_info(i);
      // The load callback reads zl itself; cuFFT is handed it as the (never dereferenced) input.
      CUFFT_CHECK(cufftExecR2C(plan_u->h, reinterpret_cast<cufftReal*>(zl.data()), reinterpret_cast<cufftComplex*>(U.data())));
      zl.reset();
      Buffer<float> scratch(a, static_cast<std::size_t>(rows * R));  // C2R's output argument; the store callback writes ygc
      CUFFT_CHECK(cufftExecC2R(plan_ui->h, reinterpret_cast<cufftComplex*>(U.data()), scratch.data()));
      return;
    }
    const ShortConv sc = short_conv(bias_in);
    Buffer<float> upad(a, static_cast<std::size_t>(rows * R));  // (B, D, 2L)
    conv_gate_kernel<T><<<rows_grid(R, rows), 256, 0, ctx.stream>>>(reinterpret_cast<const T*>(zl.data()), sc,
                                                                    int(N), D, upad.data(), R);
    CUDA_CHECK_LAUNCH();
    zl.reset();  // stream order keeps it alive for the queued kernel
    Buffer<float2> U(a, static_cast<std::size_t>(rows * nc));  // (B, D, L+1)
    auto* Uc = reinterpret_cast<cufftComplex*>(U.data());
    for (int o = 0; o < N - 1; ++o) {
      if (o > 0) {  // gate with x_{N-1-o}
        regate_kernel<T><<<rows_grid(R, rows), 256, 0, ctx.stream>>>(upad.data(), zg, sc, int(N - 1 - o), int(N - 1),
                                                                     D, R);
        CUDA_CHECK_LAUNCH();
      }
      CUFFT_CHECK(cufftExecR2C(plan_u->h, upad.data(), Uc));
      spectral_kernel<<<grid1d(rows * nc), 256, 0, ctx.stream>>>(U.data(), Hf, f(fbias), o, D, rows, nc,
                                                                  1.0f / float(2 * L));
      CUDA_CHECK_LAUNCH();
      CUFFT_CHECK(cufftExecC2R(plan_ui->h, Uc, upad.data()));
    }
    U.reset();
    output_gate_kernel<T><<<rows_grid(L, rows), 256, 0, ctx.stream>>>(upad.data(), zg, sc, int(N - 1), D, R, ygc);
    CUDA_CHECK_LAUNCH();
  }

  // Filter first (nothing of the signal is held yet), then the signal.
  template <typename T>
  void run(const T* u, const T* z, void* out) {
    const std::int64_t D = cfg.D, N = cfg.order, G = N - 1, C = cfg.C();
    Allocator& a = *ctx.alloc;
    const std::size_t es = sizeof(T);
    Buffer<char> work(a, work_bytes());
    Buffer<float2> hspec;
    const float2* Hf = spectrum.data();
    if (!cached) {
      hspec = filter_spectrum(work);
      Hf = hspec.data();
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
      const dim3 blk(kTile, 8);
      transpose_kernel<T><<<dim3(unsigned((G * D + kTile - 1) / kTile), unsigned((L + kTile - 1) / kTile), unsigned(B)),
                            blk, 0, ctx.stream>>>(z, L, C, 0, G * D, reinterpret_cast<T*>(zg.data()));
      CUDA_CHECK_LAUNCH();
      transpose_kernel<T><<<dim3(unsigned((2 * D + kTile - 1) / kTile), unsigned((L + kTile - 1) / kTile), unsigned(B)),
                            blk, 0, ctx.stream>>>(z, L, C, G * D, 2 * D, reinterpret_cast<T*>(zl.data()));
      CUDA_CHECK_LAUNCH();
    }
    Buffer<char> ygc(a, static_cast<std::size_t>(B * D * L) * es);  // (B, D, L)
    mix(reinterpret_cast<const T*>(zg.data()), zl, u ? f(b_in) : nullptr, Hf, work, reinterpret_cast<T*>(ygc.data()));
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
      transpose_kernel<T><<<dim3(unsigned((L + kTile - 1) / kTile), unsigned((D + kTile - 1) / kTile), unsigned(B)),
                            dim3(kTile, 8), 0, ctx.stream>>>(reinterpret_cast<const T*>(ygc.data()), D, L, 0, L,
                                                             static_cast<T*>(out));
      CUDA_CHECK_LAUNCH();
    }
  }

  void dispatch(const void* u, const void* z, void* out) {
    if (t == DType::kF16) run(static_cast<const __half*>(u), static_cast<const __half*>(z), out);
    else run(static_cast<const __nv_bfloat16*>(u), static_cast<const __nv_bfloat16*>(z), out);
  }
};

HyenaCudaPlan::HyenaCudaPlan(const HyenaWeights& w, std::int64_t B, std::int64_t L, DType t, bool cache_filter,
                             CudaContext& ctx, const HyenaCudaOptions& opt)
    : impl_(std::make_unique<Impl>()) {
  w.require_plan("hyena-cuda", B, L, hyena_cuda_unsupported(w.cfg, t));
  LONGMIX_REQUIRE(B * w.cfg.D <= 65535 && w.cfg.Dh() <= 65535, "hyena-cuda: B·D = ", B * w.cfg.D,
                  " rows (supported: up to 65535)");
  Impl& m = *impl_;
  m.cfg = w.cfg;
  m.B = B;
  m.L = L;
  m.nc = L + 1;
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
  m.b_out = upload_as(a, w.out_proj_bias, t, s);  // in out_proj's epilogue
  for (std::size_t i = 0; i < w.mlp_weight.size(); ++i) {
    m.mlp_w.push_back(upload_as(a, w.mlp_weight[i], DType::kF32, s));
    m.mlp_b.push_back(upload_as(a, w.mlp_bias[i], DType::kF32, s));
  }
  const std::int64_t n = 2 * L;
  if (w.cfg.order != 2) m.callbacks_why = "order " + std::to_string(w.cfg.order) + " (callbacks: order 2)";
  else if (!opt.callbacks) m.callbacks_why = "turned off";
  if (m.callbacks_why.empty()) {
    try {
      m.cb_dev = Buffer<char>(a, sizeof(HyenaCallbackInfo));
      void* info = m.cb_dev.data();
      const bool f16 = t == DType::kF16;
      m.plan_h = std::make_unique<FftPlan>(CUFFT_R2C, n, w.cfg.Dh(), s,
                                           std::vector<FftCallback>{{"longmix_hyena_load_filter", CUFFT_CB_LD_REAL}}, info);
      m.plan_u = std::make_unique<FftPlan>(
          CUFFT_R2C, n, B * w.cfg.D, s,
          std::vector<FftCallback>{{f16 ? "longmix_hyena_load_signal_f16" : "longmix_hyena_load_signal_bf16", CUFFT_CB_LD_REAL}},
          info);
      m.plan_ui = std::make_unique<FftPlan>(
          CUFFT_C2R, n, B * w.cfg.D, s,
          std::vector<FftCallback>{{"longmix_hyena_load_spectrum", CUFFT_CB_LD_COMPLEX},
                                   {f16 ? "longmix_hyena_store_output_f16" : "longmix_hyena_store_output_bf16", CUFFT_CB_ST_REAL}},
          info);
      m.callbacks = true;
    } catch (const RuntimeFailure& e) {  // e.g. a cuFFT without LTO callbacks: the kernels do it
      m.callbacks_why = e.what();
      m.plan_h.reset(); m.plan_u.reset(); m.plan_ui.reset();
    }
  }
  if (!m.callbacks) {
    m.plan_h = std::make_unique<FftPlan>(CUFFT_R2C, n, w.cfg.Dh(), s);
    m.plan_u = std::make_unique<FftPlan>(CUFFT_R2C, n, B * w.cfg.D, s);
    m.plan_ui = std::make_unique<FftPlan>(CUFFT_C2R, n, B * w.cfg.D, s);
  }
  if (cache_filter) {
    Buffer<char> work(a, m.work_bytes());
    m.spectrum = m.filter_spectrum(work);
    CUDA_CHECK(cudaStreamSynchronize(s));
  }
}

HyenaCudaPlan::~HyenaCudaPlan() = default;

void HyenaCudaPlan::core(const void* z, void* yg) { impl_->dispatch(nullptr, z, yg); }

std::string HyenaCudaPlan::note() const {
  return impl_->callbacks ? "cuFFT with LTO callbacks" : "cuFFT + streaming kernels (no callbacks: " + impl_->callbacks_why + ")";
}

void HyenaCudaPlan::forward(const void* u, void* y) { impl_->dispatch(u, nullptr, y); }

}  // namespace longmix
