// hyena-fused FFT passes for size 1024 (column FFTs of N1 = 1024 and row FFTs of N2 = 1024).
#include "common/cuda_check.h"
#include "ops/hyena/hyena_fused_fft.cuh"

namespace longmix::fused {
LONGMIX_FUSED_LAUNCHERS(1024)
}  // namespace longmix::fused
