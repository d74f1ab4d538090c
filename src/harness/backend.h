// What the harness knows of an implementation: a Backend makes Runners for named
// implementations; a Runner holds its inputs, weights and plans (all from the backend's
// allocator) and runs one forward call. CPU and CUDA backends implement the same interface.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "memory/allocator.h"
#include "ops/attention/attention.h"
#include "ops/hyena/hyena.h"

namespace longmix {

// What is computed: one row of a sweep.
struct Workload {
  std::string op = "flash";     // flash | attention | hyena
  std::string scope = "layer";  // layer (projections included) | core
  std::int64_t B = 1, L = 4096, H = 4, d = 64;
  std::string dtype = "fp32";   // fp32 | fp16 | bf16
  bool causal = true;
  bool filter_cached = false;   // hyena: filter (and its spectrum) cached across calls
  std::int64_t l_max = 4096;    // hyena: the filter grid's length
  int order = 2;                // hyena
  std::uint64_t seed = 0;
  std::int64_t D() const { return H * d; }
  std::string filter_name() const;  // "recompute" | "cached" | "-"
  std::string describe() const;
};

// Host inputs and weights of a workload, generated from its seed (same on every backend).
struct Problem {
  Workload w;
  std::vector<float> x;        // layer scope: (B, L, D); hyena core: z (B, L, C)
  std::vector<float> q, k, v;  // attention core: (B, L, H, d)
  AttentionLayerWeights attn;  // attention layer
  HyenaWeights hyena;          // hyena (both scopes)
  static Problem make(const Workload& w);
  std::size_t output_size() const;
  // Rounds what the backend stores in `dtype` (inputs, projection weights) so a float64
  // reference of the rounded problem measures the kernels' error, not the input rounding.
  void round_to(const std::string& dtype);
};

// Rounds each value to the nearest value of `dtype` (fp16 or bf16, round to nearest even, as the
// device converts); fp32 leaves them as they are.
void round_to_dtype(std::vector<float>& v, const std::string& dtype);

// float64 reference output of a problem (direct sums; O(L²) work: small shapes only).
std::vector<double> reference_output(const Problem& p);

class Runner {
 public:
  virtual ~Runner() = default;
  virtual void forward() = 0;  // one call; asynchronous backends may return before it ends
  virtual std::vector<float> output() = 0;  // the last call's output, as float on the host
  virtual std::string note() const { return {}; }  // e.g. the kernel variant a plan chose
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu" | "cuda"
  virtual Allocator& allocator() = 0;
  // Implementations of an op on this backend, fastest-first; empty when none.
  virtual std::vector<std::string> impls(const std::string& op) const = 0;
  // Empty when the implementation can run the workload, else the reason it cannot.
  virtual std::string unsupported(const std::string& impl, const Workload& w) const = 0;
  // Builds inputs, weights and plans from the problem; may throw OutOfMemory.
  virtual std::unique_ptr<Runner> make(const std::string& impl, const Problem& p) = 0;
  virtual void synchronize() {}
  // Seconds elapsed during fn as the device measures it (CUDA events on the GPU).
  virtual double time_call(const std::function<void()>& fn);
  virtual std::size_t device_total_bytes() const = 0;
  // Bytes the driver sees in use on the device (GPU) or 0 when not applicable.
  virtual std::size_t device_used_bytes() const { return 0; }
  virtual std::string default_dtype() const = 0;
  // Releases cached memory back to the device (between rows).
  virtual void release_cached() {}
  // Fill every output with NaN before an op writes it (tests: unwritten elements show).
  virtual void set_poison_outputs(bool) {}
  // Measured device ceilings for the report: name -> value (e.g. ceiling_matmul_tflops).
  virtual std::vector<std::pair<std::string, double>> measure_ceilings() { return {}; }
  // Bytes the backend's allocator obtained from the device (GPU caching), 0 when none.
  virtual std::size_t reserved_bytes() const { return 0; }
  // Key/value facts for the environment file (versions, device model).
  virtual std::vector<std::pair<std::string, std::string>> environment() const = 0;
};

std::unique_ptr<Backend> make_cpu_backend();
// The CUDA backend when built and usable; otherwise nullptr with the reason in *why.
std::unique_ptr<Backend> make_cuda_backend(std::string* why);

}  // namespace longmix
