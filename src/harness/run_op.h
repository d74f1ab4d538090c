// `longmix run`: one forward of one operator on the user's weights and inputs (safetensors,
// .npy), so the C++ operators can be checked against the PyTorch modules they follow.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "io/tensor_io.h"
#include "ops/hyena/hyena.h"

namespace longmix {

struct RunOptions {
  std::string op;  // hyena | attention-layer | flash | attention
  std::string weights, input, output, q, k, v, save_weights;
  std::string backend = "cpu";
  std::string impl;  // an implementation id; empty: the fastest that takes the input
  std::string dtype = "auto";
  std::int64_t heads = 4;
  std::int64_t d_model = 256;  // default-initialised weights only
  std::int64_t l_max = 0;      // default-initialised Hyena only (0: the input's L)
  bool causal = false;
  bool allow_nonfinite = false;
  std::uint64_t seed = 0;
  std::optional<std::size_t> memory_limit;
};

// Returns the exit status; throws InvalidArgument (bad input) or std::runtime_error.
int run_op(const RunOptions& opt);

// The reference module's state_dict -> weights; config from the shapes. Throws
// InvalidArgument listing missing and unexpected names, or naming a wrong shape.
HyenaWeights hyena_from_state_dict(const std::map<std::string, HostTensor>& sd);
std::map<std::string, HostTensor> hyena_state_dict(HyenaWeights& w);

}  // namespace longmix
