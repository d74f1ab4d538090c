// hyena-fused next to hyena-cuda, same process, same inputs and weights (PyTorch's
// default initialisation, seed 1): median layer time (B = 1, forward u → y, fp16) of >= 10
// calls and >= 0.2 s (CUDA events), and the ratio to the first hyena-fused row of its length.
// Prints figures; not a test.
// Usage: bench_hyena_fused [lengths=4096,131072,1048576] [D=256] [impls]
// impls: a comma list of fused (filter=recompute), fused-cached (filter=cached), hyena-cuda;
// default: all.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "common/cuda_check.h"
#include "common/cuda_context.h"
#include "common/cuda_workspace.h"
#include "memory/cuda_allocator.h"
#include "ops/hyena/hyena_cuda.h"
#include "ops/hyena/hyena_fused.h"

using namespace longmix;
using bench::median_ms;

namespace {
int run(int argc, char** argv) {
  std::vector<std::int64_t> lengths = {4096, 131072, 1048576};
  if (argc > 1) {
    lengths.clear();
    std::stringstream ss(argv[1]);
    for (std::string x; std::getline(ss, x, ',');) lengths.push_back(std::atoll(x.c_str()));
  }
  const std::int64_t D = argc > 2 ? std::atoll(argv[2]) : 256;
  std::string impls;  // ",a,b,"
  if (argc > 3) impls.append(",").append(argv[3]).append(",");
  auto wanted = [&](const std::string& name) { return impls.empty() || impls.find("," + name + ",") != std::string::npos; };
  CudaAllocator alloc(0);
  OwnedCudaContext owned(alloc);
  CudaContext& ctx = owned.ctx;
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# %s, fp16, B=1, D=%lld, order 2\n", prop.name, static_cast<long long>(D));
  // The A/B switches in effect (hyena_fused_options_from_env), so that every log says what ran.
  std::string switches;
  for (const char* name : kHyenaFusedEnvSwitches)
    if (const char* v = std::getenv(name)) switches += std::string(" ") + name + "=" + v;
  std::printf("# switches:%s\n", switches.empty() ? " none (defaults)" : switches.c_str());
  std::printf("%-8s %-5s %-14s %10s %9s\n", "L", "D", "impl", "ms", "vs_first");
  for (const std::int64_t L : lengths) {
    HyenaConfig cfg;
    cfg.D = D;
    cfg.l_max = L;
    const HyenaWeights w = HyenaWeights::init(cfg, 1);
    const std::vector<float> host = bench::random_inputs(static_cast<std::size_t>(L * D));
    const Buffer<char> u = upload_as(alloc, host, DType::kF16, ctx.stream);
    Buffer<char> y(alloc, host.size() * 2);
    double first = 0;
    auto row = [&](const std::string& name, double ms) {
      if (first == 0) first = ms;
      std::printf("%-8lld %-5lld %-14s %10.4f %9.3f\n", static_cast<long long>(L), static_cast<long long>(D),
                  name.c_str(), ms, ms / first);
      std::fflush(stdout);
    };
    struct Fused { const char* name; bool cached; };
    for (const Fused f : {Fused{"fused", false}, Fused{"fused-cached", true}}) {
      if (!wanted(f.name)) continue;
      HyenaFusedPlan plan(w, 1, L, DType::kF16, f.cached, ctx, hyena_fused_options_from_env());
      row(f.name, median_ms([&] { plan.forward(u.data(), y.data()); }, ctx.stream));
    }
    if (wanted("hyena-cuda")) {
      HyenaCudaPlan plan(w, 1, L, DType::kF16, false, ctx);
      row("hyena-cuda", median_ms([&] { plan.forward(u.data(), y.data()); }, ctx.stream));
    }
  }
  CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  return bench::guarded_main("bench_hyena_fused", [&] { return run(argc, argv); });
}
