// hyena-cuda: see hyena_cuda.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cufft.h>

#include <cmath>
#include <vector>

#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "ops/hyena/hyena_cuda.h"

namespace longmix {

namespace {
constexpr int kTile = 32;
constexpr int kMaxLinear = 8;
constexpr int kMaxF = 64;
constexpr int kMaxE = 7;

// Short conv + split + first gate. Grid (ceil(2L/32), ceil(D/32), B), block (32, 8).
// z: (B, L, C) storage dtype; upad: (B, D, P) fp32, v ⊙ x_{N-1} for t < L, 0 for L <= t < 2L;
// gates: (N-1, B, D, L) storage dtype, x_0 .. x_{N-2}.
template <typename T>
__global__ void short_conv_split_kernel(const T* __restrict__ z, const float* __restrict__ b_in,
                                        const float* __restrict__ w, const float* __restrict__ bs,
                                        int K, std::int64_t L, std::int64_t D, int N,
                                        float* __restrict__ upad, T* __restrict__ gates, std::int64_t P) {
  __shared__ float tile[kTile + 8][kTile + 1];
  const std::int64_t t0 = std::int64_t(blockIdx.x) * kTile, c0 = std::int64_t(blockIdx.y) * kTile;
  const std::int64_t b = blockIdx.z, C = (N + 1) * D;
  const int tx = threadIdx.x, ty = threadIdx.y;
  if (t0 >= L) {  // zero padding of the FFT input
    for (int cc = ty; cc < kTile; cc += 8) {
      const std::int64_t c = c0 + cc, t = t0 + tx;
      if (c < D && t < 2 * L) upad[(b * D + c) * P + t] = 0.0f;
    }
    return;
  }
  auto load = [&](int g) {
    __syncthreads();
    for (int r = ty; r < kTile + K - 1; r += 8) {
      const std::int64_t ts = t0 - (K - 1) + r, c = c0 + tx;
      float val = 0.0f;
      if (ts >= 0 && ts < L && c < D) {
        val = to_float(z[(b * L + ts) * C + g * D + c]);
        if (b_in) val += b_in[g * D + c];
      }
      tile[r][tx] = val;
    }
    __syncthreads();
  };
  auto conv = [&](int g, int cc) {  // zc at (t0 + tx, c0 + cc) of group g
    const std::int64_t gc = g * D + c0 + cc;
    float acc = bs[gc];
    for (int j = 0; j < K; ++j) acc += w[gc * K + j] * tile[tx + j][cc];
    return acc;
  };
  const std::int64_t t = t0 + tx;
  float v[kTile / 8];
  load(N);
  for (int j = 0; j < kTile / 8; ++j) v[j] = c0 + ty + 8 * j < D ? conv(N, ty + 8 * j) : 0.0f;
  load(N - 1);
  for (int j = 0; j < kTile / 8; ++j) {
    const std::int64_t c = c0 + ty + 8 * j;
    if (c < D && t < L) upad[(b * D + c) * P + t] = v[j] * conv(N - 1, ty + 8 * j);
    else if (c < D && t < 2 * L) upad[(b * D + c) * P + t] = 0.0f;
  }
  for (int g = 0; g < N - 1; ++g) {
    load(g);
    for (int j = 0; j < kTile / 8; ++j) {
      const std::int64_t c = c0 + ty + 8 * j;
      if (c < D && t < L)
        gates[((std::int64_t(g) * gridDim.z + b) * D + c) * L + t] = from_float<T>(conv(g, ty + 8 * j));
    }
  }
}

struct FilterArgs {
  const float* z;  // (l_max, E)
  const float* t;  // (l_max)
  const float* W[kMaxLinear];
  const float* b[kMaxLinear];
  int n_linear, E, F;
  const float* freq;
  const float* deltas;
  float shift;
  std::int64_t L, Dh, P;
  float* out;  // (Dh, P): h_c(t) for t < L, 0 for L <= t < 2L
};

// The implicit filter for 32 positions per block: Linear(E,F), Sin, inner (Linear(F,F), Sin)...,
// Linear(F, Dh) without bias, times exp(-t|δ|) + shift. Block 256 threads.
__global__ void filter_kernel(FilterArgs a) {
  __shared__ float act[2][kTile][kMaxF + 1];
  __shared__ float Ws[kMaxF][kMaxF + 1];
  const std::int64_t t0 = std::int64_t(blockIdx.x) * kTile;
  const int tid = threadIdx.x;
  const int F = a.F;
  if (t0 >= a.L) {
    for (std::int64_t i = tid; i < std::int64_t(kTile) * a.Dh; i += blockDim.x) {
      const std::int64_t c = i / kTile, t = t0 + i % kTile;
      if (t < 2 * a.L) a.out[c * a.P + t] = 0.0f;
    }
    return;
  }
  for (int i = tid; i < kTile * F; i += blockDim.x) {
    const int p = i / F, f = i % F;
    const std::int64_t t = t0 + p;
    float acc = 0.0f;
    if (t < a.L) {
      acc = a.b[0][f];
      for (int e = 0; e < a.E; ++e) acc += a.W[0][f * a.E + e] * a.z[t * a.E + e];
    }
    act[0][p][f] = sinf(a.freq[f] * acc);
  }
  int cur = 0;
  for (int l = 1; l < a.n_linear - 1; ++l) {
    __syncthreads();
    for (int i = tid; i < F * F; i += blockDim.x) Ws[i % F][i / F] = a.W[l][i];  // Ws[k][f] = W[f][k]
    __syncthreads();
    for (int i = tid; i < kTile * F; i += blockDim.x) {
      const int p = i / F, f = i % F;
      float acc = a.b[l][f];
      for (int k = 0; k < F; ++k) acc += Ws[k][f] * act[cur][p][k];
      act[cur ^ 1][p][f] = sinf(a.freq[f] * acc);
    }
    cur ^= 1;
  }
  __syncthreads();
  const float* Wl = a.W[a.n_linear - 1];
  const int p = tid % kTile;
  const std::int64_t t = t0 + p;
  const float tt = t < a.L ? a.t[t] : 0.0f;
  for (std::int64_t c = tid / kTile; c < a.Dh; c += blockDim.x / kTile) {
    float acc = 0.0f;
    for (int k = 0; k < F; ++k) acc += Wl[c * F + k] * act[cur][p][k];
    const float mod = __expf(-tt * fabsf(a.deltas[c])) + a.shift;
    if (t < a.L) a.out[c * a.P + t] = acc * mod;
    else if (t < 2 * a.L) a.out[c * a.P + t] = 0.0f;
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

// Order > 2: v = y ⊙ gate for t < L, zero padding for L <= t < 2L (C2R wrote the tail).
template <typename T>
__global__ void regate_kernel(float* __restrict__ upad, const T* __restrict__ gate, std::int64_t rows,
                              std::int64_t L, std::int64_t P) {
  const std::int64_t n = rows * 2 * L;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / (2 * L), t = i - row * 2 * L;
    float* p = upad + row * P + t;
    *p = t < L ? *p * to_float(gate[row * L + t]) : 0.0f;
  }
}

// yg (B, L, D) = transpose of y (B, D, P) ⊙ x0 (B, D, L). Grid (ceil(L/32), ceil(D/32), B).
template <typename T>
__global__ void gate_transpose_kernel(const float* __restrict__ y, const T* __restrict__ x0, T* __restrict__ yg,
                                      std::int64_t L, std::int64_t D, std::int64_t P) {
  __shared__ float tile[kTile][kTile + 1];
  const std::int64_t t0 = std::int64_t(blockIdx.x) * kTile, c0 = std::int64_t(blockIdx.y) * kTile, b = blockIdx.z;
  for (int cc = threadIdx.y; cc < kTile; cc += blockDim.y) {
    const std::int64_t c = c0 + cc, t = t0 + threadIdx.x;
    if (c < D && t < L) tile[cc][threadIdx.x] = y[(b * D + c) * P + t] * to_float(x0[(b * D + c) * L + t]);
  }
  __syncthreads();
  for (int tt = threadIdx.y; tt < kTile; tt += blockDim.y) {
    const std::int64_t t = t0 + tt, c = c0 + threadIdx.x;
    if (c < D && t < L) yg[(b * L + t) * D + c] = from_float<T>(tile[threadIdx.x][tt]);
  }
}

unsigned grid1d(std::int64_t n) { return static_cast<unsigned>(std::min<std::int64_t>((n + 255) / 256, 132 * 32)); }

struct FftPlan {
  cufftHandle h = 0;
  std::size_t work = 0;
  FftPlan(cufftType type, std::int64_t n, std::int64_t batch, cudaStream_t s) {
    CUFFT_CHECK(cufftCreate(&h));
    CUFFT_CHECK(cufftSetAutoAllocation(h, 0));
    long long nn[1] = {n};
    long long real_embed[1] = {2 * (n / 2 + 1)}, cplx_embed[1] = {n / 2 + 1};
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

template <typename T>
Buffer<char> upload(Allocator& a, const std::vector<float>& v, DType t, cudaStream_t s) {
  Buffer<char> out(a, v.size() * dtype_size(t));
  if (v.empty()) return out;
  if (t == DType::kF32) {
    CUDA_CHECK(cudaMemcpyAsync(out.data(), v.data(), v.size() * 4, cudaMemcpyHostToDevice, s));
  } else {
    Buffer<float> tmp(a, v.size());
    CUDA_CHECK(cudaMemcpyAsync(tmp.data(), v.data(), v.size() * 4, cudaMemcpyHostToDevice, s));
    convert_from_float_cuda(t, tmp.data(), out.data(), v.size(), s);
    CUDA_CHECK(cudaStreamSynchronize(s));
  }
  CUDA_CHECK(cudaStreamSynchronize(s));
  return out;
}
}  // namespace

std::string hyena_cuda_unsupported(const HyenaConfig& cfg, DType t) {
  if (t == DType::kF32) return "hyena-cuda stores fp16 or bf16";
  if (cfg.filter_order > kMaxF) return "hyena-cuda: filter_order " + std::to_string(cfg.filter_order) + " > 64";
  if (cfg.emb_dim > kMaxE) return "hyena-cuda: emb_dim " + std::to_string(cfg.emb_dim) + " > 7";
  if (cfg.num_linear() > kMaxLinear) return "hyena-cuda: more than 6 inner MLP layers";
  if (cfg.short_filter_order > 9) return "hyena-cuda: short filter longer than 9";
  return {};
}

std::string cufft_version_string() {
  int v = 0;
  cufftGetVersion(&v);
  return std::to_string(v);
}

struct HyenaCudaPlan::Impl {
  HyenaConfig cfg;
  std::int64_t B, L, P, nc;
  DType t;
  bool cached;
  CudaContext ctx;
  Buffer<char> w_in, w_out;                       // (C, D), (D, D) in dtype t
  Buffer<char> b_in, sw, sb, fbias, pz, pt, freq, deltas, b_out;  // fp32
  std::vector<Buffer<char>> mlp_w, mlp_b;
  std::unique_ptr<FftPlan> plan_h, plan_u, plan_ui;
  Buffer<float2> spectrum;  // filter=cached: (Dh, nc)

  const float* f(const Buffer<char>& b) const { return reinterpret_cast<const float*>(b.data()); }

  FilterArgs filter_args(float* out) const {
    FilterArgs a{};
    a.z = f(pz);
    a.t = f(pt);
    a.n_linear = cfg.num_linear();
    for (int i = 0; i < a.n_linear; ++i) {
      a.W[i] = f(mlp_w[i]);
      a.b[i] = mlp_b[i].size() ? f(mlp_b[i]) : nullptr;
    }
    a.E = cfg.emb_dim;
    a.F = cfg.filter_order;
    a.freq = f(freq);
    a.deltas = f(deltas);
    a.shift = cfg.shift;
    a.L = L;
    a.Dh = cfg.Dh();
    a.P = P;
    a.out = out;
    return a;
  }

  // Filter spectra (Dh, nc), unscaled, into a buffer of Dh·P floats (in place).
  Buffer<float> filter_spectrum(Buffer<char>& work) {
    Buffer<float> h(*ctx.alloc, static_cast<std::size_t>(cfg.Dh() * P));
    filter_kernel<<<unsigned((2 * L + kTile - 1) / kTile), 256, 0, ctx.stream>>>(filter_args(h.data()));
    CUDA_CHECK_LAUNCH();
    CUFFT_CHECK(cufftSetWorkArea(plan_h->h, work.data()));
    CUFFT_CHECK(cufftExecR2C(plan_h->h, h.data(), reinterpret_cast<cufftComplex*>(h.data())));
    return h;
  }

  std::size_t work_bytes() const {
    return std::max(std::max(plan_h->work, plan_u->work), std::max(plan_ui->work, std::size_t(256)));
  }

  template <typename T>
  void run_core(const T* z, const float* bias_in, T* yg, Buffer<char>* z_owner) {
    const std::int64_t D = cfg.D, N = cfg.order;
    Allocator& a = *ctx.alloc;
    Buffer<float> upad(a, static_cast<std::size_t>(B * D * P));                    // (B, D, P)
    Buffer<T> gates(a, static_cast<std::size_t>((N - 1) * B * D * L));             // (N-1, B, D, L)
    const dim3 blk(kTile, 8), grid(unsigned((2 * L + kTile - 1) / kTile), unsigned((D + kTile - 1) / kTile), unsigned(B));
    short_conv_split_kernel<T><<<grid, blk, 0, ctx.stream>>>(z, bias_in, f(sw), f(sb), cfg.short_filter_order, L, D,
                                                             int(N), upad.data(), gates.data(), P);
    CUDA_CHECK_LAUNCH();
    if (z_owner) z_owner->reset();  // stream order keeps it alive for the queued kernel
    Buffer<char> work(a, work_bytes());
    Buffer<float> hspec;
    const float2* Hf = spectrum.data();
    if (!cached) {
      hspec = filter_spectrum(work);
      Hf = reinterpret_cast<const float2*>(hspec.data());
    }
    CUFFT_CHECK(cufftSetWorkArea(plan_u->h, work.data()));
    CUFFT_CHECK(cufftSetWorkArea(plan_ui->h, work.data()));
    auto* U = reinterpret_cast<cufftComplex*>(upad.data());
    for (int o = 0; o < N - 1; ++o) {
      if (o > 0) {  // gate with x_{N-1-o}
        regate_kernel<T><<<grid1d(B * D * 2 * L), 256, 0, ctx.stream>>>(
            upad.data(), gates.data() + (N - 1 - o) * B * D * L, B * D, L, P);
        CUDA_CHECK_LAUNCH();
      }
      CUFFT_CHECK(cufftExecR2C(plan_u->h, upad.data(), U));
      spectral_kernel<<<grid1d(B * D * nc), 256, 0, ctx.stream>>>(reinterpret_cast<float2*>(U), Hf, f(fbias), o, D,
                                                                   B * D, nc, 1.0f / float(2 * L));
      CUDA_CHECK_LAUNCH();
      CUFFT_CHECK(cufftExecC2R(plan_ui->h, U, upad.data()));
    }
    hspec.reset();
    work.reset();
    const dim3 g2(unsigned((L + kTile - 1) / kTile), unsigned((D + kTile - 1) / kTile), unsigned(B));
    gate_transpose_kernel<T><<<g2, blk, 0, ctx.stream>>>(upad.data(), gates.data(), yg, L, D, P);
    CUDA_CHECK_LAUNCH();
  }

  void core(const void* z, const float* bias_in, void* yg, Buffer<char>* z_owner) {
    if (t == DType::kF16) run_core(static_cast<const __half*>(z), bias_in, static_cast<__half*>(yg), z_owner);
    else run_core(static_cast<const __nv_bfloat16*>(z), bias_in, static_cast<__nv_bfloat16*>(yg), z_owner);
  }
};

HyenaCudaPlan::HyenaCudaPlan(const HyenaWeights& w, std::int64_t B, std::int64_t L, DType t, bool cache_filter,
                             CudaContext& ctx)
    : impl_(std::make_unique<Impl>()) {
  w.validate();
  const std::string why = hyena_cuda_unsupported(w.cfg, t);
  LONGMIX_REQUIRE(why.empty(), why);
  LONGMIX_REQUIRE(B > 0 && L > 0, "hyena-cuda: B and L must be positive");
  LONGMIX_REQUIRE(L <= w.cfg.l_max, "hyena: L=", L, " is longer than l_max=", w.cfg.l_max,
                  " of these weights (the filter's time grid is fixed by l_max)");
  Impl& m = *impl_;
  m.cfg = w.cfg;
  m.B = B;
  m.L = L;
  m.nc = L + 1;
  m.P = 2 * m.nc;
  m.t = t;
  m.cached = cache_filter;
  m.ctx = ctx;
  Allocator& a = *ctx.alloc;
  cudaStream_t s = ctx.stream;
  m.w_in = upload<float>(a, w.in_proj_weight, t, s);
  m.w_out = upload<float>(a, w.out_proj_weight, t, s);
  m.b_in = upload<float>(a, w.in_proj_bias, DType::kF32, s);
  m.sw = upload<float>(a, w.short_filter_weight, DType::kF32, s);
  m.sb = upload<float>(a, w.short_filter_bias, DType::kF32, s);
  m.fbias = upload<float>(a, w.filter_bias, DType::kF32, s);
  m.pz = upload<float>(a, w.pos_emb_z, DType::kF32, s);
  m.pt = upload<float>(a, w.pos_emb_t, DType::kF32, s);
  m.freq = upload<float>(a, w.freq, DType::kF32, s);
  m.deltas = upload<float>(a, w.modulation_deltas, DType::kF32, s);
  m.b_out = upload<float>(a, w.out_proj_bias, DType::kF32, s);
  for (std::size_t i = 0; i < w.mlp_weight.size(); ++i) {
    m.mlp_w.push_back(upload<float>(a, w.mlp_weight[i], DType::kF32, s));
    m.mlp_b.push_back(upload<float>(a, w.mlp_bias[i], DType::kF32, s));
  }
  const std::int64_t n = 2 * L;
  m.plan_h = std::make_unique<FftPlan>(CUFFT_R2C, n, w.cfg.Dh(), s);
  m.plan_u = std::make_unique<FftPlan>(CUFFT_R2C, n, B * w.cfg.D, s);
  m.plan_ui = std::make_unique<FftPlan>(CUFFT_C2R, n, B * w.cfg.D, s);
  if (cache_filter) {
    Buffer<char> work(a, m.work_bytes());
    Buffer<float> h = m.filter_spectrum(work);
    m.spectrum = Buffer<float2>(a, static_cast<std::size_t>(w.cfg.Dh() * m.nc));
    CUDA_CHECK(cudaMemcpyAsync(m.spectrum.data(), h.data(), m.spectrum.bytes(), cudaMemcpyDeviceToDevice, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
  }
}

HyenaCudaPlan::~HyenaCudaPlan() = default;

void HyenaCudaPlan::core(const void* z, void* yg) { impl_->core(z, nullptr, yg, nullptr); }

void HyenaCudaPlan::forward(const void* u, void* y) {
  Impl& m = *impl_;
  const std::int64_t D = m.cfg.D, C = m.cfg.C(), BL = m.B * m.L;
  Buffer<char> yg(*m.ctx.alloc, static_cast<std::size_t>(BL * D) * dtype_size(m.t));  // (B, L, D)
  {
    Buffer<char> z(*m.ctx.alloc, static_cast<std::size_t>(BL * C) * dtype_size(m.t));  // (B, L, C), bias in the conv kernel
    linear_cuda(m.t, BL, C, D, u, m.w_in.data(), nullptr, z.data(), m.ctx);
    m.core(z.data(), m.f(m.b_in), yg.data(), &z);
  }
  linear_cuda(m.t, BL, D, D, yg.data(), m.w_out.data(), m.f(m.b_out), y, m.ctx);
}

}  // namespace longmix
