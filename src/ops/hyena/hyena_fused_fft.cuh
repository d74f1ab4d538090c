// hyena-fused: the long convolution as a four-step FFT whose passes carry Hyena's pointwise
// work. Included only by the per-size translation units hyena_fused_n*.cu (cuFFTDx is slow to
// compile; one size per file builds in parallel).
//
// Per channel pair (a, b) the causal convolution runs as one complex FFT of size N = N1·N2 ≥ 2L
// (power of two) of x = v_a + i·v_b (zero padded); the two real spectra are separated in the
// frequency domain from Z[k] and Z[N−k] (and likewise the filter pair's), so no transform is
// wasted on zero imaginary parts and no real-FFT pre/post pass is needed.
//
//   pass A (columns, "col_fwd"): per column n2, X1[k1] = Σ_{n1} x[n1·N2 + n2]·W_{N1}^{n1·k1},
//       then the twiddle W_N^{n2·k1}. The source x is built in the prologue straight from the
//       projection output: short depthwise conv + gate (or the filter with its modulation).
//   pass B ("row"): per row pair (k1, N1−k1), the N2-point FFTs of signal and filter rows,
//       Y = H_a·A + i·H_b·B with the skip term added to H and 1/N folded in, inverse N2-point
//       FFTs, written back in place.
//   pass A⁻¹ ("col_inv"): twiddle W_N^{−n2·k1}, inverse N1-point column FFTs; the epilogue
//       multiplies by the x0 gate (short conv on the fly) and writes (B, D, L) channel-major.
//
// Intermediates between passes are stored as S (float2 or __half2); all arithmetic is fp32.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cufftdx.hpp>

#include <type_traits>

#include "ops/hyena/hyena_fused.h"
#include "ops/hyena/hyena_fused_cols.cuh"

namespace longmix::fused {

// Column FFTs of size N1, W columns per block (W neighbouring time points). Elements per
// thread: cuFFTDx's default below 512, 16 from 512 on (at 1024 its default 32 left one 8-column
// block of 32-thread FFTs: 14.1 ms at 512k against hyena-cuda's 13.2; at 512 16 instead of the
// default 8 makes 8 columns a block of 32-thread FFTs: 300/429/306 µs against 327/472/374 for
// the filter's pass A, the signal's and pass A⁻¹ at 128k, ncu).
template <int N1>
constexpr int col_ept() { return N1 >= 512 ? 16 : 0; }
template <int N1, cufftdx::fft_direction Dir>
using ColBase = std::conditional_t<
    (col_ept<N1>() > 0),
    decltype(cufftdx::Size<N1>() + cufftdx::Precision<float>() + cufftdx::Type<cufftdx::fft_type::c2c>() +
             cufftdx::Direction<Dir>() + cufftdx::SM<900>() + cufftdx::Block() +
             cufftdx::ElementsPerThread<(col_ept<N1>() > 0 ? col_ept<N1>() : 8)>()),
    decltype(cufftdx::Size<N1>() + cufftdx::Precision<float>() + cufftdx::Type<cufftdx::fft_type::c2c>() +
             cufftdx::Direction<Dir>() + cufftdx::SM<900>() + cufftdx::Block())>;
template <int N1, cufftdx::fft_direction Dir, int W>
using ColFftT = decltype(ColBase<N1, Dir>() + cufftdx::FFTsPerBlock<W>());
template <int N1>
struct ColCfg {
  using Probe = ColBase<N1, cufftdx::fft_direction::forward>;
  static constexpr int kThreadsPerFft = N1 / Probe::elements_per_thread;
  // 256 threads a block (v1 had up to 1024: one block per SM, load/FFT/store phases never
  // overlapped; 0.5 TB/s at 128k), at least 2 and at most 16 columns.
  static constexpr int kW = 256 / kThreadsPerFft;
  static constexpr int W = kW < 2 ? 2 : (kW > 16 ? 16 : kW);
  using Fwd = ColFftT<N1, cufftdx::fft_direction::forward, W>;
  using Inv = ColFftT<N1, cufftdx::fft_direction::inverse, W>;
  static_assert(Fwd::block_dim.x == Inv::block_dim.x && Fwd::block_dim.y == W, "column FFT layout");
  static constexpr int kThreads = Fwd::block_dim.x * W;
  static constexpr int kTileBytes = N1 * (W + 1) * 8;
  static constexpr int kSmem = kTileBytes > int(Fwd::shared_memory_size)
                                   ? (kTileBytes > int(Inv::shared_memory_size) ? kTileBytes : int(Inv::shared_memory_size))
                                   : (int(Fwd::shared_memory_size) > int(Inv::shared_memory_size)
                                          ? int(Fwd::shared_memory_size) : int(Inv::shared_memory_size));
};

// pass A. Grid (N2 / W, pairs). T: (pairs, N1, N2). Indices inside a pair are 32-bit
// (N ≤ 2^22); twiddles W^{n2·k1} for k1 = x + i·stride by recurrence from two sincospif.
template <int N1, typename S, bool kVec8, bool kStage = false>
__device__ __forceinline__ void col_fwd(const PassParams& P) {
  using Cfg = ColCfg<N1>;
  using FFT = typename Cfg::Fwd;
  using CT = typename FFT::value_type;
  constexpr int W = Cfg::W, TW = W + 1, nth = Cfg::kThreads;
  extern __shared__ __align__(16) unsigned char smem[];
  float2* tile = reinterpret_cast<float2*>(smem);  // [N1][W+1]
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  const int col0 = blockIdx.x * W, N = static_cast<int>(P.N);
  const long long p = blockIdx.y;
  long long b, c;
  pair_channels(P, p, &b, &c);
  fill_col_tile<N1, W, nth, kVec8, kStage>(P, b, c, col0, tid, tile);
  __syncthreads();
  CT td[FFT::storage_size];
  const int w = threadIdx.y;
#pragma unroll
  for (int i = 0; i < FFT::elements_per_thread; ++i) {
    const int n1 = threadIdx.x + i * FFT::stride;
    const float2 v = n1 < N1 / 2 ? tile[n1 * TW + w] : make_float2(0.0f, 0.0f);
    td[i] = CT{v.x, v.y};
  }
  __syncthreads();  // the FFT's shared memory aliases the tile
  FFT().execute(td, smem);
  __syncthreads();
  const int n2 = col0 + w;
  float2 tw = twiddle((n2 * int(threadIdx.x)) & (N - 1), N, -1.0f);
  const float2 step = twiddle((n2 * int(FFT::stride)) & (N - 1), N, -1.0f);
#pragma unroll
  for (int i = 0; i < FFT::elements_per_thread; ++i) {
    const int k1 = threadIdx.x + i * FFT::stride;
    tile[k1 * TW + w] = cmul(make_float2(td[i].x, td[i].y), tw);
    tw = cmul(tw, step);
  }
  __syncthreads();
  store_col_tile<N1, W, nth, S>(P, p, col0, tid, tile);
}

// pass A⁻¹. Grid (N2 / W, signal pairs).
template <int N1, typename S, bool kVec8, bool kStage = false>
__device__ __forceinline__ void col_inv(const PassParams& P) {
  using Cfg = ColCfg<N1>;
  using FFT = typename Cfg::Inv;
  using CT = typename FFT::value_type;
  constexpr int W = Cfg::W, TW = W + 1, nth = Cfg::kThreads;
  extern __shared__ __align__(16) unsigned char smem[];
  float2* tile = reinterpret_cast<float2*>(smem);
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  const int col0 = blockIdx.x * W, N = static_cast<int>(P.N);
  const long long p = blockIdx.y;
  const long long b = p / P.half_D, c = 2 * (p % P.half_D);
  load_col_tile<N1, W, nth, S>(P, p, col0, tid, tile);
  __syncthreads();
  CT td[FFT::storage_size];
  const int w = threadIdx.y, n2 = col0 + w;
  float2 tw = twiddle((n2 * int(threadIdx.x)) & (N - 1), N, 1.0f);
  const float2 step = twiddle((n2 * int(FFT::stride)) & (N - 1), N, 1.0f);
#pragma unroll
  for (int i = 0; i < FFT::elements_per_thread; ++i) {
    const int k1 = threadIdx.x + i * FFT::stride;
    const float2 v = cmul(tile[k1 * TW + w], tw);
    tw = cmul(tw, step);
    td[i] = CT{v.x, v.y};
  }
  __syncthreads();
  FFT().execute(td, smem);
  __syncthreads();
  // v21: the x0 rows copied into the tile's upper rows while the lower ones are written
  const unsigned short* st = nullptr;
  if constexpr (kStage) st = stage_x0<N1, W, nth>(P, b, c, col0, tid, tile);
#pragma unroll
  for (int i = 0; i < FFT::elements_per_thread; ++i) {
    const int n1 = threadIdx.x + i * FFT::stride;
    if (n1 < N1 / 2) tile[n1 * TW + w] = make_float2(td[i].x, td[i].y);
  }
  if constexpr (kStage)
    if (st) __pipeline_wait_prior(0);
  __syncthreads();
  col_epilogue<N1, W, nth, kVec8, kStage>(P, b, c, col0, tid, tile, st);
}

// The kernels: the scalar accesses (v13's code), and the 8-row ones (P.vec8) bounded to
// vec8_min_blocks<N1>() blocks an SM: 5 is the scalar kernels' occupancy (48 registers, 20-160
// bytes of spills at N1 = 512); 4 allows 64 registers; unbounded (1) they take 88-95, 2 blocks an
// SM. Measured on the H100 (bench/NOTES.md v14): 5 fastest at N1 = 512 (128k: 1.08 ms against
// 1.11 with 4), 4 at N1 = 1024 (1M, D = 256: 9.93-9.96 ms against 10.55-10.57 with 5), so N1 =
// 1024 takes LONGMIX_FUSED_VEC8_MIN_BLOCKS_N1024 (v15), every other size
// LONGMIX_FUSED_VEC8_MIN_BLOCKS (either macro set at build time for the A/B variants).
#ifndef LONGMIX_FUSED_VEC8_MIN_BLOCKS
#define LONGMIX_FUSED_VEC8_MIN_BLOCKS 5
#endif
#ifndef LONGMIX_FUSED_VEC8_MIN_BLOCKS_N1024
#define LONGMIX_FUSED_VEC8_MIN_BLOCKS_N1024 4
#endif
template <int N1>
constexpr int vec8_min_blocks() {
  return N1 == 1024 ? LONGMIX_FUSED_VEC8_MIN_BLOCKS_N1024 : LONGMIX_FUSED_VEC8_MIN_BLOCKS;
}
template <int N1, typename S>
__global__ void __launch_bounds__(ColCfg<N1>::kThreads) col_fwd_kernel(PassParams P) { col_fwd<N1, S, false>(P); }
template <int N1, typename S>
__global__ void __launch_bounds__(ColCfg<N1>::kThreads) col_inv_kernel(PassParams P) { col_inv<N1, S, false>(P); }
template <int N1, typename S>
__global__ void __launch_bounds__(ColCfg<N1>::kThreads, vec8_min_blocks<N1>()) col_fwd_vec8_kernel(PassParams P) { col_fwd<N1, S, true>(P); }
template <int N1, typename S>
__global__ void __launch_bounds__(ColCfg<N1>::kThreads, vec8_min_blocks<N1>()) col_inv_vec8_kernel(PassParams P) { col_inv<N1, S, true>(P); }
// v21: the same four with the time rows staged (PassParams::stage), fp16 spectra only: own
// instantiations, so the kernels above compile none of the staging (their registers and stack
// are v20's).
// The scalar ones bounded like the 8-row ones (vec8_min_blocks): unbounded they took 63-64
// registers at N1 = 512, four blocks an SM instead of the scalar kernels' five (48).
template <int N1>
__global__ void __launch_bounds__(ColCfg<N1>::kThreads, vec8_min_blocks<N1>()) col_fwd_stage_kernel(PassParams P) { col_fwd<N1, __half2, false, true>(P); }
template <int N1>
__global__ void __launch_bounds__(ColCfg<N1>::kThreads, vec8_min_blocks<N1>()) col_inv_stage_kernel(PassParams P) { col_inv<N1, __half2, false, true>(P); }
template <int N1>
__global__ void __launch_bounds__(ColCfg<N1>::kThreads, vec8_min_blocks<N1>()) col_fwd_vec8_stage_kernel(PassParams P) { col_fwd<N1, __half2, true, true>(P); }
template <int N1>
__global__ void __launch_bounds__(ColCfg<N1>::kThreads, vec8_min_blocks<N1>()) col_inv_vec8_stage_kernel(PassParams P) { col_inv<N1, __half2, true, true>(P); }

// Row FFTs of size N2, the two rows (k1, N1−k1) of kPairs row pairs per block (v18: 2 or 4 pairs
// where N2 ≤ 256, whose one-pair blocks hold 16-64 threads: an SM's 32-block limit then leaves
// it at 25-100% of its threads; `HyenaFusedOptions::row_pairs`).
// cuFFTDx's default elements per thread (16 at N2 = 512 measured slower: 423 µs against 391 at
// 128k, two 32-thread FFTs a block, 31% occupancy by shared memory).
template <int N2, cufftdx::fft_direction Dir, int kFfts>
using RowFftT = decltype(cufftdx::Size<N2>() + cufftdx::Precision<float>() +
                         cufftdx::Type<cufftdx::fft_type::c2c>() + cufftdx::Direction<Dir>() +
                         cufftdx::FFTsPerBlock<kFfts>() + cufftdx::SM<900>() + cufftdx::Block());
template <int N2, int kPairs = 1>
struct RowCfg {
  using Fwd = RowFftT<N2, cufftdx::fft_direction::forward, 2 * kPairs>;
  using Inv = RowFftT<N2, cufftdx::fft_direction::inverse, 2 * kPairs>;
  static_assert(Fwd::block_dim.x == Inv::block_dim.x && Fwd::block_dim.y == 2 * kPairs, "row FFT layout");
  static constexpr int kThreads = Fwd::block_dim.x * 2 * kPairs;
  static constexpr int kFftSmem = ((int(Fwd::shared_memory_size) > int(Inv::shared_memory_size)
                                        ? int(Fwd::shared_memory_size) : int(Inv::shared_memory_size)) + 15) / 16 * 16;
  static constexpr int kSmem = kFftSmem + 4 * kPairs * N2 * 8;  // + Z rows and H rows (2 a pair each)
};

// pass B. Grid (N1 / 2 / kPairs, signal pairs). T: (pairs, N1, N2) in place; Tf: (Dh/2, N1, N2).
// FFT j of a block (threadIdx.y) is row s = j % 2 of its pair j / 2.
template <int N2, typename S, int kPairs>
__global__ void __launch_bounds__(RowCfg<N2, kPairs>::kThreads) row_kernel(PassParams P) {
  using Cfg = RowCfg<N2, kPairs>;
  using FFT = typename Cfg::Fwd;
  using IFFT = typename Cfg::Inv;
  using CT = typename FFT::value_type;
  extern __shared__ __align__(16) unsigned char smem[];
  const int q = threadIdx.y / 2;  // this row's pair within the block
  float2* Zs = reinterpret_cast<float2*>(smem + Cfg::kFftSmem) + 2 * q * N2;  // [2][N2] of this pair
  float2* Hs = reinterpret_cast<float2*>(smem + Cfg::kFftSmem) + 2 * (kPairs + q) * N2;  // [2][N2]
  const long long N1 = P.N1, r = static_cast<long long>(blockIdx.x) * kPairs + q, p = blockIdx.y;
  const int s = threadIdx.y % 2;
  const long long row = r == 0 ? (s == 0 ? 0 : N1 / 2) : (s == 0 ? r : N1 - r);
  const long long cp = p % P.half_D, pf = P.o * P.half_D + cp;
  const S* Tf = static_cast<const S*>(P.Tf) + (pf * N1 + row) * N2;
  S* T = static_cast<S*>(P.T) + (p * N1 + row) * N2;
  CT td[FFT::storage_size];
  float2 sig[FFT::elements_per_thread];  // the signal rows, loaded with the filter rows
#pragma unroll
  for (int i = 0; i < FFT::elements_per_thread; ++i) {
    const float2 v = load_c(Tf, threadIdx.x + i * FFT::stride);
    sig[i] = load_c(T, threadIdx.x + i * FFT::stride);
    td[i] = CT{v.x, v.y};
  }
  FFT().execute(td, smem);
  // Each thread keeps its own H and Z values in registers (sig holds H from here on); only the
  // mirrored partners N − k go through shared memory.
#pragma unroll
  for (int i = 0; i < FFT::elements_per_thread; ++i) {
    const float2 hv = make_float2(td[i].x, td[i].y);
    Hs[s * N2 + threadIdx.x + i * FFT::stride] = hv;
    td[i] = CT{sig[i].x, sig[i].y};
    sig[i] = hv;
  }
  __syncthreads();
  FFT().execute(td, smem);
#pragma unroll
  for (int i = 0; i < FFT::elements_per_thread; ++i)
    Zs[s * N2 + threadIdx.x + i * FFT::stride] = make_float2(td[i].x, td[i].y);
  __syncthreads();
  const long long fc = P.o * P.D + 2 * cp;
  const pair::PairSkip sk = pair::pair_skip(P.skip[fc], P.skip[fc + 1], P.inv_n);
#pragma unroll
  for (int i = 0; i < FFT::elements_per_thread; ++i) {
    const int k2 = threadIdx.x + i * FFT::stride;
    const pair::Mirror m = pair::mirror_of(r, s, k2, N2);  // N − k
    const float2 z = make_float2(td[i].x, td[i].y), zp = Zs[m.ps * N2 + m.pk];  // Z[k], Z[N−k]
    const float2 hp = Hs[m.ps * N2 + m.pk];
    const float2 w = pair::pair_filter(sig[i], hp, sk).at_k(z, zp);
    td[i] = CT{w.x, w.y};
  }
  __syncthreads();
  IFFT().execute(td, smem);
#pragma unroll
  for (int i = 0; i < FFT::elements_per_thread; ++i)
    store_c(T, threadIdx.x + i * FFT::stride, make_float2(td[i].x, td[i].y));
}

// Row sizes with the 2- and 4-pair kernels (their one-pair blocks are 16-64 threads): the same
// bound as hyena_fused_row_pairs.
template <int N2>
constexpr bool row_multi_pairs() {
  return N2 <= HyenaFusedOptions::kRowPairsMaxN2;
}
template <int N2, int kPairs>
void launch_row_pairs(bool half, const PassParams& P, long long pairs, cudaStream_t s) {
  using Cfg = RowCfg<N2, kPairs>;
  const dim3 grid(unsigned(P.N1 / 2 / kPairs), unsigned(pairs));
  const dim3 block(Cfg::Fwd::block_dim.x, 2 * kPairs);
  if (half) row_kernel<N2, __half2, kPairs><<<grid, block, Cfg::kSmem, s>>>(P);
  else row_kernel<N2, float2, kPairs><<<grid, block, Cfg::kSmem, s>>>(P);
  CUDA_CHECK_LAUNCH();
}
// The multi-pair choices live in templates so that `if constexpr` discards them where N2 is past
// kRowPairsMaxN2: in the launchers' explicit specializations (not templates) a discarded branch
// would still name row_kernel<N2, S, 2 / 4> (nvcc warning 20280: no definition in the unit).
template <int N2>
void prepare_rows() {
  const auto a = cudaFuncAttributeMaxDynamicSharedMemorySize;
  CUDA_CHECK(cudaFuncSetAttribute(row_kernel<N2, __half2, 1>, a, RowCfg<N2>::kSmem));
  CUDA_CHECK(cudaFuncSetAttribute(row_kernel<N2, float2, 1>, a, RowCfg<N2>::kSmem));
  if constexpr (row_multi_pairs<N2>()) {
    CUDA_CHECK(cudaFuncSetAttribute(row_kernel<N2, __half2, 2>, a, RowCfg<N2, 2>::kSmem));
    CUDA_CHECK(cudaFuncSetAttribute(row_kernel<N2, float2, 2>, a, RowCfg<N2, 2>::kSmem));
    CUDA_CHECK(cudaFuncSetAttribute(row_kernel<N2, __half2, 4>, a, RowCfg<N2, 4>::kSmem));
    CUDA_CHECK(cudaFuncSetAttribute(row_kernel<N2, float2, 4>, a, RowCfg<N2, 4>::kSmem));
  }
}
template <int N2>
void launch_rows(bool half, int row_pairs, const PassParams& P, long long pairs, cudaStream_t s) {
  if constexpr (row_multi_pairs<N2>()) {
    if (row_pairs == 2) return launch_row_pairs<N2, 2>(half, P, pairs, s);
    if (row_pairs == 4) return launch_row_pairs<N2, 4>(half, P, pairs, s);
  }
  launch_row_pairs<N2, 1>(half, P, pairs, s);
}

#define LONGMIX_FUSED_LAUNCHERS(SIZE)                                                                 \
  template <>                                                                                          \
  void prepare_size<SIZE>() {                                                                          \
    using CC = ColCfg<SIZE>;                                                                           \
    const auto a = cudaFuncAttributeMaxDynamicSharedMemorySize;                                        \
    CUDA_CHECK(cudaFuncSetAttribute(col_fwd_kernel<SIZE, __half2>, a, CC::kSmem));                     \
    CUDA_CHECK(cudaFuncSetAttribute(col_fwd_kernel<SIZE, float2>, a, CC::kSmem));                      \
    CUDA_CHECK(cudaFuncSetAttribute(col_inv_kernel<SIZE, __half2>, a, CC::kSmem));                     \
    CUDA_CHECK(cudaFuncSetAttribute(col_inv_kernel<SIZE, float2>, a, CC::kSmem));                      \
    CUDA_CHECK(cudaFuncSetAttribute(col_fwd_vec8_kernel<SIZE, __half2>, a, CC::kSmem));                \
    CUDA_CHECK(cudaFuncSetAttribute(col_fwd_vec8_kernel<SIZE, float2>, a, CC::kSmem));                 \
    CUDA_CHECK(cudaFuncSetAttribute(col_inv_vec8_kernel<SIZE, __half2>, a, CC::kSmem));                \
    CUDA_CHECK(cudaFuncSetAttribute(col_inv_vec8_kernel<SIZE, float2>, a, CC::kSmem));                 \
    CUDA_CHECK(cudaFuncSetAttribute(col_fwd_stage_kernel<SIZE>, a, CC::kSmem));                        \
    CUDA_CHECK(cudaFuncSetAttribute(col_inv_stage_kernel<SIZE>, a, CC::kSmem));                        \
    CUDA_CHECK(cudaFuncSetAttribute(col_fwd_vec8_stage_kernel<SIZE>, a, CC::kSmem));                   \
    CUDA_CHECK(cudaFuncSetAttribute(col_inv_vec8_stage_kernel<SIZE>, a, CC::kSmem));                   \
    prepare_rows<SIZE>();                                                                              \
  }                                                                                                    \
  template <>                                                                                          \
  int col_width<SIZE>() { return ColCfg<SIZE>::W; }                                                    \
  template <>                                                                                          \
  void launch_col<SIZE>(bool fwd, bool half, const PassParams& P, long long pairs, cudaStream_t s) {  \
    using Cfg = ColCfg<SIZE>;                                                                          \
    const dim3 grid(unsigned(P.N2 / Cfg::W), unsigned(pairs));                                         \
    const dim3 block(Cfg::Fwd::block_dim.x, Cfg::W);                                                   \
    const int k = (fwd ? 0 : 2) + (half ? 0 : 1) + (P.vec8 ? 4 : 0);                                   \
    void (*const kernels[8])(PassParams) = {                                                           \
        col_fwd_kernel<SIZE, __half2>,      col_fwd_kernel<SIZE, float2>,                              \
        col_inv_kernel<SIZE, __half2>,      col_inv_kernel<SIZE, float2>,                              \
        col_fwd_vec8_kernel<SIZE, __half2>, col_fwd_vec8_kernel<SIZE, float2>,                         \
        col_inv_vec8_kernel<SIZE, __half2>, col_inv_vec8_kernel<SIZE, float2>};                        \
    /* v21: the staged kernels (fp16 spectra; the plan sets P.stage only with them) */                \
    void (*const staged[4])(PassParams) = {col_fwd_stage_kernel<SIZE>, col_inv_stage_kernel<SIZE>,     \
                                           col_fwd_vec8_stage_kernel<SIZE>, col_inv_vec8_stage_kernel<SIZE>}; \
    const auto kernel = P.stage && half ? staged[(fwd ? 0 : 1) + (P.vec8 ? 2 : 0)] : kernels[k];        \
    kernel<<<grid, block, Cfg::kSmem, s>>>(P);                                                         \
    CUDA_CHECK_LAUNCH();                                                                               \
  }                                                                                                    \
  template <>                                                                                          \
  void launch_row<SIZE>(bool half, int row_pairs, const PassParams& P, long long pairs, cudaStream_t s) { \
    launch_rows<SIZE>(half, row_pairs, P, pairs, s);                                                   \
  }

}  // namespace longmix::fused
