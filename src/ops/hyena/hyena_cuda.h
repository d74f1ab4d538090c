// Hyena on the GPU, faithful to SPEC §3 (`hyena-cuda`): cuBLASLt projections in the storage
// dtype with fp32 accumulation, in_proj written channel-major (x_0..x_{N-2} and x_{N-1}, v as
// two products) and out_proj reading it back with its bias in the epilogue; one streaming kernel
// does in_proj's bias, the short depthwise conv and the first gate, writing v⊙x_{N-1}
// zero-padded to 2L in fp32; the filter MLP runs as cuBLAS products (the last in TF32) with small
// bias+Sin and modulation(+padding) kernels, before any signal buffer exists; cuFFT R2C/C2R (fp32,
// out of place, batched over channels) with the skip term folded into the spectral product
// (Y = U·(H + b)/2L); a last streaming kernel applies x0 (its short conv recomputed from the
// projection). cuFFT work areas come from the project's allocator.
//
// Versions (H200, D = 256, L = 128k, per forward; ncu kernel times in bench/NOTES.md)
//   v1: in-place FFTs on rows padded to 2L+2 floats, filter MLP as one hand-written kernel:
//       4.47 ms — filter kernel 1.0 ms, conv/split 0.72 ms, cuFFT 2.1 ms (pack/unpack passes,
//       rows not 16-byte aligned). Rejected.
//   v2: out-of-place FFTs on aligned rows of 2L, tails zeroed by cudaMemset2DAsync, filter
//       MLP through cuBLAS: 3.35 ms (conv/split+transpose 0.65 + 0.13 ms at 0.6 TB/s, bias 0.1).
//   v3: channel-major projections (no transposes), streaming conv and gate kernels, bias in the
//       products' epilogue, TF32 last filter layer, filter before the signal.
//   v4 (order 2): the streaming kernels and the spectral product become cuFFT LTO callbacks
//       (hyena_cuda_callbacks.h): the signal R2C loads v ⊙ x_1 straight from the projection, the
//       filter R2C modulates and pads on load, the C2R multiplies the spectra on load and stores
//       y ⊙ x_0 in the storage dtype. Falls back to v3 when cuFFT refuses the callbacks.
#include <string>
#pragma once
#include <memory>

#include "common/cuda_context.h"
#include "ops/hyena/hyena.h"

namespace longmix {

struct HyenaCudaOptions {
  bool callbacks = true;  // order 2: cuFFT LTO callbacks when cuFFT accepts them (else the kernels)
};

class HyenaCudaPlan {
 public:
  // Uploads the weights (projections in dtype t, the rest fp32), builds cuFFT plans for
  // (B, L) and, when cache_filter, the filter's spectrum. All device memory from ctx.alloc.
  HyenaCudaPlan(const HyenaWeights& w, std::int64_t B, std::int64_t L, DType t, bool cache_filter,
                CudaContext& ctx, const HyenaCudaOptions& opt = {});
  ~HyenaCudaPlan();
  HyenaCudaPlan(const HyenaCudaPlan&) = delete;
  HyenaCudaPlan& operator=(const HyenaCudaPlan&) = delete;

  void forward(const void* u, void* y);  // u, y: (B, L, D) in dtype t
  void core(const void* z, void* yg);    // z: (B, L, C) in_proj output; yg: (B, L, D) = v ⊙ x0
  std::string note() const;              // which FFT path the plan took, and why

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string hyena_cuda_unsupported(const HyenaConfig& cfg, DType t);
std::string cufft_version_string();

}  // namespace longmix
