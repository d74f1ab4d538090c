#include "common/cpu_math.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>

namespace longmix {

namespace {

void blas_sgemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
                std::int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(M),
              static_cast<blasint>(N), static_cast<blasint>(K), alpha, A, static_cast<blasint>(lda),
              B, static_cast<blasint>(ldb), beta, C, static_cast<blasint>(ldc));
}

// Rows of C a thread takes at least before a product is split across OpenMP threads.
constexpr std::int64_t kMinRowsPerThread = 64;

}  // namespace

// Every product runs on the OpenMP threads, OpenBLAS itself single-threaded: OpenBLAS's pthread
// pool and libgomp's workers both spin-wait on the cores after their regions, so a layer that
// alternates products with OpenMP loops (hyena-cpu: in_proj, short conv, FFTs, out_proj) ran
// each half starved by the other's spinning threads. Measured on the 2-core build machine
// (Xeon, fp32, hyena-cpu, median of 10): 4k 49.6-84.0 ms (min 37.8, max 94.5: calls either
// fast or twice as slow) with both pools, 33.7 with OMP_WAIT_POLICY=passive (bench/NOTES.md,
// hyena-cpu v3). Inside a parallel region a product stays on its thread.
void sgemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
           const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
           std::int64_t ldc) {
  if (M == 0 || N == 0) return;
  static const bool blas_single = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)blas_single;
  const int nt = omp_in_parallel()
                     ? 1
                     : static_cast<int>(std::min<std::int64_t>(omp_get_max_threads(), M / kMinRowsPerThread));
  if (nt <= 1) {
    blas_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num();
    const std::int64_t r0 = M * t / nt, r1 = M * (t + 1) / nt;
    // Rows r0..r1 of op(A): rows of A, or columns of A when transposed.
    const float* At = trans_a ? A + r0 : A + r0 * lda;
    blas_sgemm(trans_a, trans_b, r1 - r0, N, K, alpha, At, lda, B, ldb, beta, C + r0 * ldc, ldc);
  }
}

void linear(std::int64_t M, std::int64_t N, std::int64_t K, const float* X, const float* W,
            const float* bias, float* Y) {
  float beta = 0.0f;
  if (bias) {
#pragma omp parallel for schedule(static) if (M * N >= (std::int64_t{1} << 16))
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) Y[i * N + j] = bias[j];
    beta = 1.0f;
  }
  sgemm(false, true, M, N, K, 1.0f, X, K, W, K, beta, Y, N);
}

int blas_threads() { return openblas_get_num_threads(); }
void set_blas_threads(int n) { openblas_set_num_threads(n); }
std::string blas_version() { return openblas_get_config(); }

}  // namespace longmix
