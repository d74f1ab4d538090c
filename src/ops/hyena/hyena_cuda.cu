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

// Short conv + split + first gate. Grid (ceil(D/32), ceil(L/32), B), block (32, 8): the channel
// tile runs fastest so neighbouring blocks read neighbouring pieces of the same rows of z.
// z: (B, L, C) storage dtype; upad: (B, D, R) fp32 rows (R = 2L), v ⊙ x_{N-1} for t < L (the
// zero tail [L, 2L) is written by cudaMemset2DAsync); gates: (N-1, B, D, L), x_0 .. x_{N-2}.
template <typename T>
__global__ void short_conv_split_kernel(const T* __restrict__ z, const float* __restrict__ b_in,
                                        const float* __restrict__ w, const float* __restrict__ bs,
                                        int K, std::int64_t L, std::int64_t D, int N,
                                        float* __restrict__ upad, T* __restrict__ gates, std::int64_t R) {
  __shared__ float tile[kTile + 8][kTile + 1];
  const std::int64_t t0 = std::int64_t(blockIdx.y) * kTile, c0 = std::int64_t(blockIdx.x) * kTile;
  const std::int64_t b = blockIdx.z, C = (N + 1) * D;
  const int tx = threadIdx.x, ty = threadIdx.y;
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
    if (c < D && t < L) upad[(b * D + c) * R + t] = v[j] * conv(N - 1, ty + 8 * j);
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

// h (Dh, R): h[c, t] *= exp(-t_t |δ_c|) + shift for t < L (the tail is zeroed apart).
__global__ void modulation_kernel(float* __restrict__ h, const float* __restrict__ tgrid,
                                  const float* __restrict__ deltas, float shift, std::int64_t L,
                                  std::int64_t Dh, std::int64_t R) {
  const std::int64_t n = Dh * L;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t c = i / L, t = i - c * L;
    h[c * R + t] *= __expf(-tgrid[t] * fabsf(deltas[c])) + shift;
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
                              std::int64_t L) {
  const std::int64_t n = rows * 2 * L;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / (2 * L), t = i - row * 2 * L;
    upad[i] = t < L ? upad[i] * to_float(gate[row * L + t]) : 0.0f;
  }
}

// yg (B, L, D) = transpose of y (B, D, R) ⊙ x0 (B, D, L). Grid (ceil(D/32), ceil(L/32), B).
template <typename T>
__global__ void gate_transpose_kernel(const float* __restrict__ y, const T* __restrict__ x0, T* __restrict__ yg,
                                      std::int64_t L, std::int64_t D, std::int64_t R) {
  __shared__ float tile[kTile][kTile + 1];
  const std::int64_t t0 = std::int64_t(blockIdx.y) * kTile, c0 = std::int64_t(blockIdx.x) * kTile, b = blockIdx.z;
  for (int cc = threadIdx.y; cc < kTile; cc += blockDim.y) {
    const std::int64_t c = c0 + cc, t = t0 + threadIdx.x;
    if (c < D && t < L) tile[cc][threadIdx.x] = y[(b * D + c) * R + t] * to_float(x0[(b * D + c) * L + t]);
  }
  __syncthreads();
  for (int tt = threadIdx.y; tt < kTile; tt += blockDim.y) {
    const std::int64_t t = t0 + tt, c = c0 + threadIdx.x;
    if (c < D && t < L) yg[(b * L + t) * D + c] = from_float<T>(tile[threadIdx.x][tt]);
  }
}

unsigned grid1d(std::int64_t n) { return static_cast<unsigned>(std::min<std::int64_t>((n + 255) / 256, 132 * 32)); }

// Out of place, contiguous rows: real rows of n floats (16-byte aligned), complex rows of n/2+1.
struct FftPlan {
  cufftHandle h = 0;
  std::size_t work = 0;
  FftPlan(cufftType type, std::int64_t n, std::int64_t batch, cudaStream_t s) {
    CUFFT_CHECK(cufftCreate(&h));
    CUFFT_CHECK(cufftSetAutoAllocation(h, 0));
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
  Buffer<char> b_in, sw, sb, fbias, pz, pt, freq, deltas, b_out;  // fp32
  std::vector<Buffer<char>> mlp_w, mlp_b;
  std::unique_ptr<FftPlan> plan_h, plan_u, plan_ui;
  Buffer<float2> spectrum;  // filter=cached: (Dh, nc)

  const float* f(const Buffer<char>& b) const { return reinterpret_cast<const float*>(b.data()); }

  // Zeroes columns [L, 2L) of `rows` rows of R floats.
  void zero_tail(float* x, std::int64_t rows) {
    CUDA_CHECK(cudaMemset2DAsync(x + L, R * sizeof(float), 0, (R - L) * sizeof(float), rows, ctx.stream));
  }

  // The implicit filter's spectrum (Dh, nc), unscaled. MLP through cuBLAS fp32 products.
  Buffer<float2> filter_spectrum(Buffer<char>& work) {
    Allocator& a = *ctx.alloc;
    const std::int64_t F = cfg.filter_order, Dh = cfg.Dh();
    const int nl = cfg.num_linear();
    Buffer<float> h(a, static_cast<std::size_t>(Dh * R));  // (Dh, R)
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
      CUBLAS_CHECK(cublasSgemm(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, int(L), int(Dh), int(F), &one, act.data(),
                               int(F), f(mlp_w[nl - 1]), int(F), &zero, h.data(), int(R)));
    }
    modulation_kernel<<<grid1d(Dh * L), 256, 0, ctx.stream>>>(h.data(), f(pt), f(deltas), cfg.shift, L, Dh, R);
    CUDA_CHECK_LAUNCH();
    zero_tail(h.data(), Dh);
    Buffer<float2> Hf(a, static_cast<std::size_t>(Dh * nc));
    CUFFT_CHECK(cufftSetWorkArea(plan_h->h, work.data()));
    CUFFT_CHECK(cufftExecR2C(plan_h->h, h.data(), reinterpret_cast<cufftComplex*>(Hf.data())));
    return Hf;
  }

  std::size_t work_bytes() const {
    return std::max(std::max(plan_h->work, plan_u->work), std::max(plan_ui->work, std::size_t(256)));
  }

  template <typename T>
  void run_core(const T* z, const float* bias_in, T* yg, Buffer<char>* z_owner) {
    const std::int64_t D = cfg.D, N = cfg.order;
    Allocator& a = *ctx.alloc;
    Buffer<float> upad(a, static_cast<std::size_t>(B * D * R));                    // (B, D, 2L)
    Buffer<T> gates(a, static_cast<std::size_t>((N - 1) * B * D * L));             // (N-1, B, D, L)
    const dim3 blk(kTile, 8), grid(unsigned((D + kTile - 1) / kTile), unsigned((L + kTile - 1) / kTile), unsigned(B));
    short_conv_split_kernel<T><<<grid, blk, 0, ctx.stream>>>(z, bias_in, f(sw), f(sb), cfg.short_filter_order, L, D,
                                                             int(N), upad.data(), gates.data(), R);
    CUDA_CHECK_LAUNCH();
    zero_tail(upad.data(), B * D);
    if (z_owner) z_owner->reset();  // stream order keeps it alive for the queued kernel
    Buffer<char> work(a, work_bytes());
    Buffer<float2> hspec;
    const float2* Hf = spectrum.data();
    if (!cached) {
      hspec = filter_spectrum(work);
      Hf = hspec.data();
    }
    CUFFT_CHECK(cufftSetWorkArea(plan_u->h, work.data()));
    CUFFT_CHECK(cufftSetWorkArea(plan_ui->h, work.data()));
    Buffer<float2> U(a, static_cast<std::size_t>(B * D * nc));  // (B, D, L+1)
    auto* Uc = reinterpret_cast<cufftComplex*>(U.data());
    for (int o = 0; o < N - 1; ++o) {
      if (o > 0) {  // gate with x_{N-1-o}
        regate_kernel<T><<<grid1d(B * D * 2 * L), 256, 0, ctx.stream>>>(
            upad.data(), gates.data() + (N - 1 - o) * B * D * L, B * D, L);
        CUDA_CHECK_LAUNCH();
      }
      CUFFT_CHECK(cufftExecR2C(plan_u->h, upad.data(), Uc));
      spectral_kernel<<<grid1d(B * D * nc), 256, 0, ctx.stream>>>(U.data(), Hf, f(fbias), o, D, B * D, nc,
                                                                   1.0f / float(2 * L));
      CUDA_CHECK_LAUNCH();
      CUFFT_CHECK(cufftExecC2R(plan_ui->h, Uc, upad.data()));
    }
    U.reset();
    hspec.reset();
    work.reset();
    const dim3 g2(unsigned((D + kTile - 1) / kTile), unsigned((L + kTile - 1) / kTile), unsigned(B));
    gate_transpose_kernel<T><<<g2, blk, 0, ctx.stream>>>(upad.data(), gates.data(), yg, L, D, R);
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
  w.require_plan("hyena-cuda", B, L, hyena_cuda_unsupported(w.cfg, t));
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
  m.b_out = upload_as(a, w.out_proj_bias, DType::kF32, s);
  for (std::size_t i = 0; i < w.mlp_weight.size(); ++i) {
    m.mlp_w.push_back(upload_as(a, w.mlp_weight[i], DType::kF32, s));
    m.mlp_b.push_back(upload_as(a, w.mlp_bias[i], DType::kF32, s));
  }
  const std::int64_t n = 2 * L;
  m.plan_h = std::make_unique<FftPlan>(CUFFT_R2C, n, w.cfg.Dh(), s);
  m.plan_u = std::make_unique<FftPlan>(CUFFT_R2C, n, B * w.cfg.D, s);
  m.plan_ui = std::make_unique<FftPlan>(CUFFT_C2R, n, B * w.cfg.D, s);
  if (cache_filter) {
    Buffer<char> work(a, m.work_bytes());
    m.spectrum = m.filter_spectrum(work);
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
