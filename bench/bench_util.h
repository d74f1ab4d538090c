// Shared by the GPU benchmarks: the median time of one enqueued call.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <type_traits>
#include <vector>

#include "common/cuda_check.h"
#include "common/turn_order.h"

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

// Medians of several enqueued calls (CUDA events around each) measured call by call in turns
// (each job once a round, in a fresh order each round: TurnOrder), so that no implementation owns
// one stretch of the GPU's clock nor always follows the same one: on a GPU at its power cap,
// back-to-back measurements of ~1 s each moved one implementation's time by 4–11% with its place
// in the sequence, and a fixed order within rounds 5–9% (H100, bench/NOTES.md flash-own Next 6
// and 7). 3 warm-up calls each, then rounds until every job has >= 10 calls and >= 0.2 s of them.
template <typename F>
std::vector<double> interleaved_median_ms(const std::vector<F*>& jobs, cudaStream_t s) {
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  for (F* f : jobs)
    for (int i = 0; i < 3; ++i) (*f)();
  const std::size_t n = jobs.size();
  std::vector<std::vector<float>> t(n);
  std::vector<float> total(n, 0.0f);
  auto turn = [&](std::size_t j) {
    CUDA_CHECK(cudaEventRecord(a, s));
    (*jobs[j])();
    CUDA_CHECK(cudaEventRecord(b, s));
    CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    t[j].push_back(ms);
    total[j] += ms;
  };
  take_turns(n, turn, [&](std::size_t j) { return t[j].size() >= 10 && total[j] >= 200.0f; });
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::vector<double> med(n);
  for (std::size_t j = 0; j < n; ++j) {
    std::sort(t[j].begin(), t[j].end());
    med[j] = t[j][t[j].size() / 2];
  }
  return med;
}

// Median of >= 10 calls and >= 0.2 s of calls (CUDA events around each), after 3 warm-up calls:
// interleaved_median_ms with one job.
template <typename F>
double median_ms(F&& f, cudaStream_t s) {
  std::remove_reference_t<F>* job = &f;
  return interleaved_median_ms(std::vector<std::remove_reference_t<F>*>{job}, s)[0];
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
