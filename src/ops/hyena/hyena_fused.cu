// hyena-fused: the plan, the filter MLP kernel, layout kernels and the dispatch over FFT sizes.
// See hyena_fused.h for the design and hyena_fused_fft.cuh for the FFT passes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "common/cuda_check.h"
#include "ops/hyena/hyena_fused.h"
#include "ops/hyena/hyena_fused_params.h"
#include "ops/hyena/mma_sm80.cuh"

namespace longmix {

cudaDataType_t cuda_dtype(DType t);  // cuda_util.cu

namespace {

using fused::PassParams;
using fused::mma_16816;
using fused::pack_half2;

constexpr int kFM = 64;       // widest filter MLP supported (F ≤ 64)
constexpr int kMaxE = 8;      // widest positional embedding supported
constexpr int kMaxMid = 12;   // inner MLP layers held in shared memory at once
constexpr std::int64_t kMaxFft = 1ll << 22;

// Filter MLP, every layer but the last (SPEC §3 step 4): act (Lp, Fs) fp16 = Sin(… Sin(Linear(z_pos)))
// on tensor cores. A warp computes 16 time points × 64 outputs of a layer as 8 × 4 m16n8k16 MMAs
// (fp16 operands, fp32 accumulation, the biases and Sin in fp32). The accumulator fragment of one
// layer (row g / g + 8, columns 8j + 2c + {0, 1}) is, packed to fp16 pairs, exactly the A fragment
// of the next layer's k-step j / 2, so activations never leave registers between layers (as in
// FlashAttention-2's P·V); only the weights come from shared memory. The first layer (E ≤ 8 inputs)
// is plain fp32 FMAs. Rows of act are in the position layout (hyena_fused_params.h), so the last
// layer's GEMM writes h in it too; rows of times past L hold the values of L − 1. fp16 operands
// carry the same 10-bit mantissa as the TF32 last layer (and PyTorch's half module computes the
// whole MLP in fp16). Sin is the SFU's __sinf: its absolute error (~1e-6 for |x| ≤ π, growing
// as |x|·2^-22 beyond) is far below the fp16 rounding of every activation it feeds (2^-11).
// v1–v6 ran fp32 FMAs on CUDA cores (a 4 × 4 register tile a thread, activations through shared
// memory): 155 µs at 128k (ncu) for 2.2 GFLOP.
constexpr int kMmaMaxWarps = 4;  // warps a block (fewer at short L, for more blocks)
constexpr int kWS = kFM + 8;  // halves a weight row in shared memory: conflict-free B fragments
// f32 part of the packed weights: W0 (kFM × E), b0 (kFM), freq (kFM), the inner biases (nmid × kFM).
constexpr int packed32_floats(int E, int nmid) { return kFM * E + 2 * kFM + nmid * kFM; }
constexpr std::size_t hidden_mma_smem(int E, int nmid) {
  return (std::size_t(packed32_floats(E, nmid)) * 4 + 15) / 16 * 16 + std::size_t(nmid) * kFM * kWS * 2;
}
__global__ void __launch_bounds__(32 * kMmaMaxWarps) filter_hidden_kernel(
    const float* __restrict__ pz, int E, std::int64_t L, std::int64_t Lp, int N2, int R,
    const float* __restrict__ p32, const __half* __restrict__ w16, int nmid, int F, int Fs,
    __half* __restrict__ act) {
  extern __shared__ __align__(16) unsigned char sm[];
  const int n32 = packed32_floats(E, nmid);
  float* s32 = reinterpret_cast<float*>(sm);
  __half* s16 = reinterpret_cast<__half*>(sm + (std::size_t(n32) * 4 + 15) / 16 * 16);
  // Every copy in flight at once (cp.async): a loop of dependent loads and stores took one L2
  // round trip per 16 bytes a thread.
  for (int i = threadIdx.x; i < n32; i += blockDim.x) __pipeline_memcpy_async(s32 + i, p32 + i, 4);
  {
    const int n16 = nmid * kFM * kWS / 8;  // 16-byte chunks (kWS is a multiple of 8)
    const uint4* src = reinterpret_cast<const uint4*>(w16);
    uint4* dst = reinterpret_cast<uint4*>(s16);
    for (int i = threadIdx.x; i < n16; i += blockDim.x) __pipeline_memcpy_async(dst + i, src + i, 16);
  }
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  const float* W0 = s32;
  const float* b0 = W0 + kFM * E;
  const float* freq = b0 + kFM;
  const float* mbias = freq + kFM;
  const int lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
  float fr[8][2];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    fr[j][0] = freq[8 * j + 2 * c];
    fr[j][1] = freq[8 * j + 2 * c + 1];
  }
  const std::int64_t tiles = (Lp + 15) / 16;
  const int warps = blockDim.x / 32;
  for (std::int64_t tile = std::int64_t(blockIdx.x) * warps + threadIdx.x / 32; tile < tiles;
       tile += std::int64_t(gridDim.x) * warps) {
    float acc[8][4];  // n-tile j: (row g, cols 8j + 2c, +1), (row g + 8, the same cols)
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const std::int64_t q = std::min<std::int64_t>(tile * 16 + g + 8 * hr, Lp - 1);
      const std::int64_t t = std::min<std::int64_t>(fused::time_at(q, N2, R), L - 1);
      float z[kMaxE];
#pragma unroll
      for (int e = 0; e < kMaxE; ++e) z[e] = e < E ? pz[t * E + e] : 0.0f;
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const int f = 8 * j + 2 * c + u;
          float a = b0[f];
#pragma unroll
          for (int e = 0; e < kMaxE; ++e)
            if (e < E) a = fmaf(W0[f * E + e], z[e], a);
          acc[j][2 * hr + u] = __sinf(fr[j][u] * a);
        }
    }
    for (int l = 0; l < nmid; ++l) {
      unsigned A[4][4];
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        A[s][0] = pack_half2(acc[2 * s][0], acc[2 * s][1]);
        A[s][1] = pack_half2(acc[2 * s][2], acc[2 * s][3]);
        A[s][2] = pack_half2(acc[2 * s + 1][0], acc[2 * s + 1][1]);
        A[s][3] = pack_half2(acc[2 * s + 1][2], acc[2 * s + 1][3]);
      }
      const __half* Wl = s16 + l * kFM * kWS;  // (out n, in k): B[k][n] = W[n][k]
      const float* bl = mbias + l * kFM;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        acc[j][0] = acc[j][2] = bl[8 * j + 2 * c];
        acc[j][1] = acc[j][3] = bl[8 * j + 2 * c + 1];
      }
#pragma unroll
      for (int s = 0; s < 4; ++s)
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const __half* w = Wl + (8 * j + g) * kWS + 16 * s + 2 * c;
          mma_16816(acc[j], A[s], *reinterpret_cast<const unsigned*>(w), *reinterpret_cast<const unsigned*>(w + 8));
        }
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[j][i] = __sinf(fr[j][i % 2] * acc[j][i]);
    }
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const std::int64_t q = tile * 16 + g + 8 * hr;
      if (q >= Lp) continue;
      __half* row = act + q * Fs;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int f = 8 * j + 2 * c;
        if (f + 1 < F) *reinterpret_cast<__half2*>(row + f) = __floats2half2_rn(acc[j][2 * hr], acc[j][2 * hr + 1]);
        else if (f < F) row[f] = __float2half_rn(acc[j][2 * hr]);
      }
    }
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
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    if (to_pos) {  // tile[position][channel] from time rows, channels along threadIdx.x
      const std::int64_t q = q0 + i, c = c0 + threadIdx.x;
      if (q >= Lp || c >= Cc) continue;
      const std::int64_t t = fused::time_at(q, N2, R);
      if (t < L) tile[i][threadIdx.x] = in[(b * L + t) * Cc + c];
    } else {       // tile[channel][position] from channel rows, positions along threadIdx.x
      const std::int64_t c = c0 + i, q = q0 + threadIdx.x;
      if (q < Lp && c < Cc) tile[i][threadIdx.x] = in[(b * Cc + c) * Lp + q];
    }
  }
  __syncthreads();
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    if (to_pos) {
      const std::int64_t c = c0 + i, q = q0 + threadIdx.x;
      if (q < Lp && c < Cc && fused::time_at(q, N2, R) < L) out[(b * Cc + c) * Lp + q] = tile[threadIdx.x][i];
    } else {
      const std::int64_t q = q0 + i, c = c0 + threadIdx.x;
      if (q >= Lp || c >= Cc) continue;
      const std::int64_t t = fused::time_at(q, N2, R);
      if (t < L) out[(b * L + t) * Cc + c] = tile[threadIdx.x][i];
    }
  }
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

}  // namespace

int fused::col_width_of(int n) {
  switch (n) {
    case 64: return col_width<64>();
    case 128: return col_width<128>();
    case 256: return col_width<256>();
    case 512: return col_width<512>();
    case 1024: return col_width<1024>();
    case 2048: return col_width<2048>();
  }
  throw RuntimeFailure("hyena-fused: no FFT of size " + std::to_string(n));
}

namespace {

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
  if (hyena_fused_fft_size(L) > kMaxFft)
    return "hyena-fused: L=" + std::to_string(L) + " needs an FFT longer than " + std::to_string(kMaxFft) +
           " (supported: L up to " + std::to_string(kMaxFft / 2) + ")";
  return {};
}

struct HyenaFusedPlan::Impl {
  HyenaConfig cfg;
  std::int64_t B = 0, L = 0, N = 0, D = 0, C = 0, Dh = 0;
  int N1 = 0, N2 = 0, F = 0;
  // The position layout of time rows (hyena_fused_fft.cuh): R rows a column, Lp = N2·R values.
  int R = 0;
  std::int64_t Lp = 0;
  DType t = DType::kF16;
  bool cached = false;
  bool row_tc = false;  // pass B on tensor cores (N2 = 512)
  bool col_tc = false;  // passes A and A⁻¹ on tensor cores (N1 = 512)
  bool overlap = false;  // the filter's path on `side`, concurrent with in_proj and the signal's pass A
  cudaStream_t side = nullptr;
  cudaEvent_t fork = nullptr, join = nullptr;
  HyenaFusedOptions opt;
  CudaContext ctx;
  std::size_t ssz = 4;  // bytes of one stored complex value
  // Weights: projections in dtype t, the rest fp32.
  // The filter MLP: mlp32 (W0, b0, freq, inner biases; fp32), mlp16 (inner weights, rows of kWS
  // halves), w_last (Dh, F) fp16.
  Buffer<char> w_in, w_out, b_out, b_in, sw, sb, fbias, pz, pt, deltas, mlp32, mlp16, w_last;
  int Fs = 0;      // act's row stride (halves): F rounded up to 8
  int blocks_hidden = 0, warps_hidden = 0;
  // The arena: R0 = max(act + h, zT + Ts) (zT + Ts + act + h when overlapping), R1 = max(Tf, yg)
  // (yg only when cached), R2 = prev.
  Buffer<char> arena, tf_cached;
  std::size_t off_r1 = 0, off_r2 = 0, act_off = 0, h_off = 0, zt_bytes = 0;
  // The captured forward, for the (input, output, scope) it was captured with.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  const void* g_in = nullptr;
  void* g_out = nullptr;
  bool g_core = false;

  ~Impl() {
    drop_graph();
    if (fork) cudaEventDestroy(fork);
    if (join) cudaEventDestroy(join);
    if (side) cudaStreamDestroy(side);
  }
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
    P.R = R; P.Lp = Lp;
    P.vec8 = hyena_fused_uses_vec8(opt, B, D, L, R);
    P.K = cfg.short_filter_order;
    P.half_D = D / 2;
    P.bf16 = t == DType::kBF16;
    P.sw = f(sw); P.sb = f(sb);
    P.tgrid = f(pt); P.deltas = f(deltas); P.shift = cfg.shift; P.skip = f(fbias);
    P.inv_n = 1.0f / static_cast<float>(N);
    return P;
  }

  void launch_hidden(__half* act, cudaStream_t s) {
    filter_hidden_kernel<<<unsigned(blocks_hidden), 32 * warps_hidden, hidden_mma_smem(cfg.emb_dim, cfg.num_inner_mlps),
                           s>>>(f(pz), cfg.emb_dim, L, Lp, N2, R, f(mlp32),
                                         reinterpret_cast<const __half*>(mlp16.data()), cfg.num_inner_mlps, F, Fs, act);
    CUDA_CHECK_LAUNCH();
  }
  void col(bool fwd, const PassParams& P, std::int64_t pairs, cudaStream_t s) {
    if (col_tc) fused::launch_col_tc(fwd, opt.fp16_spectra, P, pairs, s);
    else LONGMIX_SIZE_SWITCH(N1, fused::launch_col, fwd, opt.fp16_spectra, P, pairs, s);
  }
  void col(bool fwd, const PassParams& P, std::int64_t pairs) { col(fwd, P, pairs, ctx.stream); }
  void row(const PassParams& P, std::int64_t pairs) {
    if (row_tc) fused::launch_row_tc(opt.fp16_spectra, opt.row_fft != HyenaFusedOptions::RowFft::kTensorDirect, P, pairs, ctx.stream);
    else LONGMIX_SIZE_SWITCH(N2, fused::launch_row, opt.fp16_spectra, hyena_fused_row_pairs(opt, N2), P, pairs, ctx.stream);
  }

  // The filter's pass-A transform (Dh/2 pairs) into tf, from the weights alone, on ctx.stream,
  // or on `side` (overlap) where the last layer goes through cuBLASLt without a workspace: the
  // one lent to the handle and to cuBLASLt is in use by in_proj at the same time.
  void filter_transform(void* tf, __half* act, __half* h, bool on_side = false) {
    const cudaStream_t s = on_side ? side : ctx.stream;
    launch_hidden(act, s);
    // Column-major h (Lp, Dh) = actᵀ (Lp, F) · W_lastᵀ: row-major h (Dh, Lp), rows in the position
    // layout. fp16 operands and output, fp32 accumulation (v1–v7: fp32 act and h, TF32).
    if (on_side) {
      CudaContext sc = ctx;
      sc.stream = side;
      sc.workspace = nullptr;
      sc.workspace_bytes = 0;
      GemmArgs g;
      g.ta = true; g.m = Lp; g.n = Dh; g.k = F;
      g.A = act; g.lda = Fs;
      g.B = w_last.data(); g.ldb = F;
      g.D = h; g.ldd = Lp;
      gemm_cuda(DType::kF16, g, sc);
    } else {
      const float one = 1.0f, zero = 0.0f;
      CUBLAS_CHECK(cublasGemmEx(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, int(Lp), int(Dh), F, &one, act, CUDA_R_16F, Fs,
                                w_last.data(), CUDA_R_16F, F, &zero, h, CUDA_R_16F, int(Lp), CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
    }
    PassParams P = base_params();
    P.src = fused::kSrcFilter;
    P.h = h;
    P.T = tf;
    P.stage = hyena_fused_stages_filter(opt, R, col_tc) && reinterpret_cast<std::uintptr_t>(h) % 16 == 0 &&
              reinterpret_cast<std::uintptr_t>(P.tgrid) % 16 == 0;
    col(true, P, Dh / 2, s);
  }

  // The whole forward on the stream. layer: in = u (B, L, D); core: in = z (B, L, C).
  void enqueue(const void* in, void* out, bool core) {
    if (!cached) {
      if (overlap) {  // forked here, joined before the first pass B
        CUDA_CHECK(cudaEventRecord(fork, ctx.stream));
        CUDA_CHECK(cudaStreamWaitEvent(side, fork, 0));
      }
      filter_transform(R1(), reinterpret_cast<__half*>(R0() + act_off), reinterpret_cast<__half*>(R0() + h_off), overlap);
      if (overlap) CUDA_CHECK(cudaEventRecord(join, side));
    }
    void* zT = R0();
    void* Ts = R0() + zt_bytes;
    if (core) {
      const dim3 g(unsigned((C + 31) / 32), unsigned((Lp + 31) / 32), unsigned(B));
      transpose_pos16_kernel<<<g, dim3(32, 8), 0, ctx.stream>>>(static_cast<const unsigned short*>(in),
                                                                static_cast<unsigned short*>(zT), L, C, Lp, N2, R,
                                                                true);
      CUDA_CHECK_LAUNCH();
    } else {
      for (std::int64_t b = 0; b < B; ++b)
        for_column_groups([&](std::int64_t n2, std::int64_t count, std::int64_t rows) {
          gemm_cuda(t, in_proj_args(b, n2, count, rows, in, zT), ctx);
        });
    }
    const int order = cfg.order;
    // zT's rows start on 16 bytes (Lp = N2·R, R % 8 == 0) where the arena does
    const bool stages = hyena_fused_stages(opt, R, cfg.short_filter_order, col_tc) &&
                        reinterpret_cast<std::uintptr_t>(zT) % 16 == 0;
    void* yg = R1();  // the final gated output (B, D, L)
    for (int o = 0; o < order - 1; ++o) {
      PassParams P = base_params();
      P.zT = zT;
      P.b_in = core ? nullptr : f(b_in);
      P.o = o;
      P.g_a = order;
      P.g_b = order - 1 - o;
      P.src = o == 0 ? fused::kSrcConvProduct : fused::kSrcPrevTimesConv;
      P.vec8 = hyena_fused_signal_uses_vec8(opt, B, D, L, R, N1);
      P.stage = stages;
      P.prev = reinterpret_cast<const float*>(R2());
      P.T = Ts;
      P.Tf = Tf();
      col(true, P, B * D / 2);
      if (overlap && o == 0) CUDA_CHECK(cudaStreamWaitEvent(ctx.stream, join, 0));
      row(P, B * D / 2);
      const bool last = o == order - 2;
      P.dst = last ? fused::kDstFinal : fused::kDstPrev;
      P.out = last ? yg : static_cast<void*>(R2());
      P.out_rows = D;
      P.vec8 = hyena_fused_uses_vec8(opt, B, D, L, R);
      col(false, P, B * D / 2);
    }
    if (core) {
      const dim3 g(unsigned((D + 31) / 32), unsigned((Lp + 31) / 32), unsigned(B));
      transpose_pos16_kernel<<<g, dim3(32, 8), 0, ctx.stream>>>(static_cast<const unsigned short*>(yg),
                                                                static_cast<unsigned short*>(out), L, D, Lp, N2, R,
                                                                false);
      CUDA_CHECK_LAUNCH();
    } else {
      for (std::int64_t b = 0; b < B; ++b)
        for_column_groups([&](std::int64_t n2, std::int64_t count, std::int64_t rows) {
          gemm_cuda(t, out_proj_args(b, n2, count, rows, yg, out), ctx);
        });
    }
  }

  // The projections of batch element b for `count` columns n2 … of the time grid, `rows` rows
  // each (for_column_groups), as cuBLASLt strided batches over n2.
  // in_proj: zT (C, Lp) per batch in the position layout = W_in · u_bᵀ: column-major (rows, C)
  // at zT + n2·R (ldd Lp) from the rows t = n1·N2 + n2 of u_b (lda N2·D); its bias is added by
  // the first column pass.
  GemmArgs in_proj_args(std::int64_t b, std::int64_t n2, std::int64_t count, std::int64_t rows, const void* u,
                        void* zT) const {
    const std::size_t es = dtype_size(t);
    GemmArgs g;
    g.ta = true; g.m = rows; g.n = C; g.k = D;
    g.A = static_cast<const char*>(u) + (b * L + n2) * D * es; g.lda = N2 * D;
    g.B = w_in.data(); g.ldb = D;
    g.D = static_cast<char*>(zT) + (b * C * Lp + n2 * R) * es; g.ldd = Lp;
    g.batch = int(count); g.sa = D; g.sd = R;
    return g;
  }
  // out_proj: y_b (L, D) row-major = column-major (D, L) = W_out · yg_b: the columns
  // t = n1·N2 + n2 (ldd N2·D) from yg_b's position-layout rows at n2·R (ldb Lp); the bias in
  // the epilogue.
  GemmArgs out_proj_args(std::int64_t b, std::int64_t n2, std::int64_t count, std::int64_t rows, const void* yg,
                         void* y) const {
    const std::size_t es = dtype_size(t);
    GemmArgs g;
    g.ta = true; g.tb = true; g.m = D; g.n = rows; g.k = D;
    g.A = w_out.data(); g.lda = D;
    g.B = static_cast<const char*>(yg) + (b * D * Lp + n2 * R) * es; g.ldb = Lp;
    g.D = static_cast<char*>(y) + (b * L + n2) * D * es; g.ldd = N2 * D;
    g.bias = b_out.data();
    g.batch = int(count); g.sb = R; g.sd = D;
    return g;
  }
  // Times cuBLASLt's candidate algorithms for both projections' batch shapes on arena scratch
  // (u from R1, zT into R0; yg from R1, y into R0: every region is large enough), flushing L2
  // through Ts (R0 past zT, untouched by either) before each call, and keeps the fastest
  // (gemm_tune_cuda). The heuristic's first choice for the short batches of small R was up to
  // 1.6× slower than one product (ncu at 4k, D = 1024).
  void tune_projections() {
    CUDA_CHECK(cudaMemsetAsync(arena.data(), 0, arena.size(), ctx.stream));
    const bool log = std::getenv("LONGMIX_LOG_GEMM_TUNE") != nullptr;
    char* flush = R0() + zt_bytes;
    const std::size_t flush_bytes = std::min<std::size_t>(off_r1 - zt_bytes, std::size_t(128) << 20);
    for_column_groups([&](std::int64_t n2, std::int64_t count, std::int64_t rows) {
      for (int which = 0; which < 2; ++which) {
        const GemmArgs g = which == 0 ? in_proj_args(0, n2, count, rows, R1(), R0())
                                      : out_proj_args(0, n2, count, rows, R1(), R0());
        const GemmTuning r = gemm_tune_cuda(t, g, ctx, flush, flush_bytes, 8, opt.gemm_enumerate);
        if (log)
          std::fprintf(stderr, "hyena-fused L=%lld D=%lld %s: %d batches of %lldx%lldx%lld: heuristic %.4f ms, "
                       "candidate %d of %d (+%d enumerated) %.4f ms (%s)\n", static_cast<long long>(L),
                       static_cast<long long>(D), which == 0 ? "in_proj" : "out_proj", g.batch,
                       static_cast<long long>(g.m), static_cast<long long>(g.n), static_cast<long long>(g.k),
                       r.heuristic_ms, r.chosen, r.candidates, r.enumerated, r.chosen_ms, r.chosen_config.c_str());
      }
    });
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
  m.N = hyena_fused_fft_size(L);
  hyena_fused_split(m.N, m.D, opt.split, &m.N1, &m.N2);
  m.R = static_cast<int>((L + m.N2 - 1) / m.N2);
  m.Lp = std::int64_t(m.N2) * m.R;
  m.ssz = opt.fp16_spectra ? 4 : 8;
  LONGMIX_REQUIRE(m.N2 % fused::col_width_of(m.N1) == 0, "hyena-fused: N2=", m.N2, " is not a multiple of the column width");
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
      const std::int64_t tt = fused::time_at(q, m.N2, m.R);
      if (tt < L) tp[static_cast<std::size_t>(q)] = w.pos_emb_t[static_cast<std::size_t>(tt)];
    }
    m.pt = upload_as(a, tp, DType::kF32, s);
  }
  m.deltas = upload_as(a, w.modulation_deltas, DType::kF32, s);
  m.w_last = upload_as(a, w.mlp_weight.back(), DType::kF16, s);
  {
    const int E = w.cfg.emb_dim, nmid = w.cfg.num_inner_mlps;
    m.Fs = (F + 7) / 8 * 8;
    // Rows and columns past F stay zero, so the padded activations are sin(0) = 0.
    std::vector<float> p32(static_cast<std::size_t>(packed32_floats(E, nmid)), 0.0f);
    std::vector<float> p16(static_cast<std::size_t>(nmid) * kFM * kWS, 0.0f);
    for (int fo = 0; fo < F; ++fo) {
      for (int e = 0; e < E; ++e) p32[fo * E + e] = w.mlp_weight[0][fo * E + e];
      p32[kFM * E + fo] = w.mlp_bias[0][fo];
      p32[kFM * E + kFM + fo] = w.freq[fo];
    }
    for (int l = 0; l < nmid; ++l) {
      const auto& W = w.mlp_weight[l + 1];  // (F out, F in), as B[k][n] = W[n][k] wants it
      for (int fo = 0; fo < F; ++fo) {
        for (int e = 0; e < F; ++e) p16[(static_cast<std::size_t>(l) * kFM + fo) * kWS + e] = W[fo * F + e];
        p32[kFM * E + 2 * kFM + l * kFM + fo] = w.mlp_bias[l + 1][fo];
      }
    }
    m.mlp32 = upload_as(a, p32, DType::kF32, s);
    m.mlp16 = upload_as(a, p16, DType::kF16, s);
    CUDA_CHECK(cudaFuncSetAttribute(filter_hidden_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(hidden_mma_smem(E, nmid))));
    int dev = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    // 16 time points a warp; at least two blocks an SM where there are tiles for them (at 4k, 256
    // tiles: one warp a block), at most 8 blocks an SM, each warp then looping over tiles.
    const std::int64_t tiles = (m.Lp + 15) / 16;
    m.warps_hidden = int(std::clamp<std::int64_t>(tiles / (2 * sms), 1, kMmaMaxWarps));
    m.blocks_hidden = int(std::min<std::int64_t>((tiles + m.warps_hidden - 1) / m.warps_hidden, std::int64_t(8) * sms));
  }
  LONGMIX_SIZE_SWITCH(m.N1, fused::prepare_size, );
  LONGMIX_SIZE_SWITCH(m.N2, fused::prepare_size, );
  using RowFft = HyenaFusedOptions::RowFft;
  LONGMIX_REQUIRE((opt.row_fft != RowFft::kTensor && opt.row_fft != RowFft::kTensorDirect) || m.N2 == 512,
                  "hyena-fused: tensor-core row FFTs need N2 = 512 (32k < L <= 128k), not N2=", m.N2, " at L=", L);
  m.row_tc = m.N2 == 512 && opt.row_fft != RowFft::kCufftdx;
  if (m.row_tc) fused::prepare_row_tc();
  using ColFft = HyenaFusedOptions::ColFft;
  LONGMIX_REQUIRE(opt.col_fft != ColFft::kTensor || m.N1 == 512,
                  "hyena-fused: tensor-core column FFTs need N1 = 512 (64k < L <= 256k), not N1=", m.N1, " at L=", L);
  m.col_tc = opt.col_fft == ColFft::kTensor;
  if (m.col_tc) {
    fused::prepare_col_tc(s);
    LONGMIX_REQUIRE(m.N2 % fused::col_tc_width() == 0, "hyena-fused: N2=", m.N2,
                    " is not a multiple of the tensor-core column width");
  }

  // The arena.
  const std::size_t es = dtype_size(t);
  const std::int64_t Lp = m.Lp;  // every time row is Lp long (the position layout)
  const std::size_t zt = align256(static_cast<std::size_t>(B * C * Lp) * es);
  const std::size_t ts = align256(static_cast<std::size_t>(B * (D / 2) * m.N) * m.ssz);
  const std::size_t act = align256(static_cast<std::size_t>(Lp * m.Fs) * 2);
  const std::size_t h = align256(static_cast<std::size_t>(m.Dh * Lp) * 2);
  const std::size_t tf = align256(static_cast<std::size_t>((m.Dh / 2) * m.N) * m.ssz);
  const std::size_t yg = align256(static_cast<std::size_t>(B * D * Lp) * es);
  const std::size_t prev = w.cfg.order > 2 ? align256(static_cast<std::size_t>(B * D * Lp) * 4) : 0;
  m.zt_bytes = zt;
  m.overlap = hyena_fused_overlaps(opt, L, cache_filter);
  if (m.overlap) {
    CUDA_CHECK(cudaStreamCreateWithFlags(&m.side, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&m.fork, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&m.join, cudaEventDisableTiming));
  }
  m.act_off = m.overlap ? zt + ts : 0;
  m.h_off = m.act_off + act;
  const std::size_t r0 = m.overlap ? zt + ts + act + h : std::max(cache_filter ? 0 : act + h, zt + ts);
  const std::size_t r1 = cache_filter ? yg : std::max(tf, yg);
  m.off_r1 = r0;
  m.off_r2 = r0 + r1;
  if (cache_filter) {
    m.tf_cached = Buffer<char>(a, tf);
    Buffer<char> act_b(a, act), h_b(a, h);
    m.filter_transform(m.tf_cached.data(), reinterpret_cast<__half*>(act_b.data()), reinterpret_cast<__half*>(h_b.data()));
    CUDA_CHECK(cudaStreamSynchronize(s));
  }
  m.arena = Buffer<char>(a, r0 + r1 + prev);
  if (opt.tune_gemm) m.tune_projections();
}

HyenaFusedPlan::~HyenaFusedPlan() = default;

namespace {

// The environment variable NAME as one of CHOICES (spelling, value) into *out; unset leaves *out
// as it is, any other spelling is an error naming the variable and every choice.
template <typename T>
void env_choice(const char* name, std::initializer_list<std::pair<const char*, T>> choices, T* out) {
  const char* env = std::getenv(name);
  if (!env) return;
  std::string known;
  for (const auto& [spelling, value] : choices) {
    if (std::string(spelling) == env) {
      *out = value;
      return;
    }
    known += (known.empty() ? "" : ", ") + std::string(spelling);
  }
  throw InvalidArgument(std::string("hyena-fused: ") + name + " must be one of " + known + ", not '" + env + "'");
}

}  // namespace

HyenaFusedOptions hyena_fused_options_from_env(HyenaFusedOptions opt) {
  using Split = HyenaFusedOptions::Split;
  using RowFft = HyenaFusedOptions::RowFft;
  using ColFft = HyenaFusedOptions::ColFft;
  env_choice<Split>("LONGMIX_FUSED_SPLIT", {{"tall", Split::kTall}, {"wide", Split::kWide}}, &opt.split);
  env_choice<RowFft>("LONGMIX_FUSED_ROW",
                     {{"cufftdx", RowFft::kCufftdx}, {"auto", RowFft::kAuto}, {"direct", RowFft::kTensorDirect}},
                     &opt.row_fft);
  env_choice<ColFft>("LONGMIX_FUSED_COL",
                     {{"cufftdx", ColFft::kCufftdx}, {"auto", ColFft::kAuto}, {"tensor", ColFft::kTensor}},
                     &opt.col_fft);
  int tune = opt.tune_gemm ? (opt.gemm_enumerate ? 2 : 1) : 0;
  env_choice<int>("LONGMIX_GEMM_TUNE", {{"0", 0}, {"1", 1}, {"enumerate", 2}}, &tune);
  opt.tune_gemm = tune > 0;
  opt.gemm_enumerate = tune == 2;
  using Overlap = HyenaFusedOptions::Overlap;
  env_choice<Overlap>("LONGMIX_FUSED_OVERLAP", {{"off", Overlap::kOff}, {"auto", Overlap::kAuto}, {"on", Overlap::kOn}},
                      &opt.overlap);
  using ColAccess = HyenaFusedOptions::ColAccess;
  auto access = [](const char* name, ColAccess* out) {  // both access switches, one spelling
    env_choice<ColAccess>(name, {{"auto", ColAccess::kAuto}, {"scalar", ColAccess::kScalar}, {"vec8", ColAccess::kVec8}},
                          out);
  };
  access("LONGMIX_FUSED_ACCESS", &opt.col_access);
  access("LONGMIX_FUSED_SIGNAL_ACCESS", &opt.signal_access);
  using RowPairs = HyenaFusedOptions::RowPairs;
  env_choice<RowPairs>("LONGMIX_FUSED_ROW_PAIRS",
                       {{"auto", RowPairs::kAuto}, {"1", RowPairs::kOne}, {"2", RowPairs::kTwo}, {"4", RowPairs::kFour}},
                       &opt.row_pairs);
  using Stage = HyenaFusedOptions::Stage;
  env_choice<Stage>("LONGMIX_FUSED_STAGE", {{"auto", Stage::kAuto}, {"off", Stage::kOff}, {"signal", Stage::kSignal}, {"on", Stage::kOn}},
                    &opt.stage);
  return opt;
}

void HyenaFusedPlan::forward(const void* u, void* y) { impl_->run(u, y, false); }
void HyenaFusedPlan::core(const void* z, void* yg) { impl_->run(z, yg, true); }

}  // namespace longmix
