// Device memory for every GPU buffer and library workspace: a caching allocator (freed blocks
// kept per size, like PyTorch's) behind the Allocator interface, so peak, cap and OOM are
// counted exactly as on the CPU. A cudaMalloc failure releases the cache and retries once;
// a second failure is the project's OutOfMemory.
#pragma once
#include <map>
#include <mutex>
#include <vector>

#include "memory/allocator.h"

namespace longmix {

class CudaAllocator final : public Allocator {
 public:
  explicit CudaAllocator(int device = 0);
  ~CudaAllocator() override;
  std::string device_name() const override;
  void release_cached();            // cudaFree every cached block
  std::size_t reserved() const;     // bytes obtained from cudaMalloc and not yet freed

 protected:
  void* raw_allocate(std::size_t bytes) override;
  void raw_deallocate(void* p, std::size_t bytes) noexcept override;

 private:
  int device_;
  mutable std::mutex mu_;
  std::map<std::size_t, std::vector<void*>> free_;
  std::size_t reserved_ = 0;
};

}  // namespace longmix
