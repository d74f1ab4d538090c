// hyena-fused: what the column passes (pass A and pass A⁻¹) do around their FFTs, whichever
// computes those (cuFFTDx block FFTs in hyena_fused_fft.cuh, tensor-core DFTs in
// hyena_fused_col_tc.cu): the source of pass A built from the projection output, the tile of W
// neighbouring columns in shared memory, its stores and loads of the stored spectra, and pass
// A⁻¹'s epilogue. All arithmetic is fp32.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline.h>

#include "ops/hyena/hyena_fused_params.h"
#include "ops/hyena/real_pair.cuh"

namespace longmix::fused {

__device__ __forceinline__ float ld_act(const void* p, int i, bool bf16) {
  return bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i])
              : __half2float(static_cast<const __half*>(p)[i]);
}

template <typename S> __device__ __forceinline__ float2 load_c(const S* p, int i);
template <> __device__ __forceinline__ float2 load_c<float2>(const float2* p, int i) { return p[i]; }
template <> __device__ __forceinline__ float2 load_c<__half2>(const __half2* p, int i) {
  return __half22float2(p[i]);
}
template <typename S> __device__ __forceinline__ void store_c(S* p, int i, float2 v);
template <> __device__ __forceinline__ void store_c<float2>(float2* p, int i, float2 v) { p[i] = v; }
template <> __device__ __forceinline__ void store_c<__half2>(__half2* p, int i, float2 v) {
  p[i] = __float22half2_rn(v);
}

// Two neighbouring stored values (i even; every (pair, row) start is even) in one 8- or 16-byte
// access.
template <typename S> __device__ __forceinline__ void load_c2(const S* p, int i, float2* a, float2* b);
template <> __device__ __forceinline__ void load_c2<float2>(const float2* p, int i, float2* a, float2* b) {
  const float4 v = *reinterpret_cast<const float4*>(p + i);
  *a = make_float2(v.x, v.y);
  *b = make_float2(v.z, v.w);
}
template <> __device__ __forceinline__ void load_c2<__half2>(const __half2* p, int i, float2* a, float2* b) {
  const uint2 v = *reinterpret_cast<const uint2*>(p + i);
  *a = __half22float2(*reinterpret_cast<const __half2*>(&v.x));
  *b = __half22float2(*reinterpret_cast<const __half2*>(&v.y));
}
template <typename S> __device__ __forceinline__ void store_c2(S* p, int i, float2 a, float2 b);
template <> __device__ __forceinline__ void store_c2<float2>(float2* p, int i, float2 a, float2 b) {
  *reinterpret_cast<float4*>(p + i) = make_float4(a.x, a.y, b.x, b.y);
}
template <> __device__ __forceinline__ void store_c2<__half2>(__half2* p, int i, float2 a, float2 b) {
  const __half2 ha = __float22half2_rn(a), hb = __float22half2_rn(b);
  *reinterpret_cast<uint2*>(p + i) = make_uint2(*reinterpret_cast<const unsigned*>(&ha), *reinterpret_cast<const unsigned*>(&hb));
}

// The position layout of every time row the column passes read or write (zT, prev, the output,
// h and the time grid): t = n1·N2 + n2 lies at n2·R + n1 (R = ⌈L/N2⌉), so a column pass, which
// needs n1 = 0 … for a few n2, reads and writes contiguous runs along n1 across a warp instead of
// a few bytes from each of N1/2 rows N2 apart (v4b: 47–67% excessive L1→L2 sectors). The GEMMs
// that produce and consume these rows do so through strided batches (hyena_fused.cu).
// pos_at (hyena_fused_params.h) in 32 bits, with N2 = 2^lg.
struct Pos {
  int N2, lg, R;
  __device__ __forceinline__ int operator()(int t) const { return (t & (N2 - 1)) * R + (t >> lg); }
};
__device__ __forceinline__ Pos pos_of(const PassParams& P) { return Pos{P.N2, __ffs(P.N2) - 1, P.R}; }

// Per-block constants of one projection channel's short conv (SPEC §3 step 2), hoisted out of
// the element loops: taps, conv bias, in_proj bias, and the channel's row of zT.
constexpr int kMaxK = 9;
struct ConvChan {
  float w[kMaxK];
  float sb, bin;
  const void* row;  // zT + (b·C + ch)·Lp
};
// Channel ch's row of zT for batch element b. (Spelled per dtype, as it always was: one
// 2-byte-typed expression for both let ptxas allocate the column kernels differently — 8-row
// pass A's spills at N1 = 512 156 → 208 bytes, pass A⁻¹ at N1 = 1024 48 → 64 registers.)
__device__ __forceinline__ const void* zt_row(const PassParams& P, long long b, long long ch) {
  return P.bf16 ? static_cast<const void*>(static_cast<const __nv_bfloat16*>(P.zT) + (b * P.C + ch) * P.Lp)
                : static_cast<const void*>(static_cast<const __half*>(P.zT) + (b * P.C + ch) * P.Lp);
}
// kTaps: the taps loaded (the 8-row path knows K = 3: 5 loads a channel instead of 11).
template <int kTaps = kMaxK>
__device__ __forceinline__ ConvChan conv_chan(const PassParams& P, long long b, long long ch) {
  ConvChan c;
#pragma unroll
  for (int j = 0; j < kMaxK; ++j) c.w[j] = j < kTaps && j < P.K ? P.sw[ch * P.K + j] : 0.0f;
  c.sb = P.sb[ch];
  c.bin = P.b_in ? P.b_in[ch] : 0.0f;
  c.row = zt_row(P, b, ch);
  return c;
}
// z[t] + b_in, zero outside [0, L) (negative time is the conv's zero padding; past L is never
// an input of a kept output).
__device__ __forceinline__ float zval(const ConvChan& c, int t, int L, const Pos& ps, bool bf16) {
  return t >= 0 && t < L ? ld_act(c.row, ps(t), bf16) + c.bin : 0.0f;
}
// zc[t0 + m] = sb + Σ_j w[j]·(z[t0 + m + j − (K−1)] + b_in) for a run of CG consecutive times
// (one row n1, CG neighbouring columns; the taps before the first column wrap to row n1 − 1
// through Pos). K = 3 (the reference's short filter) slides a window: CG + 2 loads for CG
// outputs; other lengths load every tap.
template <int CG>
__device__ __forceinline__ void sconv_run(const ConvChan& c, int K, int t0, int L, const Pos& ps, bool bf16,
                                          float (&out)[CG]) {
  if (K == 3) {
    float z[CG + 2];
#pragma unroll
    for (int j = 0; j < CG + 2; ++j) z[j] = zval(c, t0 + j - 2, L, ps, bf16);
#pragma unroll
    for (int m = 0; m < CG; ++m) out[m] = c.sb + c.w[2] * z[m + 2] + c.w[1] * z[m + 1] + c.w[0] * z[m];
    return;
  }
#pragma unroll
  for (int m = 0; m < CG; ++m) {
    float acc = c.sb;
#pragma unroll
    for (int j = 0; j < kMaxK; ++j)
      if (j < K) acc += c.w[j] * zval(c, t0 + m + j - (K - 1), L, ps, bf16);
    out[m] = acc;
  }
}

// The source of one channel of the pair: everything it needs, loaded once per block.
struct Source {
  int mode, K;
  bool bf16;
  ConvChan a, g;         // kSrcConvProduct: v-group and gate channels; kSrcPrevTimesConv: g
  const float* prev;     // kSrcPrevTimesConv: (b, c) row of prev
  const __half* h;       // kSrcFilter: the filter channel's row
  const float* tgrid;
  float decay, shift;    // kSrcFilter: |δ_c|, shift
};
template <int kTaps = kMaxK>
__device__ __forceinline__ Source make_source(const PassParams& P, long long b, long long c) {
  Source s;
  s.mode = P.src;
  s.K = P.K;
  s.bf16 = P.bf16;
  if (P.src == kSrcFilter) {
    s.h = P.h + c * P.Lp;
    s.tgrid = P.tgrid;
    s.decay = fabsf(P.deltas[c]);
    s.shift = P.shift;
  } else {
    s.g = conv_chan<kTaps>(P, b, P.g_b * P.D + c);
    if (P.src == kSrcConvProduct) s.a = conv_chan<kTaps>(P, b, P.g_a * P.D + c);
    else s.prev = P.prev + (b * P.D + c) * P.Lp;
  }
  return s;
}
// One channel's pass-A input at t0 + m, m < CG (one row, neighbouring columns at p0 + m·R).
template <int CG>
__device__ __forceinline__ void source_run(const Source& s, int t0, int p0, int L, const Pos& ps, float (&x)[CG]) {
  if (s.mode == kSrcFilter) {
#pragma unroll
    for (int m = 0; m < CG; ++m) {
      const int p = p0 + m * ps.R;
      x[m] = t0 + m < L ? __half2float(s.h[p]) * (__expf(-s.tgrid[p] * s.decay) + s.shift) : 0.0f;
    }
    return;
  }
  float g[CG];
  sconv_run<CG>(s.g, s.K, t0, L, ps, s.bf16, g);
  if (s.mode == kSrcConvProduct) {
    float a[CG];
    sconv_run<CG>(s.a, s.K, t0, L, ps, s.bf16, a);
#pragma unroll
    for (int m = 0; m < CG; ++m) x[m] = a[m] * g[m];
  } else {
#pragma unroll
    for (int m = 0; m < CG; ++m) x[m] = t0 + m < L ? s.prev[p0 + m * ps.R] * g[m] : 0.0f;
  }
}

// How a column pass's threads cover the R1 = N1/2 rows × W columns that can hold time points
// (L ≤ N/2): TR threads along the rows (a warp reads 32 consecutive n1 of one column: one
// contiguous run), G groups of CG neighbouring columns, RT rows a thread.
template <int N1, int W, int nth>
struct FillMap {
  static constexpr int R1 = N1 / 2;
  static constexpr int TR = nth < R1 ? nth : R1;
  static constexpr int G = nth / TR;
  static constexpr int CG = W / G;
  static constexpr int RT = R1 / TR;
  static_assert(TR % 32 == 0 && TR * G == nth && G * CG == W && RT * TR == R1, "column-pass fill tiling");
};

using pair::cmul;
using pair::twiddle;

// Pair p of the launch: signal pairs are (batch, channel pair); filter pairs index Dh/2.
__device__ __forceinline__ void pair_channels(const PassParams& P, long long p, long long* b, long long* c) {
  if (P.src == kSrcFilter) {
    *b = 0;
    *c = 2 * p;
  } else {
    *b = p / P.half_D;
    *c = 2 * (p % P.half_D);
  }
}

// v21: a column block's rows of zT staged in shared memory (PassParams::stage). Row j's positions
// [(col0 − 2)·R, (col0 + W)·R) — the block's W columns and the two before them, which hold the
// K = 3 short conv's taps t − 1, t − 2 (t = n1·N2 + n2: the same rows n1 of columns n2 − 1, n2 − 2)
// — one contiguous run of (W + 2)·R values, at dst + j·span, copied in 16-byte pieces by cp.async
// with every copy of the block in flight at once. Blocks with col0 < 2, whose taps wrap to the
// row before (column N2 − 1 …), and anything but K = 3 read global memory. The staged row's
// pointer is rebased (staged_row) so that position p reads dst[j·span + p − (col0 − 2)·R]:
// the loads that follow are the global path's, on the same values, so the outputs are
// bit-identical. Alignment: R % 8 == 0 makes every run start and length a multiple of 16 bytes
// (the plan checks zT's base).
__device__ __forceinline__ bool stage_block(const PassParams& P, int col0) { return P.stage && P.K == 3 && col0 >= 2; }
// Issues the copies of kRows rows (one commit group); the caller waits and synchronises.
template <int W, int nth, int kRows>
__device__ __forceinline__ void stage_issue(const void* const (&rows)[kRows], int col0, int R, int tid,
                                            unsigned short* dst) {
  const int span = stage_span(W, R), chunks = span / 8, lo = stage_first(col0, R);
#pragma unroll
  for (int j = 0; j < kRows; ++j) {  // j known at compile time: rows[] stays in registers
    const unsigned short* src = static_cast<const unsigned short*>(rows[j]) + lo;
    for (int k = tid; k < chunks; k += nth) __pipeline_memcpy_async(dst + j * span + 8 * k, src + 8 * k, 16);
  }
  __pipeline_commit();
}
template <int W>
__device__ __forceinline__ const void* staged_row(const unsigned short* dst, int j, int col0, int R) {
  return dst + j * stage_span(W, R) - stage_first(col0, R);
}

// v21, the signal's pass A: the four short-conv rows (x1, v of both channels) staged from the
// tile's start (4·(W + 2)·R·2 bytes fit its N1·(W + 1)·8 since R ≤ N1/2), the sources' row
// pointers rebased onto them. Waits and synchronises; the caller reads everything it needs
// into registers and synchronises again before its first tile store.
template <int W, int nth>
__device__ __forceinline__ void stage_signal(const PassParams& P, Source& sa, Source& sb, int col0, int tid,
                                             float2* tile) {
  unsigned short* st = reinterpret_cast<unsigned short*>(tile);
  const void* rows[4] = {sa.a.row, sa.g.row, sb.a.row, sb.g.row};
  stage_issue<W, nth, 4>(rows, col0, P.R, tid, st);
  sa.a.row = staged_row<W>(st, 0, col0, P.R);
  sa.g.row = staged_row<W>(st, 1, col0, P.R);
  sb.a.row = staged_row<W>(st, 2, col0, P.R);
  sb.g.row = staged_row<W>(st, 3, col0, P.R);
  __pipeline_wait_prior(0);
  __syncthreads();
}

// v21, the filter's pass A: the block's h rows of both channels (positions [col0·R, (col0 + W)·R),
// no taps) and the time grid's (fp32) staged in the tile's rows n1 ≥ N1/2, which pass A's
// prologue never writes (the zero half): 2·W·R·2 + W·R·4 bytes fit their (N1/2)·(W + 1)·8 since
// R ≤ N1/2. Every block stages (nothing wraps); the prologue then reads h and the time grid from
// there. Waits and synchronises itself.
template <int N1, int W, int nth>
__device__ __forceinline__ void stage_filter(const PassParams& P, Source& sa, Source& sb, int col0, int tid,
                                             float2* tile) {
  const int R = P.R, run = W * R, lo = col0 * R;
  unsigned short* sh = reinterpret_cast<unsigned short*>(tile + (N1 / 2) * (W + 1));
  float* stg = reinterpret_cast<float*>(sh + 2 * run);
  const int hchunks = run / 8, tchunks = run / 4;  // 16-byte pieces: 8 halves, 4 floats
  for (int k = tid; k < hchunks; k += nth) {
    __pipeline_memcpy_async(sh + 8 * k, sa.h + lo + 8 * k, 16);
    __pipeline_memcpy_async(sh + run + 8 * k, sb.h + lo + 8 * k, 16);
  }
  for (int k = tid; k < tchunks; k += nth) __pipeline_memcpy_async(stg + 4 * k, sa.tgrid + lo + 4 * k, 16);
  __pipeline_commit();
  sa.h = reinterpret_cast<const __half*>(sh) - lo;
  sb.h = reinterpret_cast<const __half*>(sh + run) - lo;
  sa.tgrid = sb.tgrid = stg - lo;
  __pipeline_wait_prior(0);
  __syncthreads();
}

// The column passes' tile: W neighbouring columns (col0 …) of one pair as [N1][W + 1] float2
// (one padding column), nth threads a block, tid the thread's index.
//
// pass A's prologue: the source of channels c, c + 1 at rows n1 < N1/2 (the rows past it, the
// zero padding, are never written: the transforms take them as zero).
template <int N1, int W, int nth, bool kStage = false>
__device__ __forceinline__ void fill_col_tile_scalar(const PassParams& P, long long b, long long c, int col0, int tid,
                                                     float2* tile) {
  constexpr int TW = W + 1;
  const int N2 = P.N2, L = static_cast<int>(P.L);
  // Each thread: RT rows × CG neighbouring columns of the source, a warp 32 consecutive rows;
  // every load issued before any store.
  using FM = FillMap<N1, W, nth>;
  Source sa = make_source(P, b, c), sb = make_source(P, b, c + 1);
  const Pos ps = pos_of(P);
  // v21: the four short-conv rows staged in the tile's space (block-uniform); 4·(W + 2)·R·2
  // bytes fit the tile's N1·(W + 1)·8 since R ≤ N1/2. Everything is read from there into
  // registers before the first tile store (the barrier below).
  bool staged = false;
  if constexpr (kStage) {
    if (P.src == kSrcFilter && P.stage) stage_filter<N1, W, nth>(P, sa, sb, col0, tid, tile);
    staged = P.src == kSrcConvProduct && stage_block(P, col0);
  }
  if (staged) stage_signal<W, nth>(P, sa, sb, col0, tid, tile);
  const int r0 = tid % FM::TR, w0 = (tid / FM::TR) * FM::CG;
  float xa[FM::RT][FM::CG], xb[FM::RT][FM::CG];
#pragma unroll
  for (int rr = 0; rr < FM::RT; ++rr) {
    const int n1 = r0 + rr * FM::TR, t0 = n1 * N2 + col0 + w0, p0 = (col0 + w0) * ps.R + n1;
    source_run<FM::CG>(sa, t0, p0, L, ps, xa[rr]);
    source_run<FM::CG>(sb, t0, p0, L, ps, xb[rr]);
  }
  if (staged) __syncthreads();  // the tile overwrites the staged rows
#pragma unroll
  for (int rr = 0; rr < FM::RT; ++rr)
#pragma unroll
    for (int m = 0; m < FM::CG; ++m) tile[(r0 + rr * FM::TR) * TW + w0 + m] = make_float2(xa[rr][m], xb[rr][m]);
}
// pass A's stores: the tile's N1 rows into T (pairs, N1, N2), two neighbouring columns a
// vector store.
template <int N1, int W, int nth, typename S>
__device__ __forceinline__ void store_col_tile(const PassParams& P, long long p, int col0, int tid,
                                               const float2* tile) {
  constexpr int TW = W + 1;
  const int N2 = P.N2;
  S* T = static_cast<S*>(P.T) + p * N1 * N2;
  constexpr int HW = W / 2;  // two neighbouring columns a thread, one vector store
#pragma unroll
  for (int it = 0; it < N1 * HW / nth; ++it) {
    const int idx = tid + it * nth, k1 = idx / HW, ww = 2 * (idx % HW);
    store_c2(T, k1 * N2 + col0 + ww, tile[k1 * TW + ww], tile[k1 * TW + ww + 1]);
  }
}
// pass A⁻¹'s loads: the N1 rows of the W columns from T, every load issued before any store.
template <int N1, int W, int nth, typename S>
__device__ __forceinline__ void load_col_tile(const PassParams& P, long long p, int col0, int tid, float2* tile) {
  constexpr int TW = W + 1;
  const int N2 = P.N2;
  const S* T = static_cast<const S*>(P.T) + p * N1 * N2;
  constexpr int HW = W / 2, kIters = N1 * HW / nth;  // two neighbouring columns a thread
  static_assert(kIters * nth == N1 * HW, "pass A⁻¹ load tiling");
  float2 v0[kIters], v1[kIters];
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int idx = tid + it * nth;
    load_c2(T, (idx / HW) * N2 + col0 + 2 * (idx % HW), &v0[it], &v1[it]);
  }
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int idx = tid + it * nth, o = (idx / HW) * TW + 2 * (idx % HW);
    tile[o] = v0[it];
    tile[o + 1] = v1[it];
  }
}
// pass A⁻¹'s epilogue: the tile's rows n1 < N1/2 (times below L) times the x0 gate (short
// conv on the fly; final step) or as they stand (the fp32 prev of an order > 2), written to the
// output rows of channels c, c + 1 in the position layout.
template <int N1, int W, int nth, bool kStage>
__device__ __forceinline__ void col_epilogue_scalar(const PassParams& P, long long b, long long c, int col0, int tid,
                                                    const float2* tile, const unsigned short* st) {
  constexpr int TW = W + 1;
  const int N2 = P.N2, L = static_cast<int>(P.L);
  // The epilogue in the position layout: RT rows × CG neighbouring columns a thread (FillMap),
  // the x0 gate's short convs as runs, stores contiguous along n1 across a warp.
  using FM = FillMap<N1, W, nth>;
  const Pos ps = pos_of(P);
  const int r0 = tid % FM::TR, w0 = (tid / FM::TR) * FM::CG;
  const bool is_final = P.dst == kDstFinal;
  ConvChan xa, xb;  // the x0 gate of both channels (final step only)
  if (is_final) {
    xa = conv_chan(P, b, c);
    xb = conv_chan(P, b, c + 1);
    if constexpr (kStage) {
      if (st) {  // v21: the x0 rows staged by col_inv (stage_x0)
        xa.row = staged_row<W>(st, 0, col0, P.R);
        xb.row = staged_row<W>(st, 1, col0, P.R);
      }
    }
  }
  const long long oa = (b * P.out_rows + c) * P.Lp;  // output rows of channels c, c + 1
#pragma unroll
  for (int rr = 0; rr < FM::RT; ++rr) {
    const int n1 = r0 + rr * FM::TR, t0 = n1 * N2 + col0 + w0, p0 = (col0 + w0) * ps.R + n1;
    if (t0 >= L) continue;
    float ga[FM::CG] = {}, gb[FM::CG] = {};
    if (is_final) {
      sconv_run<FM::CG>(xa, P.K, t0, L, ps, P.bf16, ga);
      sconv_run<FM::CG>(xb, P.K, t0, L, ps, P.bf16, gb);
    }
#pragma unroll
    for (int m = 0; m < FM::CG; ++m) {
      if (t0 + m >= L) break;
      const float2 y = tile[n1 * TW + w0 + m];
      const long long o = oa + p0 + m * ps.R;
      if (!is_final) {
        float* out = static_cast<float*>(P.out);
        out[o] = y.x;
        out[o + P.Lp] = y.y;
      } else if (P.bf16) {
        __nv_bfloat16* out = static_cast<__nv_bfloat16*>(P.out);
        out[o] = __float2bfloat16_rn(y.x * ga[m]);
        out[o + P.Lp] = __float2bfloat16_rn(y.y * gb[m]);
      } else {
        __half* out = static_cast<__half*>(P.out);
        out[o] = __float2half_rn(y.x * ga[m]);
        out[o + P.Lp] = __float2half_rn(y.y * gb[m]);
      }
    }
  }
}

// ---- The 8-row path (v14): a thread takes 8 consecutive rows n1 of one column n2, one 16-byte
// access per stored row run (8 fp16/bf16 values; two for fp32), where every column's run starts
// on a multiple of 8 (P.vec8: R % 8 == 0) and the short filter has K = 3 taps. At n2 ≥ 2 the
// taps z[t − 1], z[t − 2] are the same rows of columns n2 − 1, n2 − 2 (t = n1·N2 + n2): three
// vector loads for 8 outputs, no per-element position or bounds arithmetic (the scalar path: ten
// 2-byte loads for 8 outputs along a row, each with its own position and bounds check). The
// columns n2 < 2, whose taps wrap to the row before, take the scalar formula per element.
// Times t ≥ L give 0 (their stored slots past L hold no data). Lanes: w fastest, so a warp's
// tile accesses ([n1][W + 1] float2) stay within two wavefronts.
__device__ __forceinline__ void ld_f8(const float* p, float (&x)[8]) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  x[0] = a.x; x[1] = a.y; x[2] = a.z; x[3] = a.w; x[4] = b.x; x[5] = b.y; x[6] = b.z; x[7] = b.w;
}
// The K = 3 short conv at rows n1 … n1 + 7 of column n2 (p = n2·R + n1) from the three tap runs
// (columns n2, n2 − 1, n2 − 2, packed fp16/bf16) at n2 ≥ 2; the scalar formula (sconv_run<1>,
// which wraps through Pos) below.
__device__ __forceinline__ void unpack8(const uint4& v, bool bf16, float (&x)[8]) {
  const unsigned u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    float2 f;
    if (bf16) f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u[k]));
    else f = __half22float2(*reinterpret_cast<const __half2*>(&u[k]));
    x[2 * k] = f.x;
    x[2 * k + 1] = f.y;
  }
}
__device__ __forceinline__ uint4 ld16(const void* row, int p) {
  return *reinterpret_cast<const uint4*>(static_cast<const unsigned short*>(row) + p);
}
__device__ __forceinline__ void sconv8_taps(const ConvChan& c, const uint4& r0, const uint4& r1, const uint4& r2, int n2,
                                            int t0, int L, const Pos& ps, bool bf16, float (&out)[8]) {
  if (n2 >= 2) {
    float z0[8], z1[8], z2[8];
    unpack8(r0, bf16, z0);
    unpack8(r1, bf16, z1);
    unpack8(r2, bf16, z2);
#pragma unroll
    for (int i = 0; i < 8; ++i)
      out[i] = c.sb + c.w[2] * (z0[i] + c.bin) + c.w[1] * (z1[i] + c.bin) + c.w[0] * (z2[i] + c.bin);
    return;
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    float o[1];
    sconv_run<1>(c, 3, t0 + i * ps.N2, L, ps, bf16, o);
    out[i] = o[0];
  }
}
// The tap runs of one channel (v16): its own column's run loaded; the runs of columns n2 − 1,
// n2 − 2 shuffled from lanes w − 1, w − 2 of the same row group (W lanes a group, w = lane % W:
// they hold those columns' same rows), so only lanes w < 2 load a column, the one before the
// block's first (v14 loaded all three runs in every lane: the signal's pass A ran at 88% of the
// L1 throughput with a 50% hit rate on the H100, the taps being the neighbours' loads read
// again). Every lane of the warp calls it (live: n1 < R; a dead lane loads nothing).
template <int W>
__device__ __forceinline__ void taps8(const ConvChan& c, int p, int n2, int w, bool live, const Pos& ps, uint4& r0,
                                      uint4& r1, uint4& r2) {
  static_assert(W >= 2 && W <= 32 && (W & (W - 1)) == 0, "row groups of W lanes");
  constexpr unsigned kAll = 0xffffffffu;
  r0 = live ? ld16(c.row, p) : make_uint4(0u, 0u, 0u, 0u);
  r1 = make_uint4(__shfl_up_sync(kAll, r0.x, 1, W), __shfl_up_sync(kAll, r0.y, 1, W), __shfl_up_sync(kAll, r0.z, 1, W),
                  __shfl_up_sync(kAll, r0.w, 1, W));
  r2 = make_uint4(__shfl_up_sync(kAll, r0.x, 2, W), __shfl_up_sync(kAll, r0.y, 2, W), __shfl_up_sync(kAll, r0.z, 2, W),
                  __shfl_up_sync(kAll, r0.w, 2, W));
  if (live && n2 >= 2) {
    if (w < 1) r1 = ld16(c.row, p - ps.R);
    if (w < 2) r2 = ld16(c.row, p - 2 * ps.R);
  }
}
template <int W>
__device__ __forceinline__ void sconv8(const ConvChan& c, int p, int n2, int w, bool live, int t0, int L,
                                       const Pos& ps, bool bf16, float (&out)[8]) {
  uint4 r0, r1, r2;
  taps8<W>(c, p, n2, w, live, ps, r0, r1, r2);
  if (live) sconv8_taps(c, r0, r1, r2, n2, t0, L, ps, bf16, out);
}
// One channel's pass-A input at rows n1 … n1 + 7 of column n2 (before the t < L mask); tg: the
// time grid at those positions (kSrcFilter). Called by every lane (live as for taps8); a dead
// lane's x is left as it was.
template <int W>
__device__ __forceinline__ void source8(const Source& s, int p, int n2, int w, bool live, int t0, int L,
                                        const Pos& ps, const float (&tg)[8], float (&x)[8]) {
  if (s.mode == kSrcFilter) {
    if (!live) return;
    float hv[8];
    unpack8(ld16(s.h, p), false, hv);
#pragma unroll
    for (int i = 0; i < 8; ++i) x[i] = hv[i] * (__expf(-tg[i] * s.decay) + s.shift);
    return;
  }
  float g[8];
  sconv8<W>(s.g, p, n2, w, live, t0, L, ps, s.bf16, g);
  float a[8];
  if (s.mode == kSrcConvProduct) sconv8<W>(s.a, p, n2, w, live, t0, L, ps, s.bf16, a);
  else if (live) ld_f8(s.prev + p, a);
  if (!live) return;
#pragma unroll
  for (int i = 0; i < 8; ++i) x[i] = a[i] * g[i];
}
// The 8-row tasks of a block: (R1 / 8) row groups × W columns over nth threads.
template <int N1, int W, int nth>
struct Vec8Map {
  static constexpr int kGroups = N1 / 2 / 8, kTasks = kGroups * W, kIters = (kTasks + nth - 1) / nth;
  static_assert(N1 >= 16, "8-row tasks need N1/2 >= 8");
  // whole warps in every iteration (the taps' shuffles need every lane): a warp's tasks are all
  // below kTasks or all past it
  static_assert(kTasks % 32 == 0 && nth % 32 == 0 && 32 % W == 0, "8-row tasks in whole warps");
};
// f(task) for this thread's tasks of the block (vec8_task).
template <int N1, int W, int nth, typename F>
__device__ __forceinline__ void for_each_vec8_task(int tid, int col0, int N2, int R, F&& f) {
  using VM = Vec8Map<N1, W, nth>;
#pragma unroll
  for (int it = 0; it < VM::kIters; ++it) {
    const int task = tid + it * nth;
    if (VM::kTasks % nth != 0 && task >= VM::kTasks) break;
    f(vec8_task(task, W, col0, N2, R));
  }
}
template <int N1, int W, int nth, bool kStage = false>
__device__ __forceinline__ void fill_col_tile_vec8(const PassParams& P, long long b, long long c, int col0, int tid,
                                                   float2* tile) {
  constexpr int TW = W + 1;
  const int N2 = P.N2, L = static_cast<int>(P.L), R = P.R;
  Source sa = make_source<3>(P, b, c), sb = make_source<3>(P, b, c + 1);
  if constexpr (kStage)
    if (P.src == kSrcFilter && P.stage) stage_filter<N1, W, nth>(P, sa, sb, col0, tid, tile);
  const Pos ps = pos_of(P);
  // One task's source values of both channels, zero past L.
  auto task_source = [&](const Vec8Task& k, float (&xa)[8], float (&xb)[8]) {
    const int w = k.w, n1 = k.n1, n2 = k.n2, t0 = k.t0, p = k.p;
    const bool live = n1 < R;  // rows past the run hold times ≥ L: zero
    float tg[8] = {};
    if (live && P.src == kSrcFilter) ld_f8(sa.tgrid + p, tg);
    source8<W>(sa, p, n2, w, live, t0, L, ps, tg, xa);
    source8<W>(sb, p, n2, w, live, t0, L, ps, tg, xb);
#pragma unroll
    for (int i = 0; i < 8; ++i)
      if (!live || t0 + i * N2 >= L) xa[i] = xb[i] = 0.0f;
  };
  if constexpr (kStage && N1 >= 1024) {
    // v21: the signal's four short-conv rows staged in the whole tile's space, as the scalar
    // path does: every thread's one task (kIters == 1 at every size: N1/16·W tasks for
    // N1/ept·W threads, ept ≤ 16) read into registers, a barrier, then the tile stores. Only
    // from N1 = 1024, where the signal's pass A takes the 8-row path by default
    // (kSignalVec8MinN1): compiled in at N1 = 512 it doubled the spills of the kernel the
    // filter's staged pass A runs there (ptxas: 300 against 144 bytes stored).
    if (P.src == kSrcConvProduct && stage_block(P, col0)) {
      static_assert(Vec8Map<N1, W, nth>::kIters == 1, "one 8-row task a thread");
      stage_signal<W, nth>(P, sa, sb, col0, tid, tile);
      float xa[8] = {}, xb[8] = {};
      int n1 = -1, w = 0;
      for_each_vec8_task<N1, W, nth>(tid, col0, N2, R, [&](const Vec8Task& k) {
        task_source(k, xa, xb);
        n1 = k.n1;
        w = k.w;
      });
      __syncthreads();  // the tile overwrites the staged rows
      if (n1 >= 0) {
#pragma unroll
        for (int i = 0; i < 8; ++i) tile[(n1 + i) * TW + w] = make_float2(xa[i], xb[i]);
      }
      return;
    }
  }
  for_each_vec8_task<N1, W, nth>(tid, col0, N2, R, [&](const Vec8Task& k) {
    float xa[8] = {}, xb[8] = {};
    task_source(k, xa, xb);
#pragma unroll
    for (int i = 0; i < 8; ++i) tile[(k.n1 + i) * TW + k.w] = make_float2(xa[i], xb[i]);
  });
}
template <int N1, int W, int nth, bool kStage>
__device__ __forceinline__ void col_epilogue_vec8(const PassParams& P, long long b, long long c, int col0, int tid,
                                                  const float2* tile, const unsigned short* st) {
  constexpr int TW = W + 1;
  const int N2 = P.N2, L = static_cast<int>(P.L), R = P.R;
  const Pos ps = pos_of(P);
  const bool is_final = P.dst == kDstFinal;
  ConvChan xa, xb;
  if (is_final) {
    xa = conv_chan<3>(P, b, c);
    xb = conv_chan<3>(P, b, c + 1);
    if constexpr (kStage) {
      if (st) {
        xa.row = staged_row<W>(st, 0, col0, P.R);
        xb.row = staged_row<W>(st, 1, col0, P.R);
      }
    }
  }
  const long long oa = (b * P.out_rows + c) * P.Lp;
  for_each_vec8_task<N1, W, nth>(tid, col0, N2, R, [&](const Vec8Task& k) {
    const int w = k.w, n1 = k.n1, n2 = k.n2, t0 = k.t0, p = k.p;
    const bool live = n1 < R;
    float ga[8], gb[8];
    if (is_final) {  // every lane, before any returns (the taps' shuffles)
      sconv8<W>(xa, p, n2, w, live, t0, L, ps, P.bf16, ga);
      sconv8<W>(xb, p, n2, w, live, t0, L, ps, P.bf16, gb);
    }
    if (!live) return;
    float ya[8], yb[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float2 y = tile[(n1 + i) * TW + w];
      const bool in = t0 + i * N2 < L;  // slots past L are written as 0
      ya[i] = in ? y.x : 0.0f;
      yb[i] = in ? y.y : 0.0f;
    }
    if (!is_final) {
      float* out = static_cast<float*>(P.out) + oa + p;
      reinterpret_cast<float4*>(out)[0] = make_float4(ya[0], ya[1], ya[2], ya[3]);
      reinterpret_cast<float4*>(out)[1] = make_float4(ya[4], ya[5], ya[6], ya[7]);
      reinterpret_cast<float4*>(out + P.Lp)[0] = make_float4(yb[0], yb[1], yb[2], yb[3]);
      reinterpret_cast<float4*>(out + P.Lp)[1] = make_float4(yb[4], yb[5], yb[6], yb[7]);
      return;
    }
    unsigned ua[4], ub[4];  // the 8 outputs of each channel as 4 packed pairs
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float a0 = ya[2 * j] * ga[2 * j], a1 = ya[2 * j + 1] * ga[2 * j + 1];
      const float b0 = yb[2 * j] * gb[2 * j], b1 = yb[2 * j + 1] * gb[2 * j + 1];
      if (P.bf16) {
        const __nv_bfloat162 ha = __floats2bfloat162_rn(a0, a1), hb = __floats2bfloat162_rn(b0, b1);
        ua[j] = *reinterpret_cast<const unsigned*>(&ha);
        ub[j] = *reinterpret_cast<const unsigned*>(&hb);
      } else {
        const __half2 ha = __floats2half2_rn(a0, a1), hb = __floats2half2_rn(b0, b1);
        ua[j] = *reinterpret_cast<const unsigned*>(&ha);
        ub[j] = *reinterpret_cast<const unsigned*>(&hb);
      }
    }
    unsigned short* out = static_cast<unsigned short*>(P.out) + oa + p;
    *reinterpret_cast<uint4*>(out) = make_uint4(ua[0], ua[1], ua[2], ua[3]);
    *reinterpret_cast<uint4*>(out + P.Lp) = make_uint4(ub[0], ub[1], ub[2], ub[3]);
  });
}

// pass A's prologue and pass A⁻¹'s epilogue. kVec8 (the kernels for P.vec8): the 8-row path
// where the source or the output needs no short conv or a K = 3 one, else the scalar path.
__device__ __forceinline__ bool vec8_fill(const PassParams& P) { return P.src == kSrcFilter || P.K == 3; }
__device__ __forceinline__ bool vec8_epilogue(const PassParams& P) { return P.dst != kDstFinal || P.K == 3; }
// kStage: the kernels built for PassParams::stage (v21; the others compile none of its code).
template <int N1, int W, int nth, bool kVec8, bool kStage = false>
__device__ __forceinline__ void fill_col_tile(const PassParams& P, long long b, long long c, int col0, int tid,
                                              float2* tile) {
  if constexpr (kVec8) {
    if (vec8_fill(P)) {
      fill_col_tile_vec8<N1, W, nth, kStage>(P, b, c, col0, tid, tile);
      return;
    }
  }
  fill_col_tile_scalar<N1, W, nth, kStage>(P, b, c, col0, tid, tile);
}
// st: the x0 rows staged by stage_x0, or null (global memory).
template <int N1, int W, int nth, bool kVec8, bool kStage = false>
__device__ __forceinline__ void col_epilogue(const PassParams& P, long long b, long long c, int col0, int tid,
                                             const float2* tile, const unsigned short* st = nullptr) {
  if constexpr (kVec8) {
    if (vec8_epilogue(P)) {
      col_epilogue_vec8<N1, W, nth, kStage>(P, b, c, col0, tid, tile, st);
      return;
    }
  }
  col_epilogue_scalar<N1, W, nth, kStage>(P, b, c, col0, tid, tile, st);
}
// v21, pass A⁻¹: issues the copies of the x0 gate's two rows into the tile's rows n1 ≥ N1/2
// (free once the inverse FFT is done: the epilogue reads rows below N1/2 only; 2·(W + 2)·R·2
// bytes fit their (N1/2)·(W + 1)·8 since R ≤ N1/2). Returns the staging area, or null where the
// block reads global memory. The caller waits (__pipeline_wait_prior(0)) before its barrier.
template <int N1, int W, int nth>
__device__ __forceinline__ const unsigned short* stage_x0(const PassParams& P, long long b, long long c, int col0,
                                                          int tid, float2* tile) {
  if (P.dst != kDstFinal || !stage_block(P, col0)) return nullptr;
  unsigned short* st = reinterpret_cast<unsigned short*>(tile + (N1 / 2) * (W + 1));
  const void* rows[2] = {zt_row(P, b, c), zt_row(P, b, c + 1)};
  stage_issue<W, nth, 2>(rows, col0, P.R, tid, st);
  return st;
}

}  // namespace longmix::fused
