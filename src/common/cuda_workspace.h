// cuBLAS(Lt)'s workspace and a self-contained CUDA context, shared by the backend, the GPU tests
// and the benchmarks (header-only; CUDA builds only).
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <optional>

#include "common/cuda_check.h"
#include "common/cuda_context.h"

namespace longmix {

// A workspace from ctx's allocator, bound to ctx's cuBLAS handle and lent to cuBLASLt's products
// (ctx.workspace) for its lifetime. The backend's runners that use cuBLAS hold one while they
// live (counted in their rows); without one, cuBLAS runs with none.
class CublasWorkspace {
 public:
  static constexpr std::size_t kBytes = 32u << 20;
  explicit CublasWorkspace(CudaContext& ctx, std::size_t bytes = kBytes) : ctx_(ctx), buf_(*ctx.alloc, bytes) {
    CUBLAS_CHECK(cublasSetWorkspace(ctx.cublas, buf_.data(), bytes));
    ctx.workspace = buf_.data();
    ctx.workspace_bytes = bytes;
  }
  ~CublasWorkspace() {
    cublasSetWorkspace(ctx_.cublas, nullptr, 0);
    ctx_.workspace = nullptr;
    ctx_.workspace_bytes = 0;
  }
  CublasWorkspace(const CublasWorkspace&) = delete;
  CublasWorkspace& operator=(const CublasWorkspace&) = delete;

 private:
  CudaContext& ctx_;
  Buffer<char> buf_;
};

// A stream, a cuBLAS handle on it and a workspace, from alloc: what the tests and benchmarks
// that drive the CUDA plans directly run with.
class OwnedCudaContext {
 public:
  explicit OwnedCudaContext(Allocator& alloc) {
    ctx.alloc = &alloc;
    CUDA_CHECK(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasCreate(&ctx.cublas));
    CUBLAS_CHECK(cublasSetStream(ctx.cublas, ctx.stream));
    ws_.emplace(ctx);
  }
  ~OwnedCudaContext() {
    ws_.reset();
    cublasDestroy(ctx.cublas);
    cudaStreamDestroy(ctx.stream);
  }
  OwnedCudaContext(const OwnedCudaContext&) = delete;
  OwnedCudaContext& operator=(const OwnedCudaContext&) = delete;
  CudaContext ctx;

 private:
  std::optional<CublasWorkspace> ws_;
};

}  // namespace longmix
