// hyena-fused's column passes on tensor cores, N1 = 512 (N = 2^18 and 2^19: 64k < L ≤ 256k).
//
// The same passes as col_fwd_kernel and col_inv_kernel (hyena_fused_fft.cuh), with the same tile
// of W neighbouring columns in shared memory, the same prologue (the source built from the
// projection output) and epilogue (the x0 gate) from hyena_fused_cols.cuh; only the 512-point
// column transforms differ: 16 × 32 Monarch DFTs on mma.sync (monarch512.cuh), one warp a
// column, read from and written back to the tile, instead of cuFFTDx's radix FFTs on CUDA cores.
//
//   pass A    x[n1] (n1 < 256; the upper half is the zero padding, its B fragments are zero) →
//             X[k] in fragment slots → · W_N^{n2·k} → tile row k
//   pass A⁻¹  tile row k · W_N^{−n2·k} → slots → inverse DFT → x[n1], rows n1 < 256 kept
//
// The per-column twiddles W_N^{±n2·k} come from __sincosf on the exactly reduced and centred
// argument (|error| ~1e-6 on [−π, π], far below the fp16 operands' 2^-11).
//
// Precision: as pass B on tensor cores (hyena_fused_row_tc.cu), the inputs and the step-1
// outputs are rounded to fp16; the GPU tests bound the layer's error against hyena-cuda.
//
// Not the default (HyenaFusedOptions::ColFft::kTensor, LONGMIX_FUSED_COL=tensor): measured on the
// H200 at 128k, D = 256, the forward takes 1.57 ms against 1.04 with cuFFTDx's columns (ncu: the
// signal's pass A 681 µs against 306, pass A⁻¹ 414 against 281, the filter's pass A 283 against
// 253). The registers of the transform (128 a thread, four blocks of four warps an SM) leave too
// few warps for the prologue's and epilogue's short-conv gathers, whose latency the cuFFTDx
// passes hide with more warps; bench/NOTES.md v12.
#include <cuda_fp16.h>

#include "common/cuda_check.h"
#include "ops/hyena/hyena_fused_cols.cuh"
#include "ops/hyena/hyena_fused_params.h"
#include "ops/hyena/monarch512.cuh"

namespace longmix::fused {
namespace {

using namespace m512;

constexpr int kN1 = 512;
constexpr int kW = 8;  // columns a block
constexpr int kWarps = 4;  // two columns a warp
constexpr int kThreads = 32 * kWarps;
constexpr int kMinBlocks = 4;  // blocks an SM: 128 registers a thread (44 bytes spilled; at 3,
                               // 166 registers: 1.83 against 1.57 ms at 128k, D = 256)
constexpr int kTW = kW + 1;
constexpr int kSmem = kN1 * kTW * 8;  // the tile, 36 KB

// The DFT constants of every lane (monarch512.cuh), built once by prepare_col_tc.
__device__ unsigned g_dft[kDftWords * 32];
__global__ void build_dft_kernel() { store_dft(make_dft(threadIdx.x), g_dft, threadIdx.x); }

// exp(i·scale·m) for m = n2·k mod N (N a power of two), the argument centred on [−π, π): the
// fast __sincosf here, unlike pair::twiddle's exact sincospif, because each of a column's 16
// slots a lane needs its own (no recurrence across a lane's fragment slots); the centred
// argument keeps its error near 1e-6.
__device__ __forceinline__ float2 col_twiddle(int m, int N, float scale) {
  m &= N - 1;
  if (m >= N / 2) m -= N;
  float s, c;
  __sincosf(float(m) * scale, &s, &c);
  return make_float2(c, s);
}

// pass A. Grid (N2 / W, pairs); T: (pairs, 512, N2).
template <typename S, bool kVec8>
__global__ void __launch_bounds__(kThreads, kMinBlocks) col_tc_fwd_kernel(PassParams P) {
  extern __shared__ __align__(16) unsigned char smem[];
  float2* tile = reinterpret_cast<float2*>(smem);  // [512][W + 1]
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, q = lane & 3;
  const int col0 = int(blockIdx.x) * kW, N = static_cast<int>(P.N);
  const long long p = blockIdx.y;
  long long b, c;
  pair_channels(P, p, &b, &c);
  fill_col_tile<kN1, kW, kThreads, kVec8>(P, b, c, col0, tid, tile);
  __syncthreads();
  // The DFT constants (72 registers) only after the fill: loaded before it, they left the fill
  // too few registers to keep its loads in flight.
  const Dft d = load_dft(g_dft, lane);
  const float scale = -6.283185307179586f / float(N);
#pragma unroll 1
  for (int w = warp; w < kW; w += kWarps) {
    // B fragments of x[32a + b], b = 8j + g: a = 2q + {0, 1} (register 0), a + 8 ≥ 8 (register
    // 1) is n1 ≥ 256, the zero padding.
    unsigned xr[4][2], xi[4][2];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 v0 = tile[(64 * q + 8 * j + g) * kTW + w], v1 = tile[(64 * q + 32 + 8 * j + g) * kTW + w];
      xr[j][0] = pack_half2(v0.x, v1.x);
      xi[j][0] = pack_half2(v0.y, v1.y);
      xr[j][1] = xi[j][1] = 0u;
    }
    float Xr[4][4], Xi[4][4];
    fwd_dft(d, xr, xi, Xr, Xi);
    __syncwarp();  // every lane's reads of column w are done (the mma are warp-wide anyway)
    const int n2 = col0 + w;
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int cc = 0; cc < 4; ++cc) {
        const int k = slot_k(g, q, j, cc);
        tile[k * kTW + w] = cmul(make_float2(Xr[j][cc], Xi[j][cc]), col_twiddle(n2 * k, N, scale));
      }
  }
  __syncthreads();
  store_col_tile<kN1, kW, kThreads, S>(P, p, col0, tid, tile);
}

// pass A⁻¹. Grid (N2 / W, signal pairs).
template <typename S, bool kVec8>
__global__ void __launch_bounds__(kThreads, kMinBlocks) col_tc_inv_kernel(PassParams P) {
  extern __shared__ __align__(16) unsigned char smem[];
  float2* tile = reinterpret_cast<float2*>(smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, q = lane & 3;
  const int col0 = int(blockIdx.x) * kW, N = static_cast<int>(P.N);
  const long long p = blockIdx.y;
  const long long b = p / P.half_D, c = 2 * (p % P.half_D);
  load_col_tile<kN1, kW, kThreads, S>(P, p, col0, tid, tile);
  __syncthreads();
  const Dft d = load_dft(g_dft, lane);  // after the loads, as in pass A
  const float scale = 6.283185307179586f / float(N);
#pragma unroll 1
  for (int w = warp; w < kW; w += kWarps) {
    const int n2 = col0 + w;
    float yr[4][4], yi[4][4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int cc = 0; cc < 4; ++cc) {
        const int k = slot_k(g, q, j, cc);
        const float2 v = cmul(tile[k * kTW + w], col_twiddle(n2 * k, N, scale));
        yr[j][cc] = v.x;
        yi[j][cc] = v.y;
      }
    float xr[4][4], xi[4][4];
    inv_dft(d, yr, yi, xr, xi);
    __syncwarp();
    // x[32a + b] at a = g + 8h, b = 8j + 2q + e: the kept rows n1 < 256 are h = 0.
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) tile[(32 * g + 8 * j + 2 * q + e) * kTW + w] = make_float2(xr[j][e], xi[j][e]);
  }
  __syncthreads();
  col_epilogue<kN1, kW, kThreads, kVec8>(P, b, c, col0, tid, tile);
}

}  // namespace

void prepare_col_tc(cudaStream_t s) {
  const auto a = cudaFuncAttributeMaxDynamicSharedMemorySize;
  for (auto* k : {col_tc_fwd_kernel<__half2, false>, col_tc_fwd_kernel<float2, false>, col_tc_inv_kernel<__half2, false>,
                  col_tc_inv_kernel<float2, false>, col_tc_fwd_kernel<__half2, true>, col_tc_fwd_kernel<float2, true>,
                  col_tc_inv_kernel<__half2, true>, col_tc_inv_kernel<float2, true>})
    CUDA_CHECK(cudaFuncSetAttribute(k, a, kSmem));
  // Ordered before the plan's launches on s; every plan writes the same values.
  build_dft_kernel<<<1, 32, 0, s>>>();
  CUDA_CHECK_LAUNCH();
}

int col_tc_width() { return kW; }

void launch_col_tc(bool fwd, bool half, const PassParams& P, long long pairs, cudaStream_t s) {
  const dim3 grid(unsigned(P.N2 / kW), unsigned(pairs));
  void (*const kernels[8])(PassParams) = {
      col_tc_fwd_kernel<__half2, false>, col_tc_fwd_kernel<float2, false>, col_tc_inv_kernel<__half2, false>,
      col_tc_inv_kernel<float2, false>,  col_tc_fwd_kernel<__half2, true>, col_tc_fwd_kernel<float2, true>,
      col_tc_inv_kernel<__half2, true>,  col_tc_inv_kernel<float2, true>};
  kernels[(fwd ? 0 : 2) + (half ? 0 : 1) + (P.vec8 ? 4 : 0)]<<<grid, kThreads, kSmem, s>>>(P);
  CUDA_CHECK_LAUNCH();
}

}  // namespace longmix::fused
