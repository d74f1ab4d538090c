// Small GPU helpers shared by the ops: cuBLASLt products and linear layer, dtype conversion, poison.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cublasLt.h>

#include <cmath>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

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

std::vector<cublasLtMatmulHeuristicResult_t> heuristics(cublasLtHandle_t lt, const LtPlan& p, const LtKey& k,
                                                        int n);

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
  const auto r = heuristics(lt, p, k, 1);
  p.algo = r[0].algo;
  return p;
}

// Up to n of cuBLASLt's heuristic candidates for the plan's shape, best guess first; throws when
// there is none.
std::vector<cublasLtMatmulHeuristicResult_t> heuristics(cublasLtHandle_t lt, const LtPlan& p, const LtKey& k, int n) {
  cublasLtMatmulPreference_t pref = nullptr;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &k.ws,
                                                    sizeof(k.ws)));
  std::vector<cublasLtMatmulHeuristicResult_t> r(static_cast<std::size_t>(n));
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, p.op, p.a, p.b, p.d, p.d, pref, n, r.data(), &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0)
    throw RuntimeFailure(detail::concat("cuBLASLt has no algorithm for a ", k.m, "x", k.n, "x", k.k, " product",
                             k.bias ? " with a bias epilogue" : "", " (", cublasGetStatusString(st), ")"));
  r.resize(static_cast<std::size_t>(found));
  return r;
}

LtKey key_of(DType t, const GemmArgs& g, const CudaContext& ctx) {
  return LtKey{int(t), g.ta,  g.tb,  g.bias != nullptr, g.m,  g.n,  g.k,  g.lda,
               g.ldb,  g.ldd, ctx.workspace_bytes, g.batch, g.sa, g.sb, g.sd};
}

// The cached setup of a shape, made on first use. Entries are never removed, so the reference
// stays valid.
LtPlan& lt_plan(cublasLtHandle_t lt, const LtKey& key) {
  static std::mutex mu;
  static std::map<LtKey, LtPlan> plans;
  std::lock_guard<std::mutex> lock(mu);
  auto it = plans.find(key);
  if (it == plans.end()) it = plans.emplace(key, make_lt_plan(lt, key)).first;
  return it->second;
}

// A cuBLAS handle is a cuBLASLt handle (cuBLAS documentation, cublasLtHandle_t).
cublasLtHandle_t lt_of(const CudaContext& ctx) { return reinterpret_cast<cublasLtHandle_t>(ctx.cublas); }

cublasStatus_t run_lt(const LtPlan& p, const cublasLtMatmulAlgo_t& algo, const GemmArgs& g, CudaContext& ctx) {
  if (g.bias)
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)));
  const float alpha = 1.0f, beta = 0.0f;
  return cublasLtMatmul(lt_of(ctx), p.op, &alpha, g.A, p.a, g.B, p.b, &beta, g.D, p.d, g.D, p.d, &algo,
                        ctx.workspace, ctx.workspace_bytes, ctx.stream);
}
}  // namespace

void gemm_cuda(DType t, const GemmArgs& g, CudaContext& ctx) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  const LtPlan& p = lt_plan(lt_of(ctx), key_of(t, g, ctx));
  CUBLAS_CHECK(run_lt(p, p.algo, g, ctx));
}

GemmTuning gemm_tune_cuda(DType t, const GemmArgs& g, CudaContext& ctx, void* flush, std::size_t flush_bytes,
                          int candidates) {
  GemmTuning res;
  if (g.m == 0 || g.n == 0 || g.batch == 0) return res;
  const LtKey key = key_of(t, g, ctx);
  LtPlan& p = lt_plan(lt_of(ctx), key);
  const auto cands = heuristics(lt_of(ctx), p, key, std::max(1, candidates));
  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  const auto time_ms = [&](const cublasLtMatmulAlgo_t& algo) -> float {
    if (run_lt(p, algo, g, ctx) != CUBLAS_STATUS_SUCCESS) return -1.0f;  // warm-up; unusable here
    float best = -1.0f;
    for (int r = 0; r < 3; ++r) {
      if (flush_bytes) CUDA_CHECK(cudaMemsetAsync(flush, r, flush_bytes, ctx.stream));
      CUDA_CHECK(cudaEventRecord(e0, ctx.stream));
      CUBLAS_CHECK(run_lt(p, algo, g, ctx));
      CUDA_CHECK(cudaEventRecord(e1, ctx.stream));
      CUDA_CHECK(cudaEventSynchronize(e1));
      float ms = 0.0f;
      CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
      if (best < 0.0f || ms < best) best = ms;
    }
    return best;
  };
  int best_i = -1;
  float best_ms = -1.0f;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    if (cands[i].state != CUBLAS_STATUS_SUCCESS || cands[i].workspaceSize > ctx.workspace_bytes) continue;
    const float ms = time_ms(cands[i].algo);
    if (ms < 0.0f) continue;
    if (i == 0) res.heuristic_ms = ms;
    if (best_i < 0 || ms < best_ms) {
      best_i = static_cast<int>(i);
      best_ms = ms;
    }
  }
  CUDA_CHECK(cudaEventDestroy(e0));
  CUDA_CHECK(cudaEventDestroy(e1));
  res.candidates = static_cast<int>(cands.size());
  if (best_i >= 0) {
    p.algo = cands[static_cast<std::size_t>(best_i)].algo;
    res.chosen = best_i;
    res.chosen_ms = best_ms;
  }
  return res;
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

// Element i: the top 24 bits of splitmix64(seed + i) mapped to [lo, hi).
template <typename T>
__global__ void uniform_kernel(T* p, std::size_t n, float lo, float hi, unsigned long long seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    unsigned long long z = seed + i * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    p[i] = from_float<T>(lo + (hi - lo) * static_cast<float>(z >> 40) * (1.0f / 16777216.0f));
  }
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

void fill_uniform_cuda(DType t, void* p, std::size_t n, float lo, float hi, std::uint64_t seed, cudaStream_t s) {
  if (!n) return;
  LONGMIX_DISPATCH(t, uniform_kernel<T><<<grid_for(n), 256, 0, s>>>(static_cast<T*>(p), n, lo, hi, seed));
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
