// Small GPU helpers shared by the ops: cuBLAS linear layer, bias, dtype conversion, poison.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "common/cuda_check.h"
#include "common/cuda_context.h"
#include "common/cuda_types.cuh"

namespace longmix {

DType parse_dtype(const std::string& s) {
  if (s == "fp32") return DType::kF32;
  if (s == "fp16") return DType::kF16;
  if (s == "bf16") return DType::kBF16;
  throw InvalidArgument("unknown dtype '" + s + "' (expected fp32, fp16 or bf16)");
}

std::size_t dtype_size(DType t) { return t == DType::kF32 ? 4 : 2; }

cudaDataType_t cuda_dtype(DType t) {
  return t == DType::kF32 ? CUDA_R_32F : t == DType::kF16 ? CUDA_R_16F : CUDA_R_16BF;
}

void linear_cuda(DType t, std::int64_t M, std::int64_t N, std::int64_t K, const void* X, const void* W,
                 const float* bias, void* Y, CudaContext& ctx) {
  // Row-major Y (M,N) = X (M,K) W (N,K)ᵀ  <=>  column-major Yᵀ (N,M) = W' ᵀ... : C = op(A)·B with
  // A = W (col-major K×N, transposed), B = X (col-major K×M).
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_CHECK(cublasGemmEx(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M),
                            static_cast<int>(K), &alpha, W, cuda_dtype(t), static_cast<int>(K), X,
                            cuda_dtype(t), static_cast<int>(K), &beta, Y, cuda_dtype(t),
                            static_cast<int>(N), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  if (bias) add_bias_cuda(t, M, N, Y, bias, ctx.stream);
}

// Rows over blocks, columns over threads: no per-element division.
template <typename T>
__global__ void add_bias_kernel(std::int64_t rows, std::int64_t cols, T* y, const float* bias) {
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    T* row = y + r * cols;
    for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) row[c] = from_float<T>(to_float(row[c]) + bias[c]);
  }
}

template <typename T>
__global__ void from_float_kernel(const float* src, T* dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    dst[i] = from_float<T>(src[i]);
}
template <typename T>
__global__ void to_float_kernel(const T* src, float* dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    dst[i] = to_float(src[i]);
}
template <typename T>
__global__ void nan_kernel(T* p, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = from_float<T>(NAN);
}

namespace {
unsigned grid_for(std::size_t n) {
  return static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 132 * 16));
}
}  // namespace

#define LONGMIX_DISPATCH(t, ...)                        \
  switch (t) {                                          \
    case DType::kF32: { using T = float; __VA_ARGS__; break; }        \
    case DType::kF16: { using T = __half; __VA_ARGS__; break; }       \
    case DType::kBF16: { using T = __nv_bfloat16; __VA_ARGS__; break; } \
  }

void add_bias_cuda(DType t, std::int64_t rows, std::int64_t cols, void* y, const float* bias,
                   cudaStream_t s) {
  if (rows * cols == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<std::int64_t>(rows, 132 * 64));
  LONGMIX_DISPATCH(t, add_bias_kernel<T><<<blocks, 256, 0, s>>>(rows, cols, static_cast<T*>(y), bias));
  CUDA_CHECK_LAUNCH();
}
void convert_from_float_cuda(DType t, const float* src, void* dst, std::size_t n, cudaStream_t s) {
  if (!n) return;
  LONGMIX_DISPATCH(t, from_float_kernel<T><<<grid_for(n), 256, 0, s>>>(src, static_cast<T*>(dst), n));
  CUDA_CHECK_LAUNCH();
}
void convert_to_float_cuda(DType t, const void* src, float* dst, std::size_t n, cudaStream_t s) {
  if (!n) return;
  LONGMIX_DISPATCH(t, to_float_kernel<T><<<grid_for(n), 256, 0, s>>>(static_cast<const T*>(src), dst, n));
  CUDA_CHECK_LAUNCH();
}
void fill_nan_cuda(DType t, void* p, std::size_t n, cudaStream_t s) {
  if (!n) return;
  LONGMIX_DISPATCH(t, nan_kernel<T><<<grid_for(n), 256, 0, s>>>(static_cast<T*>(p), n));
  CUDA_CHECK_LAUNCH();
}

Buffer<char> upload_as(Allocator& a, const std::vector<float>& v, DType t, cudaStream_t s) {
  Buffer<char> out(a, v.size() * dtype_size(t));
  if (v.empty()) return out;
  Buffer<float> tmp(a, v.size());
  CUDA_CHECK(cudaMemcpyAsync(tmp.data(), v.data(), v.size() * 4, cudaMemcpyHostToDevice, s));
  if (t == DType::kF32) CUDA_CHECK(cudaMemcpyAsync(out.data(), tmp.data(), v.size() * 4, cudaMemcpyDeviceToDevice, s));
  else convert_from_float_cuda(t, tmp.data(), out.data(), v.size(), s);
  CUDA_CHECK(cudaStreamSynchronize(s));
  return out;
}

std::vector<float> download_as(const Buffer<char>& b, std::size_t n, DType t, Allocator& a, cudaStream_t s) {
  std::vector<float> out(n);
  if (!n) return out;
  Buffer<float> tmp(a, n);
  convert_to_float_cuda(t, b.data(), tmp.data(), n, s);
  CUDA_CHECK(cudaMemcpyAsync(out.data(), tmp.data(), n * 4, cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return out;
}

__global__ void fault_kernel(int* p, int hang) {
  if (hang) {
    volatile int spin = 1;
    while (spin) {
    }
  }
  *p = 1;
}

void inject_gpu_fault(const std::string& kind) {
  LONGMIX_REQUIRE(kind == "illegal-address" || kind == "hang", "unknown injected fault '", kind, "'");
  fault_kernel<<<1, 1>>>(reinterpret_cast<int*>(std::uintptr_t{16}), kind == "hang");
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace longmix
