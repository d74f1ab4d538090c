// Standard attention on the GPU: cuBLAS + a row-softmax kernel. See attention_cuda.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cfloat>

#include "common/cuda_check.h"
#include "common/cuda_types.cuh"
#include "ops/attention/attention_cuda.h"

namespace longmix {

cudaDataType_t cuda_dtype(DType t);

namespace {
constexpr int kSoftmaxThreads = 512;

__device__ __forceinline__ float block_reduce(float v, bool is_max, float* smem) {
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  v = lane < blockDim.x / 32 ? smem[lane] : (is_max ? -FLT_MAX : 0.0f);
  if (warp == 0)
    for (int o = 16; o > 0; o >>= 1) {
      const float w = __shfl_xor_sync(0xffffffffu, v, o);
      v = is_max ? fmaxf(v, w) : v + w;
    }
  if (threadIdx.x == 0) smem[0] = v;
  __syncthreads();
  return smem[0];
}

// One block per row of S (rows = H·L of one batch row); in place; causal zeros j > i.
template <typename T>
__global__ void softmax_rows_kernel(T* S, std::int64_t L, bool causal) {
  __shared__ float red[32];
  const std::int64_t row = blockIdx.x;
  const std::int64_t i = row % L;
  T* s = S + row * L;
  const std::int64_t n = causal ? i + 1 : L;
  float mx = -FLT_MAX;
  for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) mx = fmaxf(mx, to_float(s[j]));
  mx = block_reduce(mx, true, red);
  float sum = 0;
  for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) sum += __expf(to_float(s[j]) - mx);
  sum = block_reduce(sum, false, red);
  const float inv = 1.0f / sum;
  for (std::int64_t j = threadIdx.x; j < L; j += blockDim.x)
    s[j] = from_float<T>(j < n ? __expf(to_float(s[j]) - mx) * inv : 0.0f);
}
}  // namespace

void attention_standard_cuda(const AttentionParams& p, DType t, const void* q, const void* k,
                             const void* v, std::int64_t ld_in, void* o, std::int64_t ld_o,
                             CudaContext& ctx) {
  p.validate();
  LONGMIX_REQUIRE(t != DType::kF32, "attention-cuda stores fp16 or bf16");
  const std::int64_t L = p.L, H = p.H, d = p.d;
  const std::size_t es = dtype_size(t);
  Buffer<char> S(*ctx.alloc, static_cast<std::size_t>(H * L * L) * es);  // (H, L, L) per batch row
  const float scale = p.softmax_scale(), one = 1.0f, zero = 0.0f;
  const auto ct = cuda_dtype(t);
  for (std::int64_t b = 0; b < p.B; ++b) {
    const char* qb = static_cast<const char*>(q) + b * L * ld_in * es;
    const char* kb = static_cast<const char*>(k) + b * L * ld_in * es;
    const char* vb = static_cast<const char*>(v) + b * L * ld_in * es;
    char* ob = static_cast<char*>(o) + b * L * ld_o * es;
    // Column-major Sᵀ (L×L) = K·Qᵀ for each head (strides d between heads).
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, int(L), int(L), int(d), &scale, kb, ct, int(ld_in), d,
        qb, ct, int(ld_in), d, &zero, S.data(), ct, int(L), L * L, int(H), CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT));
    if (t == DType::kF16)
      softmax_rows_kernel<__half><<<unsigned(H * L), kSoftmaxThreads, 0, ctx.stream>>>(
          reinterpret_cast<__half*>(S.data()), L, p.causal);
    else
      softmax_rows_kernel<__nv_bfloat16><<<unsigned(H * L), kSoftmaxThreads, 0, ctx.stream>>>(
          reinterpret_cast<__nv_bfloat16*>(S.data()), L, p.causal);
    CUDA_CHECK_LAUNCH();
    // Column-major Oᵀ (d×L) = Vᵀ·Pᵀ.
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        ctx.cublas, CUBLAS_OP_N, CUBLAS_OP_N, int(d), int(L), int(L), &one, vb, ct, int(ld_in), d,
        S.data(), ct, int(L), L * L, &zero, ob, ct, int(ld_o), d, int(H), CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace longmix
