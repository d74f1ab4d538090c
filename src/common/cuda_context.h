// What every GPU op runs with: one stream, the library handles bound to it, the allocator.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "memory/allocator.h"

namespace longmix {

enum class DType { kF32, kF16, kBF16 };
DType parse_dtype(const std::string& s);
std::size_t dtype_size(DType t);

struct CudaContext {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  Allocator* alloc = nullptr;
  void* workspace = nullptr;  // cuBLAS(Lt)'s workspace (from alloc), lent by the runner; may be empty
  std::size_t workspace_bytes = 0;
};

// Column-major D (m, n) = op(A) · op(B) (+ bias (m)), A, B, D and the bias in dtype t, fp32
// accumulation, through cuBLASLt with the bias in the epilogue (as PyTorch's addmm does). The
// algorithm is cuBLASLt's first heuristic choice for the shape, cached per shape.
struct GemmArgs {
  bool ta = false, tb = false;  // op(A) = Aᵀ, op(B) = Bᵀ
  std::int64_t m = 0, n = 0, k = 0;
  const void* A = nullptr;
  std::int64_t lda = 0;
  const void* B = nullptr;
  std::int64_t ldb = 0;
  void* D = nullptr;
  std::int64_t ldd = 0;
  const void* bias = nullptr;  // (m) or none
  // Strided batches: batch products, operand i of product j at X + j·sX elements (0: shared).
  int batch = 1;
  std::int64_t sa = 0, sb = 0, sd = 0;
};
void gemm_cuda(DType t, const GemmArgs& g, CudaContext& ctx);

// Times up to `candidates` of cuBLASLt's heuristic algorithms for g's shape on g's operands
// (writing g.D; ctx.stream is synchronised; never inside a graph capture) and makes the fastest
// the one gemm_cuda uses for that shape from then on. Times are the best of three calls, each
// after writing flush_bytes at flush (memory disjoint from the operands; a region larger than
// L2 makes the operands come from DRAM, as they do inside a forward).
//
// enumerate: also every configuration cuBLASLt enumerates for the types (algorithm ids × their
// tiles × stages × cluster shapes auto, 1×1, 2×1, 1×2 × CTA swizzling; no split-K) that
// cublasLtMatmulAlgoCheck accepts for the shape within the workspace, at most
// kGemmEnumerateMax of them (evenly spaced when there are more): each is screened with one
// timed call, and the eight fastest of heuristic and enumerated together get the three calls.
// The heuristic offers at most 8 algorithms for the hyena-fused projections' shapes
// (bench/NOTES.md, v19).
struct GemmTuning {
  int candidates = 0;         // algorithms the heuristic offered
  int enumerated = 0;         // enumerated configurations accepted for the shape (enumerate only)
  int chosen = -1;            // index of the fastest (0: the heuristic's first choice; from
                              // `candidates` on: an enumerated one)
  float heuristic_ms = -1.0f;  // the first choice's time (-1: it could not run)
  float chosen_ms = -1.0f;
  std::string chosen_config;  // algorithm id, tile, stages, cluster shape, swizzle of the choice
};
constexpr int kGemmEnumerateMax = 384;
GemmTuning gemm_tune_cuda(DType t, const GemmArgs& g, CudaContext& ctx, void* flush = nullptr,
                          std::size_t flush_bytes = 0, int candidates = 8, bool enumerate = false);

// Y (M, N) = X (M, K) · W (N, K)ᵀ (+ bias (N), dtype t) in dtype t with fp32 accumulation.
void linear_cuda(DType t, std::int64_t M, std::int64_t N, std::int64_t K, const void* X, const void* W,
                 const void* bias, void* Y, CudaContext& ctx);
// dst (n, dtype t) = src (n, float).
void convert_from_float_cuda(DType t, const float* src, void* dst, std::size_t n, cudaStream_t s);
// dst (n, float) = src (n, dtype t).
void convert_to_float_cuda(DType t, const void* src, float* dst, std::size_t n, cudaStream_t s);
// Fills n elements of dtype t with NaN (poisons outputs before a test).
void fill_nan_cuda(DType t, void* p, std::size_t n, cudaStream_t s);
// n elements of type t at p, uniform in [lo, hi) from a counter-based hash of (seed, index):
// the same values for the same seed on every device and launch shape.
void fill_uniform_cuda(DType t, void* p, std::size_t n, float lo, float hi, std::uint64_t seed, cudaStream_t s);
// A device copy of host floats stored in dtype t (from the allocator; synchronous).
Buffer<char> upload_as(Allocator& a, const std::vector<float>& v, DType t, cudaStream_t s);
// The first n elements of a dtype-t device buffer as host floats (synchronous).
std::vector<float> download_as(const Buffer<char>& b, std::size_t n, DType t, Allocator& a, cudaStream_t s);

// Test hook for fault isolation: "illegal-address" launches a kernel that writes through a bad
// pointer, "hang" one that never ends; either way the calling process's CUDA context is lost.
void inject_gpu_fault(const std::string& kind);

}  // namespace longmix
