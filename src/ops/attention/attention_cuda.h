// Attention on the GPU (SPEC §2), fp16/bf16 storage, fp32 accumulation and softmax.
//   attention-cuda: standard attention. cuBLAS strided-batched GEMMs write S = scale·QKᵀ for
//     every head of a batch row, (H, L, L) in the storage dtype, a row-softmax kernel turns it
//     into P in place (causal: zeros above the diagonal), then O = PV. O(L²) memory by design.
//   flash-cudnn: cuDNN's fused flash attention through cudnn-frontend's SDPA graph (own
//     translation unit); writes O and the fp32 row log-sum-exp.
// q, k, v rows are ld_in elements apart (D for (B, L, H, d); 3D inside the layer's qkv).
#pragma once
#include <memory>
#include <string>

#include "common/cuda_context.h"
#include "ops/attention/attention.h"

namespace longmix {

void attention_standard_cuda(const AttentionParams& p, DType t, const void* q, const void* k,
                             const void* v, std::int64_t ld_in, void* o, std::int64_t ld_o,
                             CudaContext& ctx);

// A cuDNN SDPA graph built once per shape and reused.
class CudnnFlash {
 public:
  CudnnFlash(const AttentionParams& p, DType t, std::int64_t ld_in, std::int64_t ld_o);
  ~CudnnFlash();
  CudnnFlash(const CudnnFlash&) = delete;
  CudnnFlash& operator=(const CudnnFlash&) = delete;
  // lse: (B, H, L) fp32. Workspace from ctx.alloc.
  void run(const void* q, const void* k, const void* v, void* o, float* lse, CudaContext& ctx);
  std::int64_t workspace_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Empty when cuDNN's flash attention can run (p, t) here, else the reason.
std::string cudnn_flash_unsupported(const AttentionParams& p, DType t);
std::string cudnn_version_string();

}  // namespace longmix
