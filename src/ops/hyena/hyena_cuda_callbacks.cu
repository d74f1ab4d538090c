// hyena-cuda's cuFFT LTO callbacks; see hyena_cuda_callbacks.h. Compiled to LTO-IR only
// (CMake embeds the fatbin); the symbols are extern "C" so the host names them to cuFFT.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cufftXt.h>

#include "ops/hyena/hyena_cuda_callbacks.h"

namespace {
using longmix::HyenaCallbackInfo;

__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ void put(__half* p, float x) { *p = __float2half_rn(x); }
__device__ __forceinline__ void put(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }

// q = off / n, r = off - q·n for off < 2^50 through a double product (exact after the fix-up).
__device__ __forceinline__ void divmod(unsigned long long off, std::int64_t n, double inv, std::int64_t& q,
                                       std::int64_t& r) {
  q = static_cast<std::int64_t>(static_cast<double>(off) * inv);
  r = static_cast<std::int64_t>(off) - q * n;
  if (r < 0) { --q; r += n; }
  else if (r >= n) { ++q; r -= n; }
}

// Short conv (causal, K taps) of channel gc's row at t < L.
template <typename T>
__device__ __forceinline__ float conv_at(const HyenaCallbackInfo* I, const T* row, std::int64_t gc, std::int64_t t) {
  float acc = I->bs[gc];
  const float bi = I->b_in ? I->b_in[gc] : 0.0f;
  for (int j = 0; j < I->K; ++j) {
    const std::int64_t ts = t - (I->K - 1) + j;
    if (ts >= 0) acc += I->w[gc * I->K + j] * (to_f(row[ts]) + bi);
  }
  return acc;
}

template <typename T>
__device__ __forceinline__ cufftReal load_signal(unsigned long long off, const HyenaCallbackInfo* I) {
  std::int64_t row, t, b, c;
  divmod(off, I->R, I->inv_R, row, t);
  if (t >= I->L) return 0.0f;
  divmod(static_cast<unsigned long long>(row), I->D, I->inv_D, b, c);
  const T* zl = static_cast<const T*>(I->zl);
  const std::int64_t D = I->D, L = I->L;
  return conv_at(I, zl + (b * 2 * D + c) * L, D + c, t) * conv_at(I, zl + ((b * 2 + 1) * D + c) * L, 2 * D + c, t);
}

template <typename T>
__device__ __forceinline__ void store_output(unsigned long long off, cufftReal y, const HyenaCallbackInfo* I) {
  std::int64_t row, t, b, c;
  divmod(off, I->R, I->inv_R, row, t);
  if (t >= I->L) return;
  divmod(static_cast<unsigned long long>(row), I->D, I->inv_D, b, c);
  const T* zg = static_cast<const T*>(I->zg);
  put(static_cast<T*>(I->ygc) + row * I->L + t, y * conv_at(I, zg + row * I->L, c, t));
}
}  // namespace

extern "C" __device__ cufftReal longmix_hyena_load_signal_f16(void*, unsigned long long off, void* info, void*) {
  return load_signal<__half>(off, static_cast<const HyenaCallbackInfo*>(info));
}
extern "C" __device__ cufftReal longmix_hyena_load_signal_bf16(void*, unsigned long long off, void* info, void*) {
  return load_signal<__nv_bfloat16>(off, static_cast<const HyenaCallbackInfo*>(info));
}
extern "C" __device__ void longmix_hyena_store_output_f16(void*, unsigned long long off, cufftReal y, void* info,
                                                          void*) {
  store_output<__half>(off, y, static_cast<const HyenaCallbackInfo*>(info));
}
extern "C" __device__ void longmix_hyena_store_output_bf16(void*, unsigned long long off, cufftReal y, void* info,
                                                           void*) {
  store_output<__nv_bfloat16>(off, y, static_cast<const HyenaCallbackInfo*>(info));
}

// The filter: h (D, L) ⊙ (exp(-t_t |δ_c|) + shift), zero padded.
extern "C" __device__ cufftReal longmix_hyena_load_filter(void*, unsigned long long off, void* info, void*) {
  const auto* I = static_cast<const HyenaCallbackInfo*>(info);
  std::int64_t c, t;
  divmod(off, I->R, I->inv_R, c, t);
  if (t >= I->L) return 0.0f;
  return I->h[c * I->L + t] * (__expf(-I->tgrid[t] * fabsf(I->deltas[c])) + I->shift);
}

// The spectral product with the skip term folded in: U · (H + skip) / 2L.
extern "C" __device__ cufftComplex longmix_hyena_load_spectrum(void* data, unsigned long long off, void* info, void*) {
  const auto* I = static_cast<const HyenaCallbackInfo*>(info);
  std::int64_t row, f, b, c;
  divmod(off, I->nc, I->inv_nc, row, f);
  divmod(static_cast<unsigned long long>(row), I->D, I->inv_D, b, c);
  const float2 h = I->Hf[c * I->nc + f];
  const float hx = (h.x + I->skip[c]) * I->inv_n, hy = h.y * I->inv_n;
  const cufftComplex u = static_cast<const cufftComplex*>(data)[off];
  return make_cuComplex(u.x * hx - u.y * hy, u.x * hy + u.y * hx);
}
