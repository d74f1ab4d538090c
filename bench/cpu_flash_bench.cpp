// CPU FlashAttention GFLOP/s next to OpenBLAS sgemm GFLOP/s, same run, same machine.
// Prints figures; not a test. Usage: bench_cpu_flash [L=4096] [H=4] [d=64]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/cpu_math.h"
#include "common/rng.h"
#include "ops/attention/attention.h"

using namespace longmix;

template <typename F>
double median_seconds(F&& f, int reps) {
  f();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  const std::int64_t L = argc > 1 ? std::atoll(argv[1]) : 4096;
  const std::int64_t H = argc > 2 ? std::atoll(argv[2]) : 4;
  const std::int64_t d = argc > 3 ? std::atoll(argv[3]) : 64;
  AttentionParams p{.B = 1, .L = L, .H = H, .d = d, .causal = true};
  Rng rng(1);
  std::vector<float> q(L * H * d), k(q.size()), v(q.size()), o(q.size()), lse(H * L);
  rng.fill_normal(q);
  rng.fill_normal(k);
  rng.fill_normal(v);
  CpuAllocator alloc;
  const double tf = median_seconds(
      [&] { attention_flash_cpu(p, q.data(), k.data(), v.data(), o.data(), lse.data(), alloc); }, 5);
  // sgemm reference: a square product of the size of the attention's work, all threads.
  const std::int64_t n = 2048;
  std::vector<float> A(n * n), B(n * n), C(n * n);
  rng.fill_normal(A);
  rng.fill_normal(B);
  const double tg = median_seconds(
      [&] { sgemm(false, false, n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, C.data(), n); }, 5);
  const double flash_gf = p.flops() / tf / 1e9, gemm_gf = 2.0 * n * n * n / tg / 1e9;
  std::printf("threads=%d L=%lld H=%lld d=%lld causal\n", omp_get_max_threads(), (long long)L,
              (long long)H, (long long)d);
  std::printf("flash-cpu: %.2f ms, %.1f GFLOP/s\n", tf * 1e3, flash_gf);
  std::printf("sgemm %lld^3: %.2f ms, %.1f GFLOP/s\n", (long long)n, tg * 1e3, gemm_gf);
  std::printf("flash / sgemm = %.1f%%\n", 100.0 * flash_gf / gemm_gf);
  return 0;
}
