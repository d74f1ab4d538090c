// hyena-cuda's cuFFT LTO callbacks (order 2): the information they read, shared by the host
// plan (hyena_cuda.cu) and the callbacks (hyena_cuda_callbacks.cu, compiled to LTO-IR only and
// linked into cuFFT's kernels at plan time by cufftXtSetJITCallback).
//   signal R2C load:  v ⊙ x_1 at t < L from the channel-major projection zl, 0 in the padding
//   filter R2C load:  h ⊙ (exp(-t|δ|) + shift) at t < L from the MLP's compact output, 0 after
//   C2R load:         U · (H + skip) / 2L, the spectral product
//   C2R store:        y ⊙ x_0 at t < L into the channel-major gated output (dtype T); t >= L dropped
#pragma once
#include <cstdint>

namespace longmix {

struct HyenaCallbackInfo {
  const void* zl;       // (B, 2D, L) dtype T: x_1, v rows (in_proj output, bias not yet added)
  const void* zg;       // (B, D, L) dtype T: x_0 rows
  void* ygc;            // (B, D, L) dtype T: the gated output
  const float* w;       // short conv weights (C, K)
  const float* bs;      // short conv bias (C)
  const float* b_in;    // in_proj bias (C), or null (core scope: z has it)
  const float2* Hf;     // filter spectrum (D, nc)
  const float* skip;    // filter bias (D)
  const float* h;       // filter MLP output (D, L), fp32, before modulation
  const float* tgrid;   // (l_max)
  const float* deltas;  // (D)
  float shift, inv_n;   // modulation shift, 1 / 2L
  std::int64_t L, R, nc, D;
  double inv_R, inv_nc, inv_D;  // offsets are split into (row, column) by a double product + fix-up
  int K;
};

}  // namespace longmix
