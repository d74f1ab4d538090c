#include "common/cuda_check.h"

namespace longmix::detail {

void throw_cuda(cudaError_t e, const char* what, const char* file, int line) {
  const std::string msg = concat(file, ":", line, ": ", what, ": ", cudaGetErrorName(e), " (",
                                 cudaGetErrorString(e), ")");
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    throw OutOfMemory("out of memory on the GPU: " + msg, 0, 0, 0);
  }
  throw RuntimeFailure(msg);
}

void throw_cublas(cublasStatus_t s, const char* what, const char* file, int line) {
  const std::string msg = concat(file, ":", line, ": ", what, ": ", cublasGetStatusName(s), " (",
                                 cublasGetStatusString(s), ")");
  if (s == CUBLAS_STATUS_ALLOC_FAILED) throw OutOfMemory("out of memory in cuBLAS: " + msg, 0, 0, 0);
  throw RuntimeFailure(msg);
}

void throw_cufft(cufftResult r, const char* what, const char* file, int line) {
  const std::string msg = concat(file, ":", line, ": ", what, ": cufftResult ", static_cast<int>(r));
  if (r == CUFFT_ALLOC_FAILED) throw OutOfMemory("out of memory in cuFFT: " + msg, 0, 0, 0);
  throw RuntimeFailure(msg);
}

}  // namespace longmix::detail
