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
