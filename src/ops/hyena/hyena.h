// The Hyena operator (Poli et al. 2023) exactly as the reference PyTorch HyenaOperator
// computes it (SPEC §3), with its parameter names and default initialisation.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "memory/allocator.h"

namespace longmix {

struct HyenaConfig {
  std::int64_t D = 256;           // d_model
  std::int64_t l_max = 4096;      // longest length; fixes the filter's time grid
  int order = 2;                  // N
  int filter_order = 64;          // F, width of the filter MLP
  int emb_dim = 3;                // E
  int num_inner_mlps = 2;
  int short_filter_order = 3;
  float w = 1.0f;                 // Sin frequency init
  float fast_decay_pct = 0.3f, slow_decay_pct = 1.5f, target = 1e-2f, shift = 0.0f;

  std::int64_t C() const { return (order + 1) * D; }          // in_proj width
  std::int64_t Dh() const { return (order - 1) * D; }         // filter channels
  int bands() const { return (emb_dim - 1) / 2; }
  int num_linear() const { return num_inner_mlps + 2; }       // MLP linears incl. the last
  void validate() const;  // throws InvalidArgument naming the bad field
};

// One named tensor of the reference module's state_dict.
struct NamedTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float>* data;
};

struct HyenaWeights {
  HyenaConfig cfg;
  std::vector<float> in_proj_weight;       // (C, D)
  std::vector<float> in_proj_bias;         // (C)
  std::vector<float> short_filter_weight;  // (C, 1, 3)
  std::vector<float> short_filter_bias;    // (C)
  std::vector<float> filter_bias;          // filter_fn.bias ((N-1)D)
  std::vector<float> pos_emb_z;            // filter_fn.pos_emb.z (1, l_max, E)
  std::vector<float> pos_emb_t;            // filter_fn.pos_emb.t (1, l_max, 1)
  // filter_fn.implicit_filter.{0,2,..}.weight/bias: mlp_weight[i] (out, in), mlp_bias[i].
  // The last linear ((N-1)D, F) has no bias (mlp_bias.back() stays empty).
  std::vector<std::vector<float>> mlp_weight, mlp_bias;
  std::vector<float> freq;                 // implicit_filter.{1,3,5}.freq (1, F), one shared tensor
  std::vector<float> modulation_deltas;    // filter_fn.modulation.deltas (1, 1, (N-1)D)
  std::vector<float> out_proj_weight;      // (D, D)
  std::vector<float> out_proj_bias;        // (D)

  // PyTorch's default initialisation from a seed (SPEC §3); deterministic buffers computed.
  static HyenaWeights init(const HyenaConfig& cfg, std::uint64_t seed);
  // state_dict names and shapes; the shared freq appears once per Sin, like PyTorch lists it.
  std::vector<NamedTensor> named();
  void validate() const;  // every tensor has its config's shape
  // For a plan of implementation `impl` at (B, L): validate(), then `unsupported` must be empty
  // (the implementation's reason it cannot run), B and L positive and L <= l_max.
  void require_plan(const std::string& impl, std::int64_t B, std::int64_t L, const std::string& unsupported) const;
};

// Pointers into weights held wherever the backend keeps them.
struct HyenaView {
  HyenaConfig cfg;
  const float *in_proj_weight, *in_proj_bias, *short_filter_weight, *short_filter_bias,
      *filter_bias, *pos_emb_z, *pos_emb_t, *freq, *modulation_deltas, *out_proj_weight,
      *out_proj_bias;
  std::vector<const float*> mlp_weight, mlp_bias;
};
HyenaView view_of(const HyenaWeights& w);

// The implicit filter h from the weights alone (SPEC §3 step 4), fp32: (L, (N-1)D) as the
// reference holds it (kTimeMajor), or its transpose ((N-1)D, L), one contiguous row a channel
// (kChannelMajor, what the FFT convolution reads).
enum class FilterLayout { kTimeMajor, kChannelMajor };
void hyena_filter_cpu(const HyenaView& w, std::int64_t L, float* h, Allocator& alloc,
                      FilterLayout layout = FilterLayout::kTimeMajor);

// Reusable state of a CPU forward: FFTW plans per length and, for filter=cached, the filter's
// spectra. Build once per (weights, L) outside the timed region.
class HyenaCpuPlan {
 public:
  HyenaCpuPlan(const HyenaView& w, std::int64_t L, bool cache_filter, Allocator& alloc);
  ~HyenaCpuPlan();
  HyenaCpuPlan(const HyenaCpuPlan&) = delete;
  HyenaCpuPlan& operator=(const HyenaCpuPlan&) = delete;
  std::int64_t L() const { return L_; }
  bool cached() const { return cached_; }

  // Core: z (B, L, C) = in_proj output -> yg (B, L, D) = v ⊙ x0 before out_proj.
  void core(std::int64_t B, const float* z, float* yg, Allocator& alloc);
  // Whole operator: u (B, L, D) -> y (B, L, D).
  void forward(std::int64_t B, const float* u, float* y, Allocator& alloc);

 private:
  // Steps 4-6 on channel-major rows: zT (B, C, L) -> yT (B, D, L).
  void core_channel_major(std::int64_t B, const float* zT, float* yT, Allocator& alloc);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  HyenaView w_;
  std::int64_t L_;
  bool cached_;
};

// One-shot forward (plans built and dropped inside).
void hyena_forward_cpu(const HyenaView& w, std::int64_t B, std::int64_t L, const float* u, float* y,
                       Allocator& alloc);

// Causal convolution by FFT of size 2L: y[t] = sum_{s<=t} h[t-s] x[s] (one channel).
void causal_conv_fft_cpu(std::int64_t L, const float* x, const float* h, float* y);

std::string fftw_version();

}  // namespace longmix
