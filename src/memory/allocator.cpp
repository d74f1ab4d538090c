#include "memory/allocator.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <new>

namespace longmix {

void* Allocator::allocate(std::size_t bytes) {
  const std::size_t n = rounded(bytes == 0 ? 1 : bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cap_ && current_ + n > *cap_) {
      throw OutOfMemory(detail::concat("out of memory on ", device_name(), ": asked for ",
                                       format_bytes(n), " while holding ", format_bytes(current_),
                                       " under a cap of ", format_bytes(*cap_)),
                        n, current_, *cap_);
    }
    current_ += n;  // reserve first so concurrent requests respect the cap
    if (current_ > peak_) peak_ = current_;
  }
  void* p = raw_allocate(n);
  if (!p) {
    std::lock_guard<std::mutex> lock(mu_);
    current_ -= n;
    throw OutOfMemory(detail::concat("out of memory on ", device_name(), ": the device refused ",
                                     format_bytes(n), " while the project held ",
                                     format_bytes(current_)),
                      n, current_, cap_.value_or(0));
  }
  return p;
}

void Allocator::deallocate(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  const std::size_t n = rounded(bytes == 0 ? 1 : bytes);
  raw_deallocate(p, n);
  std::lock_guard<std::mutex> lock(mu_);
  current_ -= n;
}

std::size_t Allocator::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}
std::size_t Allocator::peak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}
void Allocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  peak_ = current_;
}
std::optional<std::size_t> Allocator::cap() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cap_;
}
void Allocator::set_cap(std::optional<std::size_t> cap_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  cap_ = cap_bytes;
}

CpuAllocator::~CpuAllocator() { release_cached(); }

std::size_t CpuAllocator::cached() const {
  std::lock_guard<std::mutex> lock(cache_mu_);
  return kept_bytes_;
}
void CpuAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(cache_mu_);
  release_locked(0);
}
void CpuAllocator::release_locked(std::size_t keep) noexcept {
  while (kept_bytes_ > keep) {  // the largest first
    const auto last = std::prev(kept_.end());
    ::operator delete(last->second, std::align_val_t{64});
    kept_bytes_ -= last->first;
    kept_.erase(last);
  }
}

void* CpuAllocator::raw_allocate(std::size_t bytes) {
  if (bytes >= kCacheMin) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (const auto it = kept_.find(bytes); it != kept_.end()) {
      void* p = it->second;
      kept_.erase(it);
      kept_bytes_ -= bytes;
      return p;
    }
    // current() already counts this request (allocate() reserves before raw_allocate).
    // Never past the cap either (on the CPU: 90% of the free memory unless one is given).
    std::size_t limit = 2 * peak();
    if (const auto c = cap()) limit = std::min(limit, *c);
    const std::size_t held = current();
    release_locked(limit > held ? limit - held : 0);
  }
  return ::operator new(bytes, std::align_val_t{64}, std::nothrow);
}
void CpuAllocator::raw_deallocate(void* p, std::size_t bytes) noexcept {
  if (bytes >= kCacheMin) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    try {
      kept_.emplace(bytes, p);
      kept_bytes_ += bytes;
      return;
    } catch (...) {  // no memory for the map's node: give the block back instead
    }
  }
  ::operator delete(p, std::align_val_t{64});
}

std::size_t parse_bytes(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  LONGMIX_REQUIRE(i > 0, "not a size in bytes: '", text,
                  "' (expected a positive number with an optional unit, e.g. 8GiB, 512MiB, 1.5GB)");
  double value = 0;
  try {
    value = std::stod(text.substr(0, i));
  } catch (...) {
    LONGMIX_REQUIRE(false, "not a size in bytes: '", text, "'");
  }
  std::string unit = text.substr(i);
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double mult = 0;
  if (unit.empty() || unit == "b") mult = 1;
  else if (unit == "k" || unit == "kib") mult = 1024.0;
  else if (unit == "m" || unit == "mib") mult = 1024.0 * 1024;
  else if (unit == "g" || unit == "gib") mult = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tib") mult = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "kb") mult = 1e3;
  else if (unit == "mb") mult = 1e6;
  else if (unit == "gb") mult = 1e9;
  else if (unit == "tb") mult = 1e12;
  LONGMIX_REQUIRE(mult > 0, "unknown unit '", text.substr(i), "' in size '", text,
                  "' (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)");
  const double bytes = value * mult;
  LONGMIX_REQUIRE(bytes >= 1 && std::isfinite(bytes), "size must be positive: '", text, "'");
  return static_cast<std::size_t>(bytes);
}

std::string format_bytes(std::size_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.3f GiB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024));
  else if (b >= 1024.0) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else std::snprintf(buf, sizeof buf, "%zu B", bytes);
  return buf;
}

}  // namespace longmix
