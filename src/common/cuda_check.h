// Status checks for CUDA, cuBLAS and cuFFT with file:line. An out-of-memory status becomes
// the project's OutOfMemory so a sweep records the row as OOM.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>

#include <string>

#include "common/error.h"

namespace longmix::detail {
[[noreturn]] void throw_cuda(cudaError_t e, const char* what, const char* file, int line);
[[noreturn]] void throw_cublas(cublasStatus_t s, const char* what, const char* file, int line);
[[noreturn]] void throw_cufft(cufftResult r, const char* what, const char* file, int line);
}  // namespace longmix::detail

#define CUDA_CHECK(x)                                                                       \
  do {                                                                                      \
    cudaError_t e_ = (x);                                                                   \
    if (e_ != cudaSuccess) ::longmix::detail::throw_cuda(e_, #x, __FILE__, __LINE__);       \
  } while (0)
#define CUBLAS_CHECK(x)                                                                     \
  do {                                                                                      \
    cublasStatus_t s_ = (x);                                                                \
    if (s_ != CUBLAS_STATUS_SUCCESS) ::longmix::detail::throw_cublas(s_, #x, __FILE__, __LINE__); \
  } while (0)
#define CUFFT_CHECK(x)                                                                      \
  do {                                                                                      \
    cufftResult r_ = (x);                                                                   \
    if (r_ != CUFFT_SUCCESS) ::longmix::detail::throw_cufft(r_, #x, __FILE__, __LINE__);    \
  } while (0)
// After a kernel launch.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
