// Built when the cuFFTDx headers (nvidia-mathdx wheel) were not found at configure time:
// hyena-fused reports itself unavailable with the reason instead of computing anything.
#include "ops/hyena/hyena_fused.h"

namespace longmix {

struct HyenaFusedPlan::Impl {};
std::string hyena_fused_unsupported(const HyenaConfig&, std::int64_t, DType) {
  return "this build has no hyena-fused (the cuFFTDx headers of the nvidia-mathdx wheel were missing at configure time)";
}
HyenaFusedPlan::HyenaFusedPlan(const HyenaWeights& w, std::int64_t L, std::int64_t, DType t, bool, CudaContext&,
                               HyenaFusedOptions) {
  throw InvalidArgument(hyena_fused_unsupported(w.cfg, L, t));
}
HyenaFusedPlan::~HyenaFusedPlan() = default;
HyenaFusedOptions hyena_fused_options_from_env(HyenaFusedOptions opt) { return opt; }
void HyenaFusedPlan::forward(const void*, void*) {}
void HyenaFusedPlan::core(const void*, void*) {}

}  // namespace longmix
