#include "memory/cuda_allocator.h"

#include <cuda_runtime.h>

#include "common/cuda_check.h"

namespace longmix {

CudaAllocator::CudaAllocator(int device) : device_(device) {}

CudaAllocator::~CudaAllocator() { release_cached(); }

std::string CudaAllocator::device_name() const { return "cuda:" + std::to_string(device_); }

void* CudaAllocator::raw_allocate(std::size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(bytes);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      return p;
    }
  }
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    release_cached();
    e = cudaMalloc(&p, bytes);
  }
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return nullptr;
  }
  CUDA_CHECK(e);
  std::lock_guard<std::mutex> lock(mu_);
  reserved_ += bytes;
  return p;
}

void CudaAllocator::raw_deallocate(void* p, std::size_t bytes) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  free_[bytes].push_back(p);
}

void CudaAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!free_.empty()) cudaDeviceSynchronize();  // blocks may still be in use by queued work
  for (auto& [bytes, list] : free_) {
    for (void* p : list) {
      cudaFree(p);
      reserved_ -= bytes;
    }
  }
  free_.clear();
}

std::size_t CudaAllocator::reserved() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reserved_;
}

}  // namespace longmix
