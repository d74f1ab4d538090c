// Attention forward on the CPU (SPEC §2): standard attention (materialises S and P, O(L²)
// memory) and FlashAttention (tiles over keys with an online softmax, O(L) memory).
// q, k, v, o: (B, L, H, d) row-major, the layout of flash_attn_func. lse: (B, H, L) fp32,
// natural-log log-sum-exp of the scaled scores of each query row.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "memory/allocator.h"

namespace longmix {

struct AttentionParams {
  std::int64_t B = 1, L = 0, H = 4, d = 64;
  bool causal = true;
  float scale = 0;  // 0 -> 1/sqrt(d)

  std::int64_t D() const { return H * d; }
  float softmax_scale() const;
  void validate() const;  // throws InvalidArgument naming the bad field
  // Causal forward FLOPs 4·B·H·L²·d/2 (non-causal: 4·B·H·L²·d), SPEC §2.
  double flops() const;
};

// Standard attention: S = scale·QKᵀ and P = softmax(S) for every (b, h) held at once,
// B·H·L² floats taken from `alloc` (O(L²)); then O = PV. lse may be null.
void attention_standard_cpu(const AttentionParams& p, const float* q, const float* k,
                            const float* v, float* o, float* lse, Allocator& alloc);

// FlashAttention-2 style forward: per (b, h, block of kBlockM queries), loops over key
// blocks of kBlockN with a running max and sum; never stores S. Working memory per thread is
// O(kBlockM·kBlockN); writes o and lse (lse required).
void attention_flash_cpu(const AttentionParams& p, const float* q, const float* k, const float* v,
                         float* o, float* lse, Allocator& alloc);

// The attention layer (SPEC §2): qkv = x·Wqkvᵀ + b (D→3D, channels (3, H, d)), attention,
// y = o·Woutᵀ + b. Parameter names are those of the FlashAttention library's MHA module.
struct AttentionLayerWeights {
  std::int64_t D = 0, H = 0;
  std::vector<float> Wqkv_weight;      // (3D, D)
  std::vector<float> Wqkv_bias;        // (3D)
  std::vector<float> out_proj_weight;  // (D, D)
  std::vector<float> out_proj_bias;    // (D)
  // PyTorch's nn.Linear default: uniform ±1/sqrt(fan_in) for weights and biases.
  static AttentionLayerWeights init(std::int64_t D, std::int64_t H, std::uint64_t seed);
};

struct AttentionLayerView {
  const float* Wqkv_weight;
  const float* Wqkv_bias;
  const float* out_proj_weight;
  const float* out_proj_bias;
};

enum class AttentionKind { kStandard, kFlash };

// x, y: (B, L, D). Intermediates (qkv (B, L, 3D), o (B, L, D), lse) come from alloc.
void attention_layer_cpu(const AttentionParams& p, const AttentionLayerView& w, const float* x,
                         float* y, AttentionKind kind, Allocator& alloc);

}  // namespace longmix
