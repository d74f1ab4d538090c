// flash-own: the project's own FlashAttention forward (SPEC §2) for NVIDIA GPUs, fp16/bf16
// storage, fp32 accumulation and softmax, head dims 64 and 128, causal and not, any L.
// Writes O and the fp32 row log-sum-exp (natural log). Kernel versions and their measured
// speed are logged at the top of attention_flash.cu; bench/NOTES.md has the floors.
//
// q, k, v: (B, L, H, d) with rows ld_in elements apart (D for (B, L, H, d), 3D inside the
// layer's qkv); o: (B, L, H, d) with rows ld_o apart; lse: (B, H, L) fp32.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/cuda_context.h"
#include "ops/attention/attention.h"

namespace longmix {

struct FlashOwnArgs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;
  std::int64_t ld_in = 0, ld_o = 0;
  // Scratch of the -split and -persist variants (flash_own_workspace): zeroed before its first
  // use, left zeroed by every call; nullptr / 0 for the other variants.
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  // -persist variants: at most this many CTAs (0: one per SM). The tests use a few, so that each
  // CTA runs many items.
  int max_ctas = 0;
};

// Empty when flash-own can run (p, t) on this device with these strides, else the reason.
std::string flash_own_unsupported(const AttentionParams& p, DType t);

// Kernel variants (tile shapes and pipelines); "" picks the default for (p, t). bench/ times
// them all, the tests check them all.
std::vector<std::string> flash_own_variants(const AttentionParams& p);

// Bytes of workspace `variant` needs for p on this device: 8 for a -persist variant (its item
// counters); 0 unless it is a -split variant and
// p's grid is too short to keep every SM busy (fewer query blocks of 128 rows than ~1.3 per SM
// when causal, ~0.7 when not), then B·H · L/128 · chunks · (d/8 + 1) · 4 KB (e.g. 19 MB at L = 4k, H = 4, d = 64).
std::size_t flash_own_workspace_bytes(const AttentionParams& p, const std::string& variant);

// How the -split variants cut p's key ranges on a GPU of n_sm SMs (host-only; exposed for tests):
// query blocks of 128 rows, key tiles of 128; chunk == n_max means no cut (items empty), else the
// (query block, chunk index) items, longest first, each covering chunk key tiles (the last of a
// block fewer), counted from the diagonal down.
inline constexpr int kFlashSplitMaxItems = 512;
struct FlashSplitPlan {
  int num_m = 0, n_max = 0, chunk = 0, s_max = 1;
  std::vector<std::pair<int, int>> items;
  bool cut() const { return chunk < n_max; }
};
FlashSplitPlan flash_own_split_plan(const AttentionParams& p, int n_sm);

// That workspace from alloc, zeroed on s (an empty buffer when none is needed).
Buffer<char> flash_own_workspace(const AttentionParams& p, const std::string& variant, Allocator& alloc,
                                 cudaStream_t s);

// Plan-time tuning on scratch inputs of this shape from `alloc` (uniform random q, k, v; at most
// 256k rows, the ranking of longer lengths being that of 256k): every candidate
// (flash_own_tune_candidates) is screened with one warm-up and two timed calls (CUDA events; the
// timed calls in shuffled turns),
// those within 4% of the fastest (at most four; from L = 64k on also the fastest -persist
// variant) are timed call by call in turns, a fresh order each round (TurnOrder), until each has
// >= 9 calls and >= 40 ms of them (at most 200), and the lowest median wins;
// cached per shape and input layout for the process. Falls back to the first candidate when the
// scratch inputs do not fit. Synchronises `s`: call it at setup.
// ld_in: the row stride (elements) of q, k, v in the calls to come (FlashOwnArgs::ld_in; 0: D).
// The scratch inputs are laid out the same way: q, k and v inside one (B, L, ld_in / D, H, d)
// buffer at column offsets 0, D, 2D when ld_in >= 3D (the layer's packed qkv), else three
// buffers of rows ld_in apart. The ranking depends on it: at H = 16 the layer's 6 KB rows and the
// core scope's 2 KB rows put different variants first (bench/NOTES.md, tuner v4f).
std::string flash_own_tune(const AttentionParams& p, DType t, Allocator& alloc, cudaStream_t s,
                           std::int64_t ld_in = 0);
// The tuner's choice among `variants` (host-only; flash_own_tune passes one call of a variant
// timed by CUDA events, the tests a fake): one warm-up call each, then two timed calls each in
// shuffled turns (the screening); the finalists (flash_own_tune_finalists: within 4% of the
// fastest, at most four, and with_persist the fastest -persist/-persist-lpt variant too) one
// warm-up each, then in shuffled turns until each has >= 9 calls and >= 40 ms of them (at most
// 200); the lowest median wins. call_ms(v): run one call of v, return its time in ms.
std::string flash_own_tune_pick(const std::vector<std::string>& variants, bool with_persist,
                                const std::function<float(const std::string&)>& call_ms);
// LONGMIX_FLASH_VARIANT when set (flash_own_tune then returns it without timing anything: to
// time one kernel in the sweep's turns), else ""; throws InvalidArgument naming the variants of
// p when it is not one of them.
std::string flash_own_forced_variant(const AttentionParams& p);
// The variants flash_own_tune times: the "ws-" family on a Hopper GPU, every variant elsewhere.
std::vector<std::string> flash_own_tune_candidates(const AttentionParams& p);
// The screening's survivors (host-only; exposed for tests): names whose time is within
// (1 + band) of the fastest, fastest first, at most max_finalists; ties keep the input order;
// then `also` (when not empty) if it is not among them.
std::vector<std::string> flash_own_tune_finalists(const std::vector<std::pair<float, std::string>>& screened,
                                                  double band, std::size_t max_finalists,
                                                  const std::string& also = "");

// Heads a group of the -lpt item order under LONGMIX_FLASH_LPT_GROUP=l2 (v4d, measured and not the
// default, which takes all b·h at once): the most b·h whose K and V (2-byte elements, L rows of
// d) fit half of l2_bytes, at least 1, at most bh.
int flash_own_lpt_group(std::int64_t L, int d, int bh, std::size_t l2_bytes);
// The (query block, b·h) of each item of a persistent grid in the order the CTAs take them (host
// copy of the kernel's mapping, for tests): groups of `group` b·h, within one each query block
// (longest first when causal) over the group's heads.
std::vector<std::pair<int, int>> flash_own_persist_order(int bh, int num_m, int group, bool causal);

// One forward on s. Memory is O(L): the output, the LSE and, for -split variants, the workspace.
void flash_own_forward(const AttentionParams& p, DType t, const FlashOwnArgs& a, cudaStream_t s,
                       const std::string& variant = "");

}  // namespace longmix
