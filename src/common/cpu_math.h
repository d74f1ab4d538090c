// CPU numeric helpers: a row-major sgemm front for OpenBLAS, thread-count control, and a
// vectorisable exp2 for softmax inner loops.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

namespace longmix {

// C[M×N] = alpha·op(A)·op(B) + beta·C, row-major; op(X) = Xᵀ when trans. Outside an OpenMP
// parallel region the rows of C are split across the OpenMP threads (OpenBLAS itself runs
// single-threaded, so only one thread pool ever spins on the cores); inside one, on this thread.
void sgemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
           const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
           std::int64_t ldc);

// Y[M×N] = X[M×K]·W[N×K]ᵀ + bias[N] (bias may be null): PyTorch's nn.Linear, row-major.
void linear(std::int64_t M, std::int64_t N, std::int64_t K, const float* X, const float* W,
            const float* bias, float* Y);

int blas_threads();
void set_blas_threads(int n);
std::string blas_version();

// Keeps OpenBLAS single-threaded while OpenMP threads each call it (restored on scope exit).
class BlasSingleThreaded {
 public:
  BlasSingleThreaded() : saved_(blas_threads()) { set_blas_threads(1); }
  ~BlasSingleThreaded() { set_blas_threads(saved_); }
  BlasSingleThreaded(const BlasSingleThreaded&) = delete;
  BlasSingleThreaded& operator=(const BlasSingleThreaded&) = delete;

 private:
  int saved_;
};

// 2^x in float, relative error < 2.5e-7 on [-126, 127]; returns exactly 0 for x <= -127
// (so -inf gives 0). GCC does not vectorise loops over it (its clamps are branches without
// -ffast-math): the row loops below call the AVX2 form of the same polynomial.
// 2^f on [-0.5, 0.5], highest power first (Horner), for fast_exp2 and its AVX2 form.
inline constexpr float kExp2Poly[7] = {1.535336188319500e-4f, 1.339887440266574e-3f,
                                       9.618437357674640e-3f, 5.550332471162809e-2f,
                                       2.402264791363012e-1f, 6.931472028550421e-1f, 1.0f};
inline float fast_exp2(float x) {
  x = x < -127.0f ? -127.0f : (x > 127.0f ? 127.0f : x);
  const float xi = __builtin_floorf(x + 0.5f);
  const float f = x - xi;  // [-0.5, 0.5]
  float p = kExp2Poly[0];
  for (int i = 1; i < 7; ++i) p = p * f + kExp2Poly[i];
  const std::int32_t e = static_cast<std::int32_t>(xi) + 127;  // 0 .. 254
  std::int32_t bits = e << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

// Softmax row helpers, AVX2 + FMA where the build has them (x86-64-v3), else scalar loops.
// row_max: max(init, s[0], …, s[n−1]), ignoring NaN elements as std::max(m, x) does.
float row_max(const float* s, std::int64_t n, float init);
// s[c] = fast_exp2((s[c] − shift)·mul) for c < n, in place; returns their sum. The same
// polynomial as fast_exp2 (a NaN element stays NaN; x ≤ −127 gives 0).
float exp2_row_sum(float* s, std::int64_t n, float shift, float mul);

}  // namespace longmix
