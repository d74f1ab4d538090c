// Warp-level tensor-core helpers shared by hyena-fused's kernels (PTX, sm_80 and later).
#pragma once
#include <cuda_fp16.h>

namespace longmix::fused {

// D += A·B, m16n8k16, fp16 operands, fp32 accumulators. Fragments (g = lane / 4, q = lane % 4):
// A a0..a7 at (g, 2q..2q+1), (g+8, 2q..), (g, 2q+8..), (g+8, 2q+8..); B b0..b3 at (k = 2q..2q+1,
// n = g), (k = 2q+8.., n = g); D d0..d3 at (g, 2q..2q+1), (g+8, 2q..).
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Two fp32 values as one fp16 pair (lo in the low half, as the fragments want it).
__device__ __forceinline__ unsigned pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&h);
}
// The transpose of an 8 × 8 fp16 matrix held a row-pair a thread (row g, columns 2q, 2q+1).
__device__ __forceinline__ unsigned movmatrix_trans(unsigned x) {
  unsigned y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}
__device__ __forceinline__ unsigned neg_half2(unsigned x) { return x ^ 0x80008000u; }

}  // namespace longmix::fused
