#include "common/cpu_math.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define LONGMIX_AVX2 1
#endif

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

#ifdef LONGMIX_AVX2
namespace {
// fast_exp2 on 8 lanes: the same clamp (NaN kept: max/min return their second operand when
// one is NaN), the same rounding and polynomial, the exponent by integer shift.
inline __m256 exp2_ps(__m256 x) {
  x = _mm256_min_ps(_mm256_set1_ps(127.0f), _mm256_max_ps(_mm256_set1_ps(-127.0f), x));
  const __m256 xi = _mm256_floor_ps(_mm256_add_ps(x, _mm256_set1_ps(0.5f)));
  const __m256 f = _mm256_sub_ps(x, xi);
  __m256 p = _mm256_set1_ps(kExp2Poly[0]);
  for (int i = 1; i < 7; ++i) p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(kExp2Poly[i]));
  const __m256i e = _mm256_add_epi32(_mm256_cvttps_epi32(xi), _mm256_set1_epi32(127));
  return _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(e, 23)));
}
inline float hsum(__m256 v) {
  __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  a = _mm_add_ps(a, _mm_movehl_ps(a, a));
  return _mm_cvtss_f32(_mm_add_ss(a, _mm_movehdup_ps(a)));
}
}  // namespace
#endif

float row_max(const float* s, std::int64_t n, float init) {
  std::int64_t c = 0;
  float m = init;
#ifdef LONGMIX_AVX2
  if (n >= 16) {
    // max_ps(x, m) = x > m ? x : m, which is std::max(m, x): a NaN x leaves m. Two
    // accumulators hide the instruction's latency.
    __m256 m0 = _mm256_set1_ps(init), m1 = m0;
    for (; c + 16 <= n; c += 16) {
      m0 = _mm256_max_ps(_mm256_loadu_ps(s + c), m0);
      m1 = _mm256_max_ps(_mm256_loadu_ps(s + c + 8), m1);
    }
    alignas(32) float lanes[16];
    _mm256_store_ps(lanes, m0);
    _mm256_store_ps(lanes + 8, m1);
    for (float x : lanes) m = std::max(m, x);
  }
#endif
  for (; c < n; ++c) m = std::max(m, s[c]);
  return m;
}

float exp2_row_sum(float* s, std::int64_t n, float shift, float mul) {
  std::int64_t c = 0;
  float sum = 0.0f;
#ifdef LONGMIX_AVX2
  const __m256 sh = _mm256_set1_ps(shift), mu = _mm256_set1_ps(mul);
  __m256 acc = _mm256_setzero_ps();
  for (; c + 8 <= n; c += 8) {
    const __m256 e = exp2_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(s + c), sh), mu));
    _mm256_storeu_ps(s + c, e);
    acc = _mm256_add_ps(acc, e);
  }
  sum = hsum(acc);
#endif
  for (; c < n; ++c) {
    const float e = fast_exp2((s[c] - shift) * mul);
    s[c] = e;
    sum += e;
  }
  return sum;
}

int blas_threads() { return openblas_get_num_threads(); }
void set_blas_threads(int n) { openblas_set_num_threads(n); }
std::string blas_version() { return openblas_get_config(); }

}  // namespace longmix
