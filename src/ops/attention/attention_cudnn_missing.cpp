// Built when cuDNN or the cudnn-frontend headers were not found: flash-cudnn reports itself
// unavailable with the reason instead of computing anything.
#include "ops/attention/attention_cuda.h"

namespace longmix {

struct CudnnFlash::Impl {};
std::string cudnn_version_string() { return "not built (cuDNN or cudnn-frontend headers missing at configure time)"; }
std::string cudnn_flash_unsupported(const AttentionParams&, DType) {
  return "this build has no cuDNN flash attention (cuDNN or cudnn-frontend headers were missing at configure time)";
}
CudnnFlash::CudnnFlash(const AttentionParams& p, DType t, std::int64_t, std::int64_t) {
  throw InvalidArgument(cudnn_flash_unsupported(p, t));
}
CudnnFlash::~CudnnFlash() = default;
std::int64_t CudnnFlash::workspace_bytes() const { return 0; }
void CudnnFlash::run(const void*, const void*, const void*, void*, float*, CudaContext&) {}

}  // namespace longmix
