// Hyena on the GPU, faithful to SPEC §3 (`hyena-cuda`): cuBLAS projections in the storage
// dtype with fp32 accumulation; one kernel does in_proj's bias, the short depthwise conv, the
// split and the first gate, writing v⊙x_{N-1} zero-padded to 2L in fp32 (channel-major) and
// the remaining gates; the filter MLP runs as cuBLAS fp32 products with small bias+Sin and
// modulation kernels; cuFFT R2C/C2R (fp32, out of place, batched over channels) with the skip
// term folded into the spectral product (Y = U·(H + b)/2L); a final kernel applies x0 and
// transposes back. cuFFT work areas come from the project's allocator.
//
// Versions (H200, D = 256, L = 128k, per forward; ncu kernel times in bench/NOTES.md)
//   v1: in-place FFTs on rows padded to 2L+2 floats, filter MLP as one hand-written kernel:
//       4.47 ms — filter kernel 1.0 ms, conv/split 0.72 ms, cuFFT 2.1 ms (pack/unpack passes,
//       rows not 16-byte aligned). Rejected.
//   v2: out-of-place FFTs on aligned rows of 2L, tails zeroed by cudaMemset2DAsync, filter
//       MLP through cuBLAS.
#pragma once
#include <memory>

#include "common/cuda_context.h"
#include "ops/hyena/hyena.h"

namespace longmix {

class HyenaCudaPlan {
 public:
  // Uploads the weights (projections in dtype t, the rest fp32), builds cuFFT plans for
  // (B, L) and, when cache_filter, the filter's spectrum. All device memory from ctx.alloc.
  HyenaCudaPlan(const HyenaWeights& w, std::int64_t B, std::int64_t L, DType t, bool cache_filter,
                CudaContext& ctx);
  ~HyenaCudaPlan();
  HyenaCudaPlan(const HyenaCudaPlan&) = delete;
  HyenaCudaPlan& operator=(const HyenaCudaPlan&) = delete;

  void forward(const void* u, void* y);  // u, y: (B, L, D) in dtype t
  void core(const void* z, void* yg);    // z: (B, L, C) in_proj output; yg: (B, L, D) = v ⊙ x0

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string hyena_cuda_unsupported(const HyenaConfig& cfg, DType t);
std::string cufft_version_string();

}  // namespace longmix
