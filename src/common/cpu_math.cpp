#include "common/cpu_math.h"

#include <cblas.h>

namespace longmix {

void sgemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
           const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
           std::int64_t ldc) {
  if (M == 0 || N == 0) return;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(M),
              static_cast<blasint>(N), static_cast<blasint>(K), alpha, A, static_cast<blasint>(lda),
              B, static_cast<blasint>(ldb), beta, C, static_cast<blasint>(ldc));
}

void linear(std::int64_t M, std::int64_t N, std::int64_t K, const float* X, const float* W,
            const float* bias, float* Y) {
  float beta = 0.0f;
  if (bias) {
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
