// hyena-fused FFT passes for size 128 (column FFTs of N1 = 128 and row FFTs of N2 = 128).
#include "common/cuda_check.h"
#include "ops/hyena/hyena_fused_fft.cuh"

namespace longmix::fused {
LONGMIX_FUSED_LAUNCHERS(128)
}  // namespace longmix::fused
