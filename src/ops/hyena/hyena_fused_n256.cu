// hyena-fused FFT passes for size 256 (column FFTs of N1 = 256 and row FFTs of N2 = 256).
#include "common/cuda_check.h"
#include "ops/hyena/hyena_fused_fft.cuh"

namespace longmix::fused {
LONGMIX_FUSED_LAUNCHERS(256)
}  // namespace longmix::fused
