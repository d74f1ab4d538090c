// Hyena on the GPU, faithful to SPEC §3 (`hyena-cuda`): cuBLAS projections in the storage
// dtype with fp32 accumulation; one kernel does in_proj's bias, the short depthwise conv, the
// split and the first gate, writing v⊙x_{N-1} zero-padded to 2L in fp32 (channel-major) and
// the remaining gates; one kernel evaluates the filter MLP + modulation for every position;
// cuFFT R2C/C2R (fp32, in place, batched over channels) with the skip term folded into the
// spectral product (Y = U·(H + b)/2L); a final kernel applies x0 and transposes back.
//
// Versions
//   v1: as above; cuFFT work areas from the project's allocator (cufftSetAutoAllocation(0)).
//       Figures in bench/NOTES.md.
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
