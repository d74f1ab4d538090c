// Shared by the GPU benchmarks: the median time of one enqueued call.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <vector>

#include "common/cuda_check.h"

namespace longmix::bench {

// A benchmark's main: body() run, and an error it throws (no usable GPU, a bad argument, a
// failed CUDA call) printed as "name: what" with exit status 1 instead of std::terminate.
template <typename F>
int guarded_main(const char* name, F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
}

// Median of >= 10 calls and >= 0.2 s of calls (CUDA events around each), after 3 warm-up calls.
template <typename F>
double median_ms(F&& f, cudaStream_t s) {
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> t;
  float total = 0;
  while (t.size() < 10 || total < 200.0f) {
    CUDA_CHECK(cudaEventRecord(a, s));
    f();
    CUDA_CHECK(cudaEventRecord(b, s));
    CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
    total += ms;
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// n small random-ish inputs in [-1, 1) (xorshift64, 16-bit steps: exact in fp16 and bf16's
// range), the same sequence in every benchmark.
inline std::vector<float> random_inputs(std::size_t n) {
  std::vector<float> v(n);
  std::uint64_t x = 88172645463325252ull;
  for (auto& h : v) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    h = static_cast<float>((x >> 40) & 0xffff) / 32768.0f - 1.0f;
  }
  return v;
}

}  // namespace longmix::bench
