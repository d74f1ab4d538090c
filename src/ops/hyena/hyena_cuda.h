// Hyena on the GPU, faithful to SPEC §3 (`hyena-cuda`): cuBLASLt projections in the storage
// dtype with fp32 accumulation, in_proj written channel-major (x_0..x_{N-2} and x_{N-1}, v as
// two products) and out_proj reading it back with its bias in the epilogue; the filter MLP as
// cuBLAS products (the last in TF32) with small bias+Sin and modulation kernels, computed before
// any signal buffer exists; the long convolutions as cuFFT complex transforms (fp32, in place,
// size 2L) of channel pairs — channel 2j as the real and 2j+1 as the imaginary part, the two
// real spectra separated from Z[k] and Z[2L-k] in the spectral kernel, which also folds in the
// skip term (Y = X·(H + b)/2L) and re-pairs the products so that one inverse transform returns
// both outputs. Streaming kernels (shared-memory staged, coalesced) do in_proj's bias, the short
// depthwise conv and the gates. cuFFT work areas come from the project's allocator.
//
// Versions (H200, D = 256, L = 128k, per forward; ncu kernel times in bench/NOTES.md)
//   v1: in-place R2C/C2R on rows padded to 2L+2 floats, filter MLP as one hand-written kernel:
//       4.47 ms. Rejected.
//   v2: out-of-place R2C/C2R on aligned rows of 2L, tails zeroed by cudaMemset2DAsync, filter
//       MLP through cuBLAS: 3.38 ms (conv/split + transpose 0.65 + 0.13 ms at 0.6 TB/s).
//   v3: channel-major projections (no transposes), streaming conv and gate kernels, bias in the
//       products' epilogue, TF32 last filter layer, filter before the signal: 2.90 ms (the
//       gate and modulation kernels at 0.5–2 TB/s: four elements per thread, strided).
//       cuFFT LTO callbacks for the streaming passes were tried: this machine's cuFFT 12.0
//       refuses every LTO callback plan (CUFFT_INTERNAL_ERROR, even a trivial one;
//       tools/probe/).
//   v4: channel pairs through C2C (no R2C pre/post-processing passes, half the FFT rows, in
//       place: no separate spectrum buffer), coalesced shared-memory-staged streaming kernels:
//       1.96 ms (2.23× the same-call PyTorch reference's 4.37 ms), peak 1.17 GiB (1.35).
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
