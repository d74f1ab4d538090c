// Small GPU helpers shared by the ops: cuBLASLt products and linear layer, dtype conversion, poison.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cublasLt.h>

#include <cmath>
#include <map>
#include <mutex>
#include <tuple>

#include "common/cuda_check.h"
#include "common/cuda_context.h"
#include "common/cuda_types.cuh"

namespace longmix {

DType parse_dtype(const std::string& s) {
  if (s == "fp32") return DType::kF32;
  if (s == "fp16") return DType::kF16;
  if (s == "bf16") return DType::kBF16;
  throw InvalidArgument("unknown dtype '" + s + "' (expected fp32, fp16 or bf16)");
}

std::size_t dtype_size(DType t) { return t == DType::kF32 ? 4 : 2; }

cudaDataType_t cuda_dtype(DType t) {
  return t == DType::kF32 ? CUDA_R_32F : t == DType::kF16 ? CUDA_R_16F : CUDA_R_16BF;
}

namespace {
// One cached cuBLASLt setup per shape: descriptors and the heuristic's algorithm.
struct LtKey {
  int t, ta, tb, bias;
  std::int64_t m, n, k, lda, ldb, ldd;
  std::size_t ws;
  int batch;
  std::int64_t sa, sb, sd;
  auto tie() const { return std::tie(t, ta, tb, bias, m, n, k, lda, ldb, ldd, ws, batch, sa, sb, sd); }
  bool operator<(const LtKey& o) const { return tie() < o.tie(); }
};
struct LtPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

LtPlan make_lt_plan(cublasLtHandle_t lt, const LtKey& k) {
  LtPlan p;
  const cudaDataType_t ct = cuda_dtype(static_cast<DType>(k.t));
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = k.ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb = k.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  const cublasLtEpilogue_t epi = k.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
  // Stored shapes: A is (m, k) or (k, m) when transposed; B is (k, n) or (n, k).
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.a, ct, k.ta ? k.k : k.m, k.ta ? k.m : k.k, k.lda));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.b, ct, k.tb ? k.n : k.k, k.tb ? k.k : k.n, k.ldb));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.d, ct, k.m, k.n, k.ldd));
  if (k.batch > 1) {
    const std::int64_t strides[3] = {k.sa, k.sb, k.sd};
    const cublasLtMatrixLayout_t layouts[3] = {p.a, p.b, p.d};
    for (int i = 0; i < 3; ++i) {
      CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &k.batch,
                                                    sizeof(k.batch)));
      CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                    &strides[i], sizeof(strides[i])));
    }
  }
  cublasLtMatmulPreference_t pref = nullptr;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &k.ws,
                                                    sizeof(k.ws)));
  cublasLtMatmulHeuristicResult_t r{};
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, p.op, p.a, p.b, p.d, p.d, pref, 1, &r, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0)
    throw RuntimeFailure(detail::concat("cuBLASLt has no algorithm for a ", k.m, "x", k.n, "x", k.k, " product",
                             k.bias ? " with a bias epilogue" : "", " (", cublasGetStatusString(st), ")"));
  p.algo = r.algo;
  return p;
}
}  // namespace

void gemm_cuda(DType t, const GemmArgs& g, CudaContext& ctx) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  static std::mutex mu;
  static std::map<LtKey, LtPlan> plans;
  // A cuBLAS handle is a cuBLASLt handle (cuBLAS documentation, cublasLtHandle_t).
  auto lt = reinterpret_cast<cublasLtHandle_t>(ctx.cublas);
  const LtKey key{int(t), g.ta,  g.tb,  g.bias != nullptr, g.m,  g.n,  g.k,  g.lda,
                  g.ldb,  g.ldd, ctx.workspace_bytes, g.batch, g.sa, g.sb, g.sd};
  LtPlan* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = plans.find(key);
    if (it == plans.end()) it = plans.emplace(key, make_lt_plan(lt, key)).first;
    p = &it->second;
  }
  if (g.bias)
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)));
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_CHECK(cublasLtMatmul(lt, p->op, &alpha, g.A, p->a, g.B, p->b, &beta, g.D, p->d, g.D, p->d, &p->algo,
                              ctx.workspace, ctx.workspace_bytes, ctx.stream));
}

void linear_cuda(DType t, std::int64_t M, std::int64_t N, std::int64_t K, const void* X, const void* W,
                 const void* bias, void* Y, CudaContext& ctx) {
  // Row-major Y (M, N) = X (M, K) · W (N, K)ᵀ  <=>  column-major Yᵀ (N, M) = Wᵀ... with
  // A = W stored column-major (K, N), transposed, and B = X stored column-major (K, M).
  GemmArgs g;
  g.ta = true; g.m = N; g.n = M; g.k = K;
  g.A = W; g.lda = K; g.B = X; g.ldb = K; g.D = Y; g.ldd = N; g.bias = bias;
  gemm_cuda(t, g, ctx);
}

template <typename T>
__global__ void from_float_kernel(const float* src, T* dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    dst[i] = from_float<T>(src[i]);
}
template <typename T>
__global__ void to_float_kernel(const T* src, float* dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    dst[i] = to_float(src[i]);
}
template <typename T>
__global__ void nan_kernel(T* p, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = from_float<T>(NAN);
}

namespace {
unsigned grid_for(std::size_t n) {
  return static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 132 * 16));
}
}  // namespace

#define LONGMIX_DISPATCH(t, ...)                        \
  switch (t) {                                          \
    case DType::kF32: { using T = float; __VA_ARGS__; break; }        \
    case DType::kF16: { using T = __half; __VA_ARGS__; break; }       \
    case DType::kBF16: { using T = __nv_bfloat16; __VA_ARGS__; break; } \
  }

void convert_from_float_cuda(DType t, const float* src, void* dst, std::size_t n, cudaStream_t s) {
  if (!n) return;
  LONGMIX_DISPATCH(t, from_float_kernel<T><<<grid_for(n), 256, 0, s>>>(src, static_cast<T*>(dst), n));
  CUDA_CHECK_LAUNCH();
}
void convert_to_float_cuda(DType t, const void* src, float* dst, std::size_t n, cudaStream_t s) {
  if (!n) return;
  LONGMIX_DISPATCH(t, to_float_kernel<T><<<grid_for(n), 256, 0, s>>>(static_cast<const T*>(src), dst, n));
  CUDA_CHECK_LAUNCH();
}
void fill_nan_cuda(DType t, void* p, std::size_t n, cudaStream_t s) {
  if (!n) return;
  LONGMIX_DISPATCH(t, nan_kernel<T><<<grid_for(n), 256, 0, s>>>(static_cast<T*>(p), n));
  CUDA_CHECK_LAUNCH();
}

Buffer<char> upload_as(Allocator& a, const std::vector<float>& v, DType t, cudaStream_t s) {
  Buffer<char> out(a, v.size() * dtype_size(t));
  if (v.empty()) return out;
  Buffer<float> tmp(a, v.size());
  CUDA_CHECK(cudaMemcpyAsync(tmp.data(), v.data(), v.size() * 4, cudaMemcpyHostToDevice, s));
  if (t == DType::kF32) CUDA_CHECK(cudaMemcpyAsync(out.data(), tmp.data(), v.size() * 4, cudaMemcpyDeviceToDevice, s));
  else convert_from_float_cuda(t, tmp.data(), out.data(), v.size(), s);
  CUDA_CHECK(cudaStreamSynchronize(s));
  return out;
}

std::vector<float> download_as(const Buffer<char>& b, std::size_t n, DType t, Allocator& a, cudaStream_t s) {
  std::vector<float> out(n);
  if (!n) return out;
  Buffer<float> tmp(a, n);
  convert_to_float_cuda(t, b.data(), tmp.data(), n, s);
  CUDA_CHECK(cudaMemcpyAsync(out.data(), tmp.data(), n * 4, cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return out;
}

__global__ void fault_kernel(int* p, int hang) {
  if (hang) {
    volatile int spin = 1;
    while (spin) {
    }
  }
  *p = 1;
}

void inject_gpu_fault(const std::string& kind) {
  LONGMIX_REQUIRE(kind == "illegal-address" || kind == "hang", "unknown injected fault '", kind, "'");
  fault_kernel<<<1, 1>>>(reinterpret_cast<int*>(std::uintptr_t{16}), kind == "hang");
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace longmix
