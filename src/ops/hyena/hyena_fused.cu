// hyena-fused: the plan, the filter MLP kernel, layout kernels and the dispatch over FFT sizes.
// See hyena_fused.h for the design and hyena_fused_fft.cuh for the FFT passes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/cuda_check.h"
#include "ops/hyena/hyena_fused.h"
#include "ops/hyena/hyena_fused_params.h"

namespace longmix {

cudaDataType_t cuda_dtype(DType t);  // cuda_util.cu

namespace {

using fused::PassParams;

constexpr int kFM = 64;       // widest filter MLP supported (F ≤ 64)
constexpr int kMaxE = 8;      // widest positional embedding supported
constexpr int kMaxMid = 12;   // inner MLP layers held in shared memory at once
constexpr std::int64_t kMinFft = 4096, kMaxFft = 1ll << 22;

// Filter MLP, every layer but the last (SPEC §3 step 4): act (L, F) = Sin(… Sin(Linear(z_pos))).
// 256 threads a block; thread (fg, tg) computes kOut outputs kOut·fg … of 4 time points 4·tg …
// (a kOut × 4 register tile), a block 16·kOut time points. kOut = 4 (long L): each input step is
// two 16-byte shared loads (four weights, four activations) for 16 FMAs; kOut = 1 (short L, where
// blocks are few and each block's load of the weights dominates): 4 FMAs a step, 4× the blocks.
// Weights packed by the plan (rows past F are zero, so the loops need no guards). Rows of act are
// in the position layout (hyena_fused_fft.cuh): row p holds time (p mod R)·N2 + p / R, so the
// last layer's GEMM writes h in it too; rows of times past L hold the values of L − 1.
// v1 gave each thread a whole time point (64 outputs × 64 inputs in registers): 536 µs at 128k,
// 171 µs at 4k (only L/128 blocks; latency-bound). v2 (kOut = 1 everywhere): 192 µs at 128k
// (ncu, 1.5 GHz), shared-load bound.
constexpr int kHiddenThreads = 256;
template <int kOut>
constexpr int hidden_points() { return 16 * kOut; }  // time points a block
template <int kOut>
constexpr int hidden_stride() { return hidden_points<kOut>() + 4; }  // activation row stride (floats)
template <int kOut>
__device__ __forceinline__ void load_out(const float* p, float (&v)[kOut]) {
  if constexpr (kOut == 4) {
    const float4 x = *reinterpret_cast<const float4*>(p);
    v[0] = x.x; v[1] = x.y; v[2] = x.z; v[3] = x.w;
  } else {
#pragma unroll
    for (int j = 0; j < kOut; ++j) v[j] = p[j];
  }
}
template <int kOut>
__global__ void __launch_bounds__(kHiddenThreads) filter_hidden_kernel(
    const float* __restrict__ pz, int E, std::int64_t L, std::int64_t Lp, int N2, int R,
    const float* __restrict__ packed, int packed_n, int nmid, int F, float* __restrict__ act) {
  constexpr int kGroups = kFM / kOut, kAS = hidden_stride<kOut>();
  extern __shared__ __align__(16) float sm[];
  float* as = sm;                      // [kFM][kAS]: activations, input-major
  float* wts = sm + kFM * kAS;         // the packed weights
  const int tid = threadIdx.x;
  for (int i = tid; i < packed_n; i += kHiddenThreads) wts[i] = packed[i];
  const float* W0 = wts;               // (kFM, E)
  const float* b0 = W0 + kFM * E;      // (kFM)
  const float* freq = b0 + kFM;        // (kFM)
  const float* mid = freq + kFM;       // nmid × [WT (kFM in, kFM out), b (kFM)]
  const int f0 = (tid % kGroups) * kOut, t0 = (tid / kGroups) * 4;
  const std::int64_t tb = std::int64_t(blockIdx.x) * hidden_points<kOut>();
  __syncthreads();
  float a[kOut][4];  // [output j][time point i]
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const std::int64_t q = std::min<std::int64_t>(tb + t0 + i, Lp - 1);
    const std::int64_t t = std::min<std::int64_t>((q % R) * N2 + q / R, L - 1);
#pragma unroll
    for (int j = 0; j < kOut; ++j) {
      float acc = b0[f0 + j];
      for (int e = 0; e < E; ++e) acc += W0[(f0 + j) * E + e] * pz[t * E + e];
      a[j][i] = sinf(freq[f0 + j] * acc);
    }
  }
  float fr[kOut];
  load_out<kOut>(freq + f0, fr);
  for (int l = 0; l < nmid; ++l) {
#pragma unroll
    for (int j = 0; j < kOut; ++j)
      *reinterpret_cast<float4*>(as + (f0 + j) * kAS + t0) = make_float4(a[j][0], a[j][1], a[j][2], a[j][3]);
    __syncthreads();
    const float* WT = mid + l * (kFM * kFM + kFM);
    float bias[kOut];
    load_out<kOut>(WT + kFM * kFM + f0, bias);
    float acc[kOut][4];
#pragma unroll
    for (int j = 0; j < kOut; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[j][i] = bias[j];
#pragma unroll 8
    for (int e = 0; e < kFM; ++e) {
      float wv[kOut];
      load_out<kOut>(WT + e * kFM + f0, wv);
      const float4 x = *reinterpret_cast<const float4*>(as + e * kAS + t0);
      const float xv[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
      for (int j = 0; j < kOut; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[j][i] = fmaf(wv[j], xv[i], acc[j][i]);
    }
#pragma unroll
    for (int j = 0; j < kOut; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) a[j][i] = sinf(fr[j] * acc[j][i]);
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const std::int64_t q = tb + t0 + i;
    if (q >= Lp) break;
#pragma unroll
    for (int j = 0; j < kOut; ++j)
      if (f0 + j < F) act[q * F + f0 + j] = a[j][i];
  }
}

// The core scope's layout changes, 2-byte elements, between time-major rows (B, L, Cc) and
// channel rows in the position layout (B, Cc, Lp): position q holds time (q mod R)·N2 + q / R.
// to_pos: in (B, L, Cc) → out (B, Cc, Lp); else in (B, Cc, Lp) → out (B, L, Cc) (positions of
// times past L are neither read nor written). A 32 × 32 tile of (positions, channels): the
// time-major side is read or written 32 channels at a time, the channel rows 32 positions.
// Grid (ceil(Cc/32), ceil(Lp/32), B).
__global__ void transpose_pos16_kernel(const unsigned short* __restrict__ in, unsigned short* __restrict__ out,
                                       std::int64_t L, std::int64_t Cc, std::int64_t Lp, int N2, int R,
                                       bool to_pos) {
  __shared__ unsigned short tile[32][33];
  const std::int64_t b = blockIdx.z, q0 = std::int64_t(blockIdx.y) * 32, c0 = std::int64_t(blockIdx.x) * 32;
  const auto time_of = [&](std::int64_t q) { return (q % R) * N2 + q / R; };
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    if (to_pos) {  // tile[position][channel] from time rows, channels along threadIdx.x
      const std::int64_t q = q0 + i, c = c0 + threadIdx.x;
      if (q < Lp && c < Cc && time_of(q) < L) tile[i][threadIdx.x] = in[(b * L + time_of(q)) * Cc + c];
    } else {       // tile[channel][position] from channel rows, positions along threadIdx.x
      const std::int64_t c = c0 + i, q = q0 + threadIdx.x;
      if (q < Lp && c < Cc) tile[i][threadIdx.x] = in[(b * Cc + c) * Lp + q];
    }
  }
  __syncthreads();
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    if (to_pos) {
      const std::int64_t c = c0 + i, q = q0 + threadIdx.x;
      if (q < Lp && c < Cc && time_of(q) < L) out[(b * Cc + c) * Lp + q] = tile[threadIdx.x][i];
    } else {
      const std::int64_t q = q0 + i, c = c0 + threadIdx.x;
      if (q < Lp && c < Cc && time_of(q) < L) out[(b * L + time_of(q)) * Cc + c] = tile[threadIdx.x][i];
    }
  }
}

std::int64_t fft_size_for(std::int64_t L) {
  std::int64_t n = kMinFft;
  while (n < 2 * L) n *= 2;
  return n;
}

// N = N1·N2, N1 ≤ N2 ≤ 2·N1.
void split(std::int64_t N, int* n1, int* n2) {
  int lg = 0;
  while ((1ll << lg) < N) ++lg;
  *n1 = 1 << (lg / 2);
  *n2 = static_cast<int>(N / *n1);
}

#define LONGMIX_SIZE_SWITCH(n, F, ...)            \
  switch (n) {                                    \
    case 64: F<64>(__VA_ARGS__); break;           \
    case 128: F<128>(__VA_ARGS__); break;         \
    case 256: F<256>(__VA_ARGS__); break;         \
    case 512: F<512>(__VA_ARGS__); break;         \
    case 1024: F<1024>(__VA_ARGS__); break;       \
    case 2048: F<2048>(__VA_ARGS__); break;       \
    default: throw RuntimeFailure("hyena-fused: no FFT of size " + std::to_string(n)); \
  }

int col_width_of(int n) {
  switch (n) {
    case 64: return fused::col_width<64>();
    case 128: return fused::col_width<128>();
    case 256: return fused::col_width<256>();
    case 512: return fused::col_width<512>();
    case 1024: return fused::col_width<1024>();
    case 2048: return fused::col_width<2048>();
  }
  throw RuntimeFailure("hyena-fused: no FFT of size " + std::to_string(n));
}

std::size_t align256(std::size_t n) { return (n + 255) / 256 * 256; }

}  // namespace

std::string hyena_fused_unsupported(const HyenaConfig& cfg, std::int64_t L, DType t) {
  if (t == DType::kF32) return "hyena-fused stores fp16 or bf16";
  if (cfg.D % 2) return "hyena-fused transforms channels in pairs: D must be even (D=" + std::to_string(cfg.D) + ")";
  if (cfg.filter_order > kFM)
    return "hyena-fused: filter MLP width " + std::to_string(cfg.filter_order) + " (supported: up to " +
           std::to_string(kFM) + ")";
  if (cfg.emb_dim > kMaxE) return "hyena-fused: emb_dim " + std::to_string(cfg.emb_dim) + " (supported: up to 8)";
  if (cfg.num_inner_mlps > kMaxMid)
    return "hyena-fused: " + std::to_string(cfg.num_inner_mlps) + " inner MLP layers (supported: up to 12)";
  if (cfg.short_filter_order > 9)
    return "hyena-fused: short filter of length " + std::to_string(cfg.short_filter_order) + " (supported: up to 9)";
  if (fft_size_for(L) > kMaxFft)
    return "hyena-fused: L=" + std::to_string(L) + " needs an FFT longer than " + std::to_string(kMaxFft) +
           " (supported: L up to " + std::to_string(kMaxFft / 2) + ")";
  return {};
}

struct HyenaFusedPlan::Impl {
  HyenaConfig cfg;
  std::int64_t B = 0, L = 0, N = 0, D = 0, C = 0, Dh = 0;
  int N1 = 0, N2 = 0, F = 0;
  // The position layout of time rows (hyena_fused_fft.cuh): R rows a column, Lp = N2·R values.
  int R = 0, lg_n2 = 0;
  std::int64_t Lp = 0;
  DType t = DType::kF16;
  bool cached = false;
  HyenaFusedOptions opt;
  CudaContext ctx;
  std::size_t ssz = 4;  // bytes of one stored complex value
  // Weights: projections in dtype t, the rest fp32.
  Buffer<char> w_in, w_out, b_out, b_in, sw, sb, fbias, pz, pt, deltas, mlp_packed, w_last;
  int packed_n = 0;
  // The arena: R0 = max(act + h, zT + Ts), R1 = max(Tf, yg) (yg only when cached), R2 = prev.
  Buffer<char> arena, tf_cached;
  std::size_t off_r1 = 0, off_r2 = 0, act_bytes = 0, zt_bytes = 0;
  // The captured forward, for the (input, output, scope) it was captured with.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  const void* g_in = nullptr;
  void* g_out = nullptr;
  bool g_core = false;

  ~Impl() { drop_graph(); }
  void drop_graph() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    exec = nullptr;
    graph = nullptr;
  }

  char* R0() { return arena.data(); }
  char* R1() { return arena.data() + off_r1; }
  char* R2() { return arena.data() + off_r2; }
  void* Tf() { return cached ? static_cast<void*>(tf_cached.data()) : static_cast<void*>(R1()); }
  const float* f(const Buffer<char>& b) const { return reinterpret_cast<const float*>(b.data()); }

  PassParams base_params() {
    PassParams P;
    P.L = L; P.N = N; P.D = D; P.C = C; P.N1 = N1; P.N2 = N2;
    P.R = R; P.lg_n2 = lg_n2; P.Lp = Lp;
    P.K = cfg.short_filter_order;
    P.half_D = D / 2;
    P.bf16 = t == DType::kBF16;
    P.sw = f(sw); P.sb = f(sb);
    P.tgrid = f(pt); P.deltas = f(deltas); P.shift = cfg.shift; P.skip = f(fbias);
    P.inv_n = 1.0f / static_cast<float>(N);
    return P;
  }

  // Filter hidden layers: 4 outputs × 4 time points a thread, 1 × 4 below 32k (more blocks).
  static constexpr int kOutLong = 4, kOutShort = 1;
  bool hidden_short() const { return opt.filter_tile ? opt.filter_tile == 1 : L < 32768; }
  template <int kOut>
  std::size_t hidden_smem() const { return (kFM * hidden_stride<kOut>() + packed_n) * sizeof(float); }
  template <int kOut>
  void launch_hidden(float* act) {
    constexpr int kTP = hidden_points<kOut>();
    filter_hidden_kernel<kOut><<<unsigned((Lp + kTP - 1) / kTP), kHiddenThreads, hidden_smem<kOut>(), ctx.stream>>>(
        f(pz), cfg.emb_dim, L, Lp, N2, R, f(mlp_packed), packed_n, cfg.num_inner_mlps, F, act);
    CUDA_CHECK_LAUNCH();
  }
  void col(bool fwd, const PassParams& P, std::int64_t pairs) {
    LONGMIX_SIZE_SWITCH(N1, fused::launch_col, fwd, opt.fp16_spectra, P, pairs, ctx.stream);
  }
  void row(const PassParams& P, std::int64_t pairs) {
    LONGMIX_SIZE_SWITCH(N2, fused::launch_row, opt.fp16_spectra, P, pairs, ctx.stream);
  }

  // The filter's pass-A transform (Dh/2 pairs) into tf, from the weights alone.
  void filter_transform(void* tf, float* act, float* h) {
    if (hidden_short()) launch_hidden<kOutShort>(act);
    else launch_hidden<kOutLong>(act);
    // Column-major h (Lp, Dh) = actᵀ (Lp, F) · W_lastᵀ: row-major h (Dh, Lp), rows in the position
    // layout. TF32 tensor cores.
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasGemmEx(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, int(Lp), int(Dh), F, &one, act, CUDA_R_32F, F,
                              w_last.data(), CUDA_R_32F, F, &zero, h, CUDA_R_32F, int(Lp),
                              CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
    PassParams P = base_params();
    P.src = fused::kSrcFilter;
    P.h = h;
    P.T = tf;
    col(true, P, Dh / 2);
  }

  // The whole forward on the stream. layer: in = u (B, L, D); core: in = z (B, L, C).
  void enqueue(const void* in, void* out, bool core) {
    if (!cached) filter_transform(R1(), reinterpret_cast<float*>(R0()), reinterpret_cast<float*>(R0() + act_bytes));
    void* zT = R0();
    void* Ts = R0() + zt_bytes;
    if (core) {
      const dim3 g(unsigned((C + 31) / 32), unsigned((Lp + 31) / 32), unsigned(B));
      transpose_pos16_kernel<<<g, dim3(32, 8), 0, ctx.stream>>>(static_cast<const unsigned short*>(in),
                                                                static_cast<unsigned short*>(zT), L, C, Lp, N2, R,
                                                                true);
      CUDA_CHECK_LAUNCH();
    } else {
      // zT (C, Lp) per batch in the position layout = W_in · u_bᵀ, one product per column n2 of
      // the time grid: column-major (R, C) at zT + n2·R (ldd Lp) from the rows t = n1·N2 + n2 of
      // u_b (lda N2·D), a strided batch over n2 (cuBLASLt; in_proj's bias is added by the first
      // column pass).
      const std::size_t es = dtype_size(t);
      for (std::int64_t b = 0; b < B; ++b)
        for_column_groups([&](std::int64_t n2, std::int64_t count, std::int64_t rows) {
          GemmArgs g;
          g.ta = true; g.m = rows; g.n = C; g.k = D;
          g.A = static_cast<const char*>(in) + (b * L + n2) * D * es; g.lda = N2 * D;
          g.B = w_in.data(); g.ldb = D;
          g.D = static_cast<char*>(zT) + (b * C * Lp + n2 * R) * es; g.ldd = Lp;
          g.batch = int(count); g.sa = D; g.sd = R;
          gemm_cuda(t, g, ctx);
        });
    }
    const int order = cfg.order;
    void* yg = R1();  // the final gated output (B, D, L)
    for (int o = 0; o < order - 1; ++o) {
      PassParams P = base_params();
      P.zT = zT;
      P.b_in = core ? nullptr : f(b_in);
      P.o = o;
      P.g_a = order;
      P.g_b = order - 1 - o;
      P.src = o == 0 ? fused::kSrcConvProduct : fused::kSrcPrevTimesConv;
      P.prev = reinterpret_cast<const float*>(R2());
      P.T = Ts;
      P.Tf = Tf();
      col(true, P, B * D / 2);
      row(P, B * D / 2);
      const bool last = o == order - 2;
      P.dst = last ? fused::kDstFinal : fused::kDstPrev;
      P.out = last ? yg : static_cast<void*>(R2());
      P.out_rows = D;
      col(false, P, B * D / 2);
    }
    if (core) {
      const dim3 g(unsigned((D + 31) / 32), unsigned((Lp + 31) / 32), unsigned(B));
      transpose_pos16_kernel<<<g, dim3(32, 8), 0, ctx.stream>>>(static_cast<const unsigned short*>(yg),
                                                                static_cast<unsigned short*>(out), L, D, Lp, N2, R,
                                                                false);
      CUDA_CHECK_LAUNCH();
    } else {
      // y_b (L, D) row-major = column-major (D, L) = W_out · yg_b, per column n2 of the time
      // grid: the R columns t = n1·N2 + n2 (ldd N2·D) from yg_b's position-layout rows at
      // n2·R (ldb Lp), a strided batch over n2; out_proj's bias in the epilogue.
      const std::size_t es = dtype_size(t);
      for (std::int64_t b = 0; b < B; ++b)
        for_column_groups([&](std::int64_t n2, std::int64_t count, std::int64_t rows) {
          GemmArgs g;
          g.ta = true; g.tb = true; g.m = D; g.n = rows; g.k = D;
          g.A = w_out.data(); g.lda = D;
          g.B = static_cast<const char*>(yg) + (b * D * Lp + n2 * R) * es; g.ldb = Lp;
          g.D = static_cast<char*>(out) + (b * L + n2) * D * es; g.ldd = N2 * D;
          g.bias = b_out.data();
          g.batch = int(count); g.sb = R; g.sd = D;
          gemm_cuda(t, g, ctx);
        });
    }
  }

  // The columns n2 of the time grid in at most two groups of equal height: fn(first n2, columns,
  // rows) for the first L mod N2 columns (R rows each; all N2 when N2 divides L) and the rest
  // (R − 1 rows).
  template <typename Fn>
  void for_column_groups(Fn&& fn) const {
    const std::int64_t full = L - (R - 1) * std::int64_t(N2);  // columns with R rows: 1 … N2
    fn(0, full, R);
    if (full < N2 && R > 1) fn(full, N2 - full, R - 1);
  }

  void run(const void* in, void* out, bool core) {
    if (!opt.graph) {
      enqueue(in, out, core);
      return;
    }
    if (!exec || in != g_in || out != g_out || core != g_core) {
      drop_graph();
      CUDA_CHECK(cudaStreamBeginCapture(ctx.stream, cudaStreamCaptureModeThreadLocal));
      try {
        enqueue(in, out, core);
      } catch (...) {
        cudaGraph_t g = nullptr;
        cudaStreamEndCapture(ctx.stream, &g);
        if (g) cudaGraphDestroy(g);
        throw;
      }
      CUDA_CHECK(cudaStreamEndCapture(ctx.stream, &graph));
      CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
      g_in = in;
      g_out = out;
      g_core = core;
    }
    CUDA_CHECK(cudaGraphLaunch(exec, ctx.stream));
  }
};

HyenaFusedPlan::HyenaFusedPlan(const HyenaWeights& w, std::int64_t B, std::int64_t L, DType t, bool cache_filter,
                               CudaContext& ctx, HyenaFusedOptions opt)
    : impl_(std::make_unique<Impl>()) {
  w.require_plan("hyena-fused", B, L, hyena_fused_unsupported(w.cfg, L, t));
  Impl& m = *impl_;
  m.cfg = w.cfg;
  m.B = B;
  m.L = L;
  m.D = w.cfg.D;
  m.C = w.cfg.C();
  m.Dh = w.cfg.Dh();
  m.F = w.cfg.filter_order;
  m.t = t;
  m.cached = cache_filter;
  m.opt = opt;
  m.ctx = ctx;
  m.N = fft_size_for(L);
  split(m.N, &m.N1, &m.N2);
  m.R = static_cast<int>((L + m.N2 - 1) / m.N2);
  m.Lp = std::int64_t(m.N2) * m.R;
  while ((1 << m.lg_n2) < m.N2) ++m.lg_n2;
  m.ssz = opt.fp16_spectra ? 4 : 8;
  LONGMIX_REQUIRE(opt.filter_tile == 0 || opt.filter_tile == 1 || opt.filter_tile == 4,
                  "hyena-fused: filter_tile must be 0, 1 or 4, not ", opt.filter_tile);
  LONGMIX_REQUIRE(m.N2 % col_width_of(m.N1) == 0, "hyena-fused: N2=", m.N2, " is not a multiple of the column width");
  Allocator& a = *ctx.alloc;
  cudaStream_t s = ctx.stream;
  const std::int64_t D = m.D, C = m.C, F = m.F;

  // Weights.
  m.w_in = upload_as(a, w.in_proj_weight, t, s);
  m.w_out = upload_as(a, w.out_proj_weight, t, s);
  m.b_out = upload_as(a, w.out_proj_bias, t, s);  // in the storage dtype, as PyTorch's half module holds it
  m.b_in = upload_as(a, w.in_proj_bias, DType::kF32, s);
  m.sw = upload_as(a, w.short_filter_weight, DType::kF32, s);
  m.sb = upload_as(a, w.short_filter_bias, DType::kF32, s);
  m.fbias = upload_as(a, w.filter_bias, DType::kF32, s);
  m.pz = upload_as(a, w.pos_emb_z, DType::kF32, s);
  {  // the time grid in the position layout (zero at positions of times past L)
    std::vector<float> tp(static_cast<std::size_t>(m.Lp), 0.0f);
    for (std::int64_t q = 0; q < m.Lp; ++q) {
      const std::int64_t tt = (q % m.R) * m.N2 + q / m.R;
      if (tt < L) tp[static_cast<std::size_t>(q)] = w.pos_emb_t[static_cast<std::size_t>(tt)];
    }
    m.pt = upload_as(a, tp, DType::kF32, s);
  }
  m.deltas = upload_as(a, w.modulation_deltas, DType::kF32, s);
  m.w_last = upload_as(a, w.mlp_weight.back(), DType::kF32, s);
  {
    const int E = w.cfg.emb_dim, nmid = w.cfg.num_inner_mlps;
    std::vector<float> pk(static_cast<std::size_t>(kFM * E + 2 * kFM + nmid * (kFM * kFM + kFM)), 0.0f);
    for (int fo = 0; fo < F; ++fo) {
      for (int e = 0; e < E; ++e) pk[fo * E + e] = w.mlp_weight[0][fo * E + e];
      pk[kFM * E + fo] = w.mlp_bias[0][fo];
      pk[kFM * E + kFM + fo] = w.freq[fo];
    }
    for (int l = 0; l < nmid; ++l) {
      float* WT = pk.data() + kFM * E + 2 * kFM + l * (kFM * kFM + kFM);
      const auto& W = w.mlp_weight[l + 1];  // (F out, F in)
      for (int fo = 0; fo < F; ++fo) {
        for (int e = 0; e < F; ++e) WT[e * kFM + fo] = W[fo * F + e];
        WT[kFM * kFM + fo] = w.mlp_bias[l + 1][fo];
      }
    }
    m.packed_n = static_cast<int>(pk.size());
    m.mlp_packed = upload_as(a, pk, DType::kF32, s);
    CUDA_CHECK(cudaFuncSetAttribute(filter_hidden_kernel<Impl::kOutLong>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(m.hidden_smem<Impl::kOutLong>())));
    CUDA_CHECK(cudaFuncSetAttribute(filter_hidden_kernel<Impl::kOutShort>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(m.hidden_smem<Impl::kOutShort>())));
  }
  LONGMIX_SIZE_SWITCH(m.N1, fused::prepare_size, );
  LONGMIX_SIZE_SWITCH(m.N2, fused::prepare_size, );

  // The arena.
  const std::size_t es = dtype_size(t);
  const std::int64_t Lp = m.Lp;  // every time row is Lp long (the position layout)
  const std::size_t zt = align256(static_cast<std::size_t>(B * C * Lp) * es);
  const std::size_t ts = align256(static_cast<std::size_t>(B * (D / 2) * m.N) * m.ssz);
  const std::size_t act = align256(static_cast<std::size_t>(Lp * F) * 4);
  const std::size_t h = align256(static_cast<std::size_t>(m.Dh * Lp) * 4);
  const std::size_t tf = align256(static_cast<std::size_t>((m.Dh / 2) * m.N) * m.ssz);
  const std::size_t yg = align256(static_cast<std::size_t>(B * D * Lp) * es);
  const std::size_t prev = w.cfg.order > 2 ? align256(static_cast<std::size_t>(B * D * Lp) * 4) : 0;
  m.zt_bytes = zt;
  m.act_bytes = act;
  const std::size_t r0 = std::max(cache_filter ? 0 : act + h, zt + ts);
  const std::size_t r1 = cache_filter ? yg : std::max(tf, yg);
  m.off_r1 = r0;
  m.off_r2 = r0 + r1;
  if (cache_filter) {
    m.tf_cached = Buffer<char>(a, tf);
    Buffer<char> act_b(a, act), h_b(a, h);
    m.filter_transform(m.tf_cached.data(), reinterpret_cast<float*>(act_b.data()), reinterpret_cast<float*>(h_b.data()));
    CUDA_CHECK(cudaStreamSynchronize(s));
  }
  m.arena = Buffer<char>(a, r0 + r1 + prev);
}

HyenaFusedPlan::~HyenaFusedPlan() = default;

void HyenaFusedPlan::forward(const void* u, void* y) { impl_->run(u, y, false); }
void HyenaFusedPlan::core(const void* z, void* yg) { impl_->run(z, yg, true); }

}  // namespace longmix
