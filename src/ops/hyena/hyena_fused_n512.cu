// hyena-fused FFT passes for size 512 (column FFTs of N1 = 512 and row FFTs of N2 = 512).
#include "common/cuda_check.h"
#include "ops/hyena/hyena_fused_fft.cuh"

namespace longmix::fused {
LONGMIX_FUSED_LAUNCHERS(512)
}  // namespace longmix::fused
