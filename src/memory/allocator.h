// One way to count bytes on every backend. Every working buffer of every operator is taken
// from an Allocator: it counts the bytes held now and at the peak, refuses a request past its
// cap with OutOfMemory, and turns a refusal of the device into the same error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "common/error.h"

namespace longmix {

class Allocator {
 public:
  virtual ~Allocator() = default;
  Allocator() = default;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // Returns memory for `bytes` (rounded up to kGranule) or throws OutOfMemory.
  void* allocate(std::size_t bytes);
  void deallocate(void* p, std::size_t bytes) noexcept;

  std::size_t current() const;  // bytes held now
  std::size_t peak() const;     // most bytes held at once since the last reset_peak()
  void reset_peak();            // peak := current
  std::optional<std::size_t> cap() const;
  void set_cap(std::optional<std::size_t> cap_bytes);

  virtual std::string device_name() const = 0;
  static std::size_t rounded(std::size_t bytes) {
    return (bytes + kGranule - 1) / kGranule * kGranule;
  }
  static constexpr std::size_t kGranule = 256;

 protected:
  // Memory for `bytes` (already rounded) or nullptr when the device has none.
  virtual void* raw_allocate(std::size_t bytes) = 0;
  virtual void raw_deallocate(void* p, std::size_t bytes) noexcept = 0;

 private:
  mutable std::mutex mu_;
  std::size_t current_ = 0;
  std::size_t peak_ = 0;
  std::optional<std::size_t> cap_;
};

// Host memory, 64-byte aligned (AVX-512 lines, FFTW's SIMD alignment). Freed blocks of at
// least kCacheMin bytes are kept and handed out again to a request of the same size, as the
// CUDA caching allocator does: glibc maps blocks past 32 MiB afresh on every request, so each
// forward of a long row paid its page faults and the kernel's zeroing again (perf, hyena-cpu at
// 32k: ~15% of the samples). On a request that no kept block fits, kept blocks (largest first)
// go back to the system until handed-out plus kept bytes are at most twice the peak since the
// last reset_peak() and at most the cap: a new length's calls free the previous length's set,
// and the process never holds more than twice what the counts show, nor more than the cap. The
// counts (current, peak, cap) are the bytes handed out, as before; cached() is what is kept
// beside them.
class CpuAllocator final : public Allocator {
 public:
  ~CpuAllocator() override;
  std::string device_name() const override { return "cpu"; }
  std::size_t cached() const;  // bytes kept for reuse, not counted in current()
  void release_cached();       // returns every kept block to the system
  static constexpr std::size_t kCacheMin = std::size_t(1) << 20;

 protected:
  void* raw_allocate(std::size_t bytes) override;
  void raw_deallocate(void* p, std::size_t bytes) noexcept override;

 private:
  void release_locked(std::size_t keep) noexcept;  // until at most `keep` bytes are kept
  mutable std::mutex cache_mu_;
  std::multimap<std::size_t, void*> kept_;
  std::size_t kept_bytes_ = 0;
};

// RAII buffer of n elements of T taken from an allocator. Non-copyable, movable.
template <typename T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(Allocator& a, std::size_t n) : alloc_(&a), n_(n) {
    if (n_) p_ = static_cast<T*>(a.allocate(n_ * sizeof(T)));
  }
  ~Buffer() { reset(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      swap(o);
    }
    return *this;
  }
  void reset() noexcept {
    if (p_) alloc_->deallocate(p_, n_ * sizeof(T));
    p_ = nullptr;
    n_ = 0;
  }
  T* data() { return p_; }
  const T* data() const { return p_; }
  std::size_t size() const { return n_; }
  std::size_t bytes() const { return n_ * sizeof(T); }
  T& operator[](std::size_t i) { return p_[i]; }
  const T& operator[](std::size_t i) const { return p_[i]; }

 private:
  void swap(Buffer& o) noexcept {
    std::swap(alloc_, o.alloc_);
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
  }
  Allocator* alloc_ = nullptr;
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

// "8GiB", "512MiB", "1.5GB", "1000000" -> bytes. Throws InvalidArgument naming the text.
std::size_t parse_bytes(const std::string& text);
std::string format_bytes(std::size_t bytes);

}  // namespace longmix
