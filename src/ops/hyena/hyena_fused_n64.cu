// hyena-fused FFT passes for size 64 (column FFTs of N1 = 64 and row FFTs of N2 = 64).
#include "common/cuda_check.h"
#include "ops/hyena/hyena_fused_fft.cuh"

namespace longmix::fused {
LONGMIX_FUSED_LAUNCHERS(64)
}  // namespace longmix::fused
