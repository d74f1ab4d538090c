// What the hyena-fused FFT passes read and write (see hyena_fused_fft.cuh). Plain data, filled
// by the plan in hyena_fused.cu and passed by value to every kernel.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace longmix::fused {

enum SrcMode : int {
  kSrcConvProduct = 0,    // x = sconv(g_a) · sconv(g_b)            (order step 0: v ⊙ x_{N-1})
  kSrcPrevTimesConv = 1,  // x = prev · sconv(g_b)                  (order steps ≥ 1)
  kSrcFilter = 2,         // x = h · (exp(−t·|δ|) + shift)           (the implicit filter)
};
enum DstMode : int {
  kDstFinal = 0,  // out (B, D, Lp) storage dtype = y ⊙ sconv(x0)
  kDstPrev = 1,   // out (B, D, Lp) fp32 = y (input of the next order step)
};

struct PassParams {
  long long L = 0, N = 0, D = 0, C = 0;  // N = N1·N2 ≥ 2L, the FFT size
  int N1 = 0, N2 = 0, K = 3;             // K: short filter length
  // Time rows (zT, prev, out, h, tgrid) are stored in the position layout: time t = n1·N2 + n2 at
  // n2·R + n1, R = ⌈L / N2⌉ rows a column, Lp = N2·R ≥ L values a row (hyena_fused_fft.cuh).
  int R = 0;
  long long Lp = 0;
  // The column passes' 8-row kernels (hyena_fused_cols.cuh): R % 8 == 0 and chosen by the plan
  // (HyenaFusedOptions::col_access).
  bool vec8 = false;
  // v21: the column passes stage a block's time rows in shared memory (hyena_fused_cols.cuh:
  // stage_signal, stage_x0, stage_filter) — the signal's pass A and the final pass A⁻¹ where
  // hyena_fused_stages holds, the filter's pass A where hyena_fused_stages_filter does; set by
  // the plan, which also checks the rows' 16-byte alignment.
  bool stage = false;
  long long half_D = 0;                  // channel pairs per batch element
  bool bf16 = false;                     // storage dtype of zT and the final output
  const void* zT = nullptr;              // (B, C, Lp) in_proj output without its bias
  const float* b_in = nullptr;           // (C) in_proj bias, or null when zT includes it
  const float* sw = nullptr;             // (C, K) short_filter.weight
  const float* sb = nullptr;             // (C) short_filter.bias
  const float* prev = nullptr;           // (B, D, Lp) fp32
  const __half* h = nullptr;             // (Dh, Lp) fp16 filter before modulation
  const float* tgrid = nullptr;          // (Lp) filter_fn.pos_emb.t in the position layout
  const float* deltas = nullptr;         // (Dh) filter_fn.modulation.deltas
  float shift = 0.0f;
  const float* skip = nullptr;           // (Dh) filter_fn.bias
  int g_a = 0, g_b = 0, o = 0, src = 0, dst = 0;
  void* T = nullptr;                     // (pairs, N1, N2) float2 or __half2
  const void* Tf = nullptr;              // (Dh/2, N1, N2) filter pass-A output
  void* out = nullptr;                   // (B, out_rows, Lp): rows past D are not written
  long long out_rows = 0;
  float inv_n = 1.0f;
};

// The position layout, both directions (N2 a power of two, R = ⌈L / N2⌉): time t = n1·N2 + n2 is
// stored at position n2·R + n1. The column passes use Pos (hyena_fused_fft.cuh), pos_at with
// 32-bit shifts.
__host__ __device__ __forceinline__ long long time_at(long long q, int N2, int R) { return (q % R) * N2 + q / R; }
__host__ __device__ __forceinline__ long long pos_at(long long t, int N2, int R) { return (t % N2) * R + t / N2; }

// The column passes' 8-row tasks (hyena_fused_cols.cuh, P.vec8): task = w + W·g covers rows
// n1 = 8g … 8g + 7 of column n2 = col0 + w (w fastest across a warp), i.e. times t0 + i·N2,
// stored from position p = n2·R + n1 on (one 16-byte run where R % 8 == 0); at n2 ≥ 2 the short
// conv's taps t − 1, t − 2 are the same rows at p − R, p − 2R.
struct Vec8Task {
  int w, n1, n2, t0, p;
};
__host__ __device__ __forceinline__ Vec8Task vec8_task(int task, int W, int col0, int N2, int R) {
  Vec8Task k;
  k.w = task % W;
  k.n1 = 8 * (task / W);
  k.n2 = col0 + k.w;
  k.t0 = k.n1 * N2 + k.n2;
  k.p = k.n2 * R + k.n1;
  return k;
}

// v21's staging (PassParams::stage, hyena_fused_cols.cuh), host and device: a column block of W
// columns col0 … stages, per short-conv row, the positions [stage_first, stage_first +
// stage_span) — its columns and the two before them (the K = 3 taps; col0 ≥ 2) — and, for the
// filter, its own columns of h and the time grid. What each needs in shared memory, against the
// tile of [N1][W + 1] float2 it lives in (the signal's in the whole tile, pass A⁻¹'s x0 rows
// and the filter's rows in its rows n1 ≥ N1/2); tested on the host for every size.
__host__ __device__ __forceinline__ int stage_first(int col0, int R) { return (col0 - 2) * R; }
__host__ __device__ __forceinline__ int stage_span(int W, int R) { return (W + 2) * R; }
__host__ __device__ __forceinline__ long long col_tile_bytes(int N1, int W) { return 8LL * N1 * (W + 1); }
__host__ __device__ __forceinline__ long long stage_signal_bytes(int W, int R) { return 4LL * stage_span(W, R) * 2; }
__host__ __device__ __forceinline__ long long stage_x0_bytes(int W, int R) { return 2LL * stage_span(W, R) * 2; }
__host__ __device__ __forceinline__ long long stage_filter_bytes(int W, int R) { return 2LL * W * R * 2 + 1LL * W * R * 4; }

// Launchers, one translation unit per size (hyena_fused_n<size>.cu). prepare_size sets the
// kernels' shared-memory limits (once, outside any graph capture); col_width is W, the columns
// of one pass-A block (N2 must be a multiple of it).
template <int Size>
void prepare_size();
template <int Size>
int col_width();
// col_width<N1>() for a size known at run time (64 … 2048; any other is an error).
int col_width_of(int n1);
template <int N1>
void launch_col(bool fwd, bool half, const PassParams& P, long long pairs, cudaStream_t s);
// row_pairs: row pairs a block (1, or 2 and 4 where N2 ≤ 256; anything else runs 1).
template <int N2>
void launch_row(bool half, int row_pairs, const PassParams& P, long long pairs, cudaStream_t s);

// pass B on tensor cores for N2 = 512 (hyena_fused_row_tc.cu): prepare once at plan time.
void prepare_row_tc();
void launch_row_tc(bool half, bool staged, const PassParams& P, long long pairs, cudaStream_t s);
// passes A and A⁻¹ on tensor cores for N1 = 512 (hyena_fused_col_tc.cu), W = col_tc_width()
// columns a block: prepare once at plan time, on the plan's stream (it builds the DFT table).
void prepare_col_tc(cudaStream_t s);
int col_tc_width();
void launch_col_tc(bool fwd, bool half, const PassParams& P, long long pairs, cudaStream_t s);

}  // namespace longmix::fused
