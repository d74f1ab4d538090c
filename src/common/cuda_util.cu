// Small GPU helpers shared by the ops: cuBLASLt products and linear layer, dtype conversion, poison.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cublasLt.h>

#include <algorithm>
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

namespace {
// The enumerable configurations of the plan's types that cublasLtMatmulAlgoCheck accepts for its
// shape within ws bytes of workspace (gemm_tune_cuda's `enumerate`; split-K left at its default of
// none), at most max_configs of them,
// evenly spaced over the accepted ones when there are more.
std::vector<cublasLtMatmulAlgo_t> enumerated_algos(cublasLtHandle_t lt, const LtPlan& p, const LtKey& k,
                                                   std::size_t max_configs) {
  const cudaDataType_t ct = cuda_dtype(static_cast<DType>(k.t));
  int ids[128], n_ids = 0;
  if (cublasLtMatmulAlgoGetIds(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, ct, ct, ct, ct, 128, ids, &n_ids) !=
      CUBLAS_STATUS_SUCCESS)
    return {};
  int dev = 0, cluster_launch = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, dev));
  std::vector<std::uint16_t> clusters = {CUBLASLT_CLUSTER_SHAPE_AUTO};
  if (cluster_launch)
    clusters.insert(clusters.end(), {static_cast<std::uint16_t>(CUBLASLT_CLUSTER_SHAPE_1x1x1),
                                     static_cast<std::uint16_t>(CUBLASLT_CLUSTER_SHAPE_2x1x1),
                                     static_cast<std::uint16_t>(CUBLASLT_CLUSTER_SHAPE_1x2x1)});
  // A capability list (tiles, stages) of algo, {fallback} when it has none.
  auto cap_list = [](const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr, int fallback) {
    std::size_t bytes = 0;
    std::vector<int> v;
    if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes) == CUBLAS_STATUS_SUCCESS && bytes) {
      v.resize(bytes / sizeof(int));
      if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, v.data(), bytes, &bytes) != CUBLAS_STATUS_SUCCESS) v.clear();
    }
    if (v.empty()) v.push_back(fallback);
    return v;
  };
  std::vector<cublasLtMatmulAlgo_t> ok;
  for (int i = 0; i < n_ids; ++i) {
    cublasLtMatmulAlgo_t algo;
    if (cublasLtMatmulAlgoInit(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, ct, ct, ct, ct, ids[i], &algo) !=
        CUBLAS_STATUS_SUCCESS)
      continue;
    const std::vector<int> tiles = cap_list(algo, CUBLASLT_ALGO_CAP_TILE_IDS, CUBLASLT_MATMUL_TILE_UNDEFINED);
    const std::vector<int> stages = cap_list(algo, CUBLASLT_ALGO_CAP_STAGES_IDS, CUBLASLT_MATMUL_STAGES_UNDEFINED);
    std::uint32_t swizzle_max = 0;
    std::size_t w = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT, &swizzle_max,
                                          sizeof(swizzle_max), &w) != CUBLAS_STATUS_SUCCESS)
      swizzle_max = 0;
    for (const int tile : tiles)
      for (const int stage : stages)
        for (const std::uint16_t cl : clusters)
          for (std::uint32_t sw = 0; sw <= std::min<std::uint32_t>(swizzle_max, 1); ++sw) {
            cublasLtMatmulAlgo_t a = algo;
            const std::uint32_t tile_u = static_cast<std::uint32_t>(tile), stage_u = static_cast<std::uint32_t>(stage);
            if (cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile_u, sizeof(tile_u)) ||
                cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stage_u, sizeof(stage_u)) ||
                cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cl, sizeof(cl)) ||
                cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &sw, sizeof(sw)))
              continue;
            cublasLtMatmulHeuristicResult_t r{};
            if (cublasLtMatmulAlgoCheck(lt, p.op, p.a, p.b, p.d, p.d, &a, &r) == CUBLAS_STATUS_SUCCESS &&
                r.workspaceSize <= k.ws)
              ok.push_back(a);
          }
  }
  if (ok.size() <= max_configs) return ok;
  std::vector<cublasLtMatmulAlgo_t> picked;
  for (std::size_t j = 0; j < max_configs; ++j) picked.push_back(ok[j * ok.size() / max_configs]);
  return picked;
}

std::string describe_algo(const cublasLtMatmulAlgo_t& a) {
  auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr, auto zero) {
    decltype(zero) v = zero;
    std::size_t w = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&a, attr, &v, sizeof(v), &w);
    return static_cast<long long>(v);
  };
  return detail::concat("algo ", get(CUBLASLT_ALGO_CONFIG_ID, std::int32_t{0}), " tile ",
                        get(CUBLASLT_ALGO_CONFIG_TILE_ID, std::uint32_t{0}), " stages ",
                        get(CUBLASLT_ALGO_CONFIG_STAGES_ID, std::uint32_t{0}), " cluster ",
                        get(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, std::uint16_t{0}), " swizzle ",
                        get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, std::uint32_t{0}));
}
}  // namespace

GemmTuning gemm_tune_cuda(DType t, const GemmArgs& g, CudaContext& ctx, void* flush, std::size_t flush_bytes,
                          int candidates, bool enumerate) {
  GemmTuning res;
  if (g.m == 0 || g.n == 0 || g.batch == 0) return res;
  const LtKey key = key_of(t, g, ctx);
  LtPlan& p = lt_plan(lt_of(ctx), key);
  const auto cands = heuristics(lt_of(ctx), p, key, std::max(1, candidates));
  std::vector<cublasLtMatmulAlgo_t> pool;  // the heuristic's usable ones, then the enumerated
  std::vector<int> index;                  // each one's index for GemmTuning::chosen
  for (std::size_t i = 0; i < cands.size(); ++i)
    if (cands[i].state == CUBLAS_STATUS_SUCCESS && cands[i].workspaceSize <= ctx.workspace_bytes) {
      pool.push_back(cands[i].algo);
      index.push_back(static_cast<int>(i));
    }
  if (enumerate) {
    const auto more = enumerated_algos(lt_of(ctx), p, key, kGemmEnumerateMax);
    res.enumerated = static_cast<int>(more.size());
    for (std::size_t j = 0; j < more.size(); ++j) {
      pool.push_back(more[j]);
      index.push_back(static_cast<int>(cands.size() + j));
    }
  }
  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  // One call of an algorithm that ran (its warm-up did), after writing flush_bytes of `fill`.
  const auto call_ms = [&](const cublasLtMatmulAlgo_t& algo, int fill) -> float {
    if (flush_bytes) CUDA_CHECK(cudaMemsetAsync(flush, fill, flush_bytes, ctx.stream));
    CUDA_CHECK(cudaEventRecord(e0, ctx.stream));
    CUBLAS_CHECK(run_lt(p, algo, g, ctx));
    CUDA_CHECK(cudaEventRecord(e1, ctx.stream));
    CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    return ms;
  };
  // A warm-up call; false when the algorithm cannot run here.
  const auto runs = [&](const cublasLtMatmulAlgo_t& algo) { return run_lt(p, algo, g, ctx) == CUBLAS_STATUS_SUCCESS; };
  const auto time_ms = [&](const cublasLtMatmulAlgo_t& algo) -> float {
    if (!runs(algo)) return -1.0f;
    float best = -1.0f;
    for (int r = 0; r < 3; ++r) {
      const float ms = call_ms(algo, r);
      if (best < 0.0f || ms < best) best = ms;
    }
    return best;
  };
  // Which of the pool get the three calls: all of the heuristic's without enumerate (as before),
  // else the kFinalists fastest of one warm-up and one timed call each.
  constexpr std::size_t kFinalists = 8;
  std::vector<std::size_t> finalists;
  if (!enumerate) {
    for (std::size_t i = 0; i < pool.size(); ++i) finalists.push_back(i);
  } else {
    std::vector<std::pair<float, std::size_t>> screened;
    for (std::size_t i = 0; i < pool.size(); ++i)
      if (runs(pool[i])) screened.push_back({call_ms(pool[i], 0x5a), i});
    std::stable_sort(screened.begin(), screened.end());
    for (std::size_t j = 0; j < screened.size() && j < kFinalists; ++j) finalists.push_back(screened[j].second);
    if (!pool.empty() && index[0] == 0 && std::find(finalists.begin(), finalists.end(), 0) == finalists.end())
      finalists.push_back(0);  // the heuristic's first choice is always timed: heuristic_ms
  }
  int best_i = -1;
  float best_ms = -1.0f;
  for (const std::size_t i : finalists) {
    const float ms = time_ms(pool[i]);
    if (ms < 0.0f) continue;
    if (index[i] == 0) res.heuristic_ms = ms;
    if (best_i < 0 || ms < best_ms) {
      best_i = static_cast<int>(i);
      best_ms = ms;
    }
  }
  CUDA_CHECK(cudaEventDestroy(e0));
  CUDA_CHECK(cudaEventDestroy(e1));
  res.candidates = static_cast<int>(cands.size());
  if (best_i >= 0) {
    p.algo = pool[static_cast<std::size_t>(best_i)];
    res.chosen = index[static_cast<std::size_t>(best_i)];
    res.chosen_ms = best_ms;
    res.chosen_config = describe_algo(p.algo);
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
