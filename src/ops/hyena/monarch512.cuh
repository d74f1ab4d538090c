// The 512-point DFT as FlashFFTConv's Monarch form, 512 = 16 × 32, on mma.sync m16n8k16 (fp16
// operands, fp32 accumulation), one warp a transform, the vector in fragments (no shared memory):
//
//   n = 32a + b, k = k1 + 16·k2:  X[k] = Σ_b W32^{b·k2} · W512^{b·k1} · Σ_a W16^{a·k1} x[32a + b]
//
//   dft16   C[k1][b] = F16[k1][a] · x[a][b]  (x as B fragments: n-tile j holds b = 8j + g,
//           register r the a = 2q + {0, 1} + 8r)
//   twiddle_slots  C[k1][b] · W512^{b·k1} on the accumulator slots, fp32
//   dft32   X[k1][k2] = C[k1][b] · F32[b][k2]  (the accumulators packed to fp16 are the A
//           fragments: slot (j, c) holds k1 = g + 8·(c >> 1), k2 = 8j + 2q + (c & 1))
//
// The inverse runs dft32<true>, twiddle_slots<true>, a movmatrix.trans of each 8 × 8 block into
// B fragments and dft16<true>: x[32a + b] at a = g + 8h, b = 8j + 2q + e in slot (j, 2h + e).
// Used by pass B's rows (hyena_fused_row_tc.cu) and the columns of N1 = 512
// (hyena_fused_col_tc.cu).
#pragma once
#include <cuda_fp16.h>

#include "ops/hyena/mma_sm80.cuh"
#include "ops/hyena/real_pair.cuh"

namespace longmix::fused::m512 {

constexpr int kSize = 512;

// The constants of one lane (g = lane / 4, q = lane % 4).
struct Dft {
  unsigned fr[4], fi[4];         // A fragments of W16^{m·k}: real, imaginary (forward sign)
  unsigned br[2][4][2], bi[2][4][2];  // B fragments of W32^{k·n}, k-step s, n-tile j
  float2 tw[4][4];               // W512^{b·k1} at the accumulator slots (n-tile j, element c)
};

// The frequency k = k1 + 16·k2 that accumulator slot (j, c) of lane (g, q) holds after the
// forward transform (and that the inverse takes there).
__device__ __forceinline__ int slot_k(int g, int q, int j, int c) {
  return g + 8 * (c >> 1) + 16 * (8 * j + 2 * q + (c & 1));
}

__device__ __forceinline__ float2 w_of(int m, int n) {  // exp(−2πi·m/n), m reduced mod n
  return pair::twiddle(m & (n - 1), n, -1.0f);
}
__device__ __forceinline__ void pack_w(int n, int m0, int m1, unsigned* re, unsigned* im) {
  const float2 a = w_of(m0, n), b = w_of(m1, n);
  *re = pack_half2(a.x, b.x);
  *im = pack_half2(a.y, b.y);
}

__device__ __forceinline__ Dft make_dft(int lane) {
  Dft d;
  const int g = lane >> 2, q = lane & 3;
  // A[m][k] = W16^{m·k}: reg 0 (g, 2q..), 1 (g+8, 2q..), 2 (g, 2q+8..), 3 (g+8, 2q+8..).
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int m = g + 8 * (r & 1), k = 2 * q + 8 * (r >> 1);
    pack_w(16, m * k, m * (k + 1), &d.fr[r], &d.fi[r]);
  }
  // B[k][n] = W32^{k·n}: k-step s, n-tile j; b0 at k = 16s + 2q.., b1 at k + 8, n = 8j + g.
#pragma unroll
  for (int s = 0; s < 2; ++s)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int k = 16 * s + 2 * q + 8 * r, n = 8 * j + g;
        pack_w(32, k * n, (k + 1) * n, &d.br[s][j][r], &d.bi[s][j][r]);
      }
  // Accumulator slot (j, c): row k1 = g + 8·(c >> 1), column b = 8j + 2q + (c & 1).
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int c = 0; c < 4; ++c) d.tw[j][c] = w_of((g + 8 * (c >> 1)) * (8 * j + 2 * q + (c & 1)), kSize);
  return d;
}

// Step over a (forward) or k1 (inverse): C[m][n] = Σ_k F16[m][k]·X[k][n] with X as B fragments
// (n-tile j: xr/xi[j][0] rows 2q.., [j][1] rows 2q+8..); conj F16 for the inverse.
template <bool Inv>
__device__ __forceinline__ void dft16(const Dft& d, const unsigned (&xr)[4][2], const unsigned (&xi)[4][2],
                                      float (&cr)[4][4], float (&ci)[4][4]) {
  unsigned fi[4], fn[4];  // the imaginary part with the transform's sign, and its negation
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    fi[r] = Inv ? neg_half2(d.fi[r]) : d.fi[r];
    fn[r] = neg_half2(fi[r]);
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) {
#pragma unroll
    for (int c = 0; c < 4; ++c) cr[j][c] = ci[j][c] = 0.0f;
    mma_16816(cr[j], d.fr, xr[j][0], xr[j][1]);  // Re = Fr·Xr − Fi·Xi
    mma_16816(cr[j], fn, xi[j][0], xi[j][1]);
    mma_16816(ci[j], d.fr, xi[j][0], xi[j][1]);  // Im = Fr·Xi + Fi·Xr
    mma_16816(ci[j], fi, xr[j][0], xr[j][1]);
  }
}

// Step over b (forward) or k2 (inverse): C[m][n] = Σ_k A[m][k]·F32[k][n], A given as the
// accumulator slots of a 16 × 32 product (n-tile j, element c), packed here into the A
// fragments of the two k-steps; conj F32 for the inverse.
template <bool Inv>
__device__ __forceinline__ void dft32(const Dft& d, const float (&yr)[4][4], const float (&yi)[4][4],
                                      float (&cr)[4][4], float (&ci)[4][4]) {
  unsigned ar[2][4], ai[2][4], an[2][4];
#pragma unroll
  for (int s = 0; s < 2; ++s)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int j = 2 * s + (r >> 1), c = 2 * (r & 1);
      ar[s][r] = pack_half2(yr[j][c], yr[j][c + 1]);
      ai[s][r] = pack_half2(yi[j][c], yi[j][c + 1]);
    }
  // Forward: Re = Ar·Br − Ai·Bi, Im = Ar·Bi + Ai·Br. Inverse (B conjugated): Re = Ar·Br + Ai·Bi,
  // Im = Ai·Br − Ar·Bi.
#pragma unroll
  for (int s = 0; s < 2; ++s)
#pragma unroll
    for (int r = 0; r < 4; ++r) an[s][r] = neg_half2(Inv ? ar[s][r] : ai[s][r]);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
#pragma unroll
    for (int c = 0; c < 4; ++c) cr[j][c] = ci[j][c] = 0.0f;
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      mma_16816(cr[j], ar[s], d.br[s][j][0], d.br[s][j][1]);
      mma_16816(cr[j], Inv ? ai[s] : an[s], d.bi[s][j][0], d.bi[s][j][1]);
      mma_16816(ci[j], ai[s], d.br[s][j][0], d.br[s][j][1]);
      mma_16816(ci[j], Inv ? an[s] : ar[s], d.bi[s][j][0], d.bi[s][j][1]);
    }
  }
}

template <bool Inv>
__device__ __forceinline__ void twiddle_slots(const Dft& d, float (&cr)[4][4], float (&ci)[4][4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const float2 w = d.tw[j][c];
      const float wi = Inv ? -w.y : w.y;
      const float r = cr[j][c] * w.x - ci[j][c] * wi;
      ci[j][c] = cr[j][c] * wi + ci[j][c] * w.x;
      cr[j][c] = r;
    }
}

// The forward 512-point DFT: x as B fragments → X in accumulator slots.
__device__ __forceinline__ void fwd_dft(const Dft& d, const unsigned (&xr)[4][2], const unsigned (&xi)[4][2],
                                        float (&Xr)[4][4], float (&Xi)[4][4]) {
  float cr[4][4], ci[4][4];
  dft16<false>(d, xr, xi, cr, ci);
  twiddle_slots<false>(d, cr, ci);
  dft32<false>(d, cr, ci, Xr, Xi);
}
// The inverse (unscaled): Y in accumulator slots → x[32a + b] at a = g + 8h, b = 8j + 2q + e
// in slot (j, 2h + e). Over k2 (the slots are the A operand as they stand), twiddle, over k1 (the
// twiddled slots transposed into B fragments).
__device__ __forceinline__ void inv_dft(const Dft& d, const float (&yr)[4][4], const float (&yi)[4][4],
                                        float (&xr)[4][4], float (&xi)[4][4]) {
  float ur[4][4], ui[4][4];
  dft32<true>(d, yr, yi, ur, ui);
  twiddle_slots<true>(d, ur, ui);
  unsigned br[4][2], bi[4][2];
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      br[j][h] = movmatrix_trans(pack_half2(ur[j][2 * h], ur[j][2 * h + 1]));
      bi[j][h] = movmatrix_trans(pack_half2(ui[j][2 * h], ui[j][2 * h + 1]));
    }
  dft16<true>(d, br, bi, xr, xi);
}

// A lane's constants as a table in global memory, word i of lane l at t[32·i + l] (coalesced):
// kernels that run a few transforms a block load them instead of building them (make_dft's 72
// sincospif a lane cost more than a column's transform).
constexpr int kDftWords = 72;
template <typename F>
__device__ __forceinline__ void for_each_dft_word(Dft& d, F&& f) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    f(r, d.fr[r]);
    f(4 + r, d.fi[r]);
  }
#pragma unroll
  for (int s = 0; s < 2; ++s)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        f(8 + 8 * s + 2 * j + r, d.br[s][j][r]);
        f(24 + 8 * s + 2 * j + r, d.bi[s][j][r]);
      }
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      f(40 + 8 * j + 2 * c, reinterpret_cast<unsigned&>(d.tw[j][c].x));
      f(41 + 8 * j + 2 * c, reinterpret_cast<unsigned&>(d.tw[j][c].y));
    }
}
__device__ __forceinline__ void store_dft(Dft d, unsigned* t, int lane) {
  for_each_dft_word(d, [&](int i, unsigned& w) { t[32 * i + lane] = w; });
}
__device__ __forceinline__ Dft load_dft(const unsigned* t, int lane) {
  Dft d;
  for_each_dft_word(d, [&](int i, unsigned& w) { w = __ldg(t + 32 * i + lane); });
  return d;
}

}  // namespace longmix::fused::m512
