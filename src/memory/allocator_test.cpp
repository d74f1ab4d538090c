#include "memory/allocator.h"

#include <gtest/gtest.h>

namespace longmix {

TEST(CpuAllocator, CountsCurrentAndPeak) {
  CpuAllocator a;
  EXPECT_EQ(a.current(), 0u);
  {
    Buffer<float> x(a, 1000);  // 4000 B -> 4096 with the 256 B granule
    EXPECT_EQ(a.current(), 4096u);
    {
      Buffer<float> y(a, 64);  // 256 B
      EXPECT_EQ(a.current(), 4352u);
    }
    EXPECT_EQ(a.current(), 4096u);
    EXPECT_EQ(a.peak(), 4352u);
  }
  EXPECT_EQ(a.current(), 0u);
  a.reset_peak();
  EXPECT_EQ(a.peak(), 0u);
}

TEST(CpuAllocator, RefusesPastCapWithOwnErrorAndKeepsCounts) {
  CpuAllocator a;
  a.set_cap(8192);
  Buffer<char> x(a, 4096);
  try {
    Buffer<char> y(a, 8192);
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& e) {
    EXPECT_EQ(e.requested(), 8192u);
    EXPECT_EQ(e.held(), 4096u);
    EXPECT_EQ(e.cap(), 8192u);
    EXPECT_NE(std::string(e.what()).find("cap"), std::string::npos);
  }
  EXPECT_EQ(a.current(), 4096u);
  Buffer<char> z(a, 4096);  // exactly at the cap is allowed
  EXPECT_EQ(a.current(), 8192u);
}

TEST(CpuAllocator, BuffersAreAligned) {
  CpuAllocator a;
  Buffer<float> x(a, 3), y(a, 5);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(x.data()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(y.data()) % 64, 0u);
}

// Large freed blocks are handed out again to a request of the same size, never counted as held,
// and given back when other sizes need the room (at most twice the peak in all).
TEST(CpuAllocator, KeepsLargeFreedBlocksForTheSameSize) {
  CpuAllocator a;
  const std::size_t big = 8 * CpuAllocator::kCacheMin, other = 5 * CpuAllocator::kCacheMin;
  void* p = a.allocate(big);
  a.deallocate(p, big);
  EXPECT_EQ(a.current(), 0u);
  EXPECT_EQ(a.cached(), big);
  void* q = a.allocate(big);
  EXPECT_EQ(q, p);  // the kept block
  EXPECT_EQ(a.cached(), 0u);
  EXPECT_EQ(a.current(), big);
  a.deallocate(q, big);
  // Small blocks are not kept.
  void* s = a.allocate(1000);
  a.deallocate(s, 1000);
  EXPECT_EQ(a.cached(), big);
  // Another size: a new block; the kept one stays while handed-out + kept ≤ 2 × peak …
  void* r = a.allocate(other);
  EXPECT_EQ(a.cached(), big);
  a.deallocate(r, other);
  EXPECT_EQ(a.cached(), big + other);
  // … and goes back once a new length's requests would pass that (peak reset: a new row).
  a.reset_peak();
  void* t = a.allocate(3 * CpuAllocator::kCacheMin);
  EXPECT_LE(a.current() + a.cached(), 2 * a.peak());
  EXPECT_EQ(a.cached(), 0u);
  a.deallocate(t, 3 * CpuAllocator::kCacheMin);
  a.release_cached();
  EXPECT_EQ(a.cached(), 0u);
  // The cap still counts handed-out bytes only.
  a.set_cap(big);
  void* u = a.allocate(big);
  a.deallocate(u, big);
  EXPECT_NO_THROW(a.deallocate(a.allocate(big), big));
  EXPECT_THROW(a.allocate(big + 1), OutOfMemory);
  // Handed-out + kept stay within the cap: a block of another size sends the kept one back.
  EXPECT_EQ(a.cached(), big);
  // (2 × the peak, 16 MiB, would keep it; the cap, 12 MiB, does not.)
  a.set_cap(big + other - CpuAllocator::kCacheMin);
  void* w = a.allocate(other);
  EXPECT_EQ(a.cached(), 0u);
  a.deallocate(w, other);
}

TEST(ParseBytes, UnitsAndErrors) {
  EXPECT_EQ(parse_bytes("8GiB"), 8ull << 30);
  EXPECT_EQ(parse_bytes("512MiB"), 512ull << 20);
  EXPECT_EQ(parse_bytes("1.5GB"), 1500000000ull);
  EXPECT_EQ(parse_bytes("1000"), 1000ull);
  EXPECT_THROW(parse_bytes("-1"), InvalidArgument);
  EXPECT_THROW(parse_bytes("0"), InvalidArgument);
  EXPECT_THROW(parse_bytes("8XB"), InvalidArgument);
  EXPECT_THROW(parse_bytes(""), InvalidArgument);
}

}  // namespace longmix
