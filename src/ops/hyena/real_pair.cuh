// Two real transforms through one complex one: the spectral product of a channel pair, shared by
// hyena-cuda's spectral kernel and hyena-fused's row passes (cuFFTDx and tensor-core rows).
//
// A pair of real signals x_a, x_b is transformed as z = x_a + i·x_b. From Z = FFT(z) the two real
// spectra are X_a[k] = (Z[k] + conj Z[N−k]) / 2 and X_b[k] = (Z[k] − conj Z[N−k]) / 2i; likewise
// H_a, H_b from the filter pair's spectrum, each plus its real skip weight. The product wanted is
// W = X_a·H_a + i·X_b·H_b (so that the inverse transform gives y_a + i·y_b), which regroups as
//
//   W[k] = Z[k]·P[k] + conj Z[N−k]·Q[k],   P = (H_a + H_b) / 2,  Q = (H_a − H_b) / 2,
//   4P = (1 − i)·H[k] + (1 + i)·conj H[N−k] + 2(s_a + s_b),
//   4Q = (1 + i)·H[k] + (1 − i)·conj H[N−k] + 2(s_a − s_b),
//
// 20 fp32 instructions a frequency instead of 28 for the four half spectra. At N − k the roles of
// k and N − k swap and P, Q become their conjugates (H_a, H_b are spectra of real signals).
#pragma once
#include <cuda_runtime.h>

namespace longmix::pair {

// W_N^{±m} = exp(∓2πi·m/N) for 0 <= m < N, N a power of two (the argument is exact in fp32):
// the twiddles of the cuFFTDx column passes and the tensor-core DFT constants (monarch512.cuh).
__device__ __forceinline__ float2 twiddle(int m, int N, float sign) {
  float s, c;
  sincospif(sign * 2.0f * float(m) / float(N), &s, &c);
  return make_float2(c, s);
}

__device__ __forceinline__ float2 cmul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// The per-pair constants: scale / 4 and the skip terms' contributions to P and Q, scaled.
struct PairSkip {
  float quarter, p0, q0;
};
__device__ __forceinline__ PairSkip pair_skip(float skip_a, float skip_b, float scale) {
  return {0.25f * scale, 0.5f * scale * (skip_a + skip_b), 0.5f * scale * (skip_a - skip_b)};
}

// P[k] and Q[k], times `scale`, from the filter pair's spectrum at k and N − k.
struct PairFilter {
  float2 p, q;
  // W[k] from Z[k] and Z[N−k].
  __device__ __forceinline__ float2 at_k(float2 z, float2 zp) const {
    return make_float2(z.x * p.x - z.y * p.y + zp.x * q.x + zp.y * q.y,
                       z.x * p.y + z.y * p.x + zp.x * q.y - zp.y * q.x);
  }
  // W[N−k] = Z[N−k]·conj P[k] + conj Z[k]·conj Q[k].
  __device__ __forceinline__ float2 at_mirror(float2 z, float2 zp) const {
    return make_float2(zp.x * p.x + zp.y * p.y + z.x * q.x - z.y * q.y,
                       zp.y * p.x - zp.x * p.y - z.x * q.y - z.y * q.x);
  }
};
__device__ __forceinline__ PairFilter pair_filter(float2 h, float2 hp, const PairSkip& s) {
  const float u = h.x + hp.x, v = h.y + hp.y, w = h.x - hp.x, t = h.y - hp.y;
  return {make_float2(fmaf(u + v, s.quarter, s.p0), (t - w) * s.quarter),
          make_float2(fmaf(u - v, s.quarter, s.q0), (t + w) * s.quarter)};
}

// hyena-fused's row passes hold the spectrum of length N = N1·N2 as N1 rows of N2 (row k1 holds
// k = k1 + N1·k2) and one block transforms the row pair {r, N1 − r} (r = 0: rows 0 and N1/2) as its
// slots s = 0, 1. Frequency k of slot s is mirrored (N − k) at slot `ps`, column `pk`: column
// N2 − 1 − k2 of the other slot, except in the self-mirrored rows 0 and N1/2.
struct Mirror {
  int ps, pk;
};
__device__ __forceinline__ Mirror mirror_of(int r, int s, int k2, int N2) {
  if (r == 0) return {s, s == 0 ? (N2 - k2) & (N2 - 1) : N2 - 1 - k2};
  return {1 - s, N2 - 1 - k2};
}

}  // namespace longmix::pair
