// hyena-fused FFT passes for size 2048 (column FFTs of N1 = 2048 and row FFTs of N2 = 2048).
#include "common/cuda_check.h"
#include "ops/hyena/hyena_fused_fft.cuh"

namespace longmix::fused {
LONGMIX_FUSED_LAUNCHERS(2048)
}  // namespace longmix::fused
