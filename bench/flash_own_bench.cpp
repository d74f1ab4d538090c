// flash-own's kernel variants next to cuDNN's flash attention (flash-cudnn), same process, same
// inputs: median time of >= 10 calls and >= 0.2 s (CUDA events), TFLOP/s (4·B·H·L²·d/2 causal,
// twice that non-causal) and the ratio to cuDNN. Prints figures; not a test.
// Usage: bench_flash_own [lengths=4096,16384,32768,131072] [dtype=fp16] [shapes=all|d64|d64h4|d64h16]
//                        [impls=all] [order=forward|reverse|interleaved] [layout=separate|packed]
// impls: a comma list of flash-cudnn and variant names (all: cuDNN and every variant), e.g.
// to profile one kernel under ncu. order: cuDNN first, then the variants as listed, or the
// reverse (a second round in the other order tells whether the order moves the ratios), or
// interleaved: one call of each in turn, round after round, in a fresh order each round
// (bench::interleaved_median_ms), the measurement to compare them by (the fixed orders moved
// cuDNN's time by 4–11% on an H100, and a fixed order within rounds by 5–9%). layout: q, k, v
// in three buffers of (L, H, d) rows (separate: the sweep's core scope) or packed side by side in
// one buffer of (L, 3, H, d) rows (the layer scope's qkv: rows 3·D elements apart).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.h"
#include "common/cuda_check.h"
#include "common/cuda_context.h"
#include "memory/cuda_allocator.h"
#include "ops/attention/attention_cuda.h"
#include "ops/attention/attention_flash.h"

using namespace longmix;

using bench::median_ms;

namespace {
int run(int argc, char** argv) {
  std::vector<std::int64_t> lengths = {4096, 16384, 32768, 131072};
  if (argc > 1) {
    lengths.clear();
    std::stringstream ss(argv[1]);
    for (std::string x; std::getline(ss, x, ',');) lengths.push_back(std::atoll(x.c_str()));
  }
  const DType t = parse_dtype(argc > 2 ? argv[2] : "fp16");
  // shapes: all, d64 (causal d = 64, H = 4 and 16: the sweep's shapes) or d64h4 / d64h16 (one
  // of those: one shape's launches to profile)
  const std::string shapes_arg = argc > 3 ? argv[3] : "all";
  const bool only_d64 = shapes_arg.rfind("d64", 0) == 0;
  const std::int64_t only_h = shapes_arg == "d64h4" ? 4 : shapes_arg == "d64h16" ? 16 : 0;
  const std::string order_arg = argc > 5 ? argv[5] : "forward";
  if (order_arg != "forward" && order_arg != "reverse" && order_arg != "interleaved")
    throw std::invalid_argument("order must be forward, reverse or interleaved, not '" + order_arg + "'");
  const bool reverse = order_arg == "reverse", interleaved = order_arg == "interleaved";
  const std::string layout_arg = argc > 6 ? argv[6] : "separate";
  if (layout_arg != "separate" && layout_arg != "packed")
    throw std::invalid_argument("layout must be separate or packed, not '" + layout_arg + "'");
  const bool packed = layout_arg == "packed";
  if (!(shapes_arg == "all" || shapes_arg == "d64" || only_h))
    throw std::invalid_argument("shapes must be all, d64, d64h4 or d64h16, not '" + shapes_arg + "'");
  CudaAllocator alloc(0);
  CudaContext ctx;
  ctx.alloc = &alloc;
  CUDA_CHECK(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# %s, %s, B=1, q, k, v %s\n", prop.name, t == DType::kF16 ? "fp16" : "bf16",
              packed ? "packed (rows 3·D apart, the layer's qkv)" : "separate (rows D apart)");
  std::printf("%-8s %-4s %-4s %-7s %-18s %10s %9s %9s\n", "L", "H", "d", "causal", "impl", "ms", "TFLOP/s", "vs_cudnn");
  struct Shape { std::int64_t H, d; bool causal; };
  const Shape shapes[] = {{4, 64, true}, {16, 64, true}, {4, 64, false}, {2, 128, true}, {8, 128, true}};
  std::string impls;  // ",a,b,"
  if (argc > 4 && std::string(argv[4]) != "all") impls.append(",").append(argv[4]).append(",");
  auto wanted = [&](const std::string& name) { return impls.empty() || impls.find("," + name + ",") != std::string::npos; };
  for (const auto& sh : shapes) {
    if (only_d64 && (sh.d != 64 || !sh.causal)) continue;
    if (only_h && sh.H != only_h) continue;
    for (const std::int64_t L : lengths) {
      if (!sh.causal && L > 32768) continue;  // non-causal: the short lengths tell the story
      const AttentionParams p{1, L, sh.H, sh.d, sh.causal, 0};
      const std::int64_t D = p.D();
      const std::int64_t ld = packed ? 3 * D : D;  // q, k, v row stride
      Buffer<char> q, k, v, o(alloc, L * D * 2);
      Buffer<float> lse(alloc, sh.H * L);
      const void *qp, *kp, *vp;
      if (packed) {
        q = upload_as(alloc, bench::random_inputs(static_cast<std::size_t>(L * ld)), t, ctx.stream);
        qp = q.data(); kp = q.data() + D * 2; vp = q.data() + 2 * D * 2;
      } else {
        const std::vector<float> host = bench::random_inputs(static_cast<std::size_t>(L * D));
        for (auto* b : {&q, &k, &v}) *b = upload_as(alloc, host, t, ctx.stream);
        qp = q.data(); kp = k.data(); vp = v.data();
      }
      // Every implementation of this shape and length, measured in the order asked for (reverse
      // puts cuDNN last: a GPU at its power cap may run the first measurement after a pause at a
      // higher clock, so two rounds in opposite orders show whether the order moves the ratios).
      std::vector<std::pair<std::string, std::function<void()>>> jobs;
      std::unique_ptr<CudnnFlash> cf;
      if (wanted("flash-cudnn")) {
        try {
          cf = std::make_unique<CudnnFlash>(p, t, ld, D);
          jobs.emplace_back("flash-cudnn", [&] { cf->run(qp, kp, vp, o.data(), lse.data(), ctx); });
        } catch (const std::exception& e) {
          std::printf("# flash-cudnn unavailable: %s\n", e.what());
        }
      }
      std::vector<Buffer<char>> workspaces;
      std::vector<FlashOwnArgs> args;
      const auto variants = flash_own_variants(p);
      workspaces.reserve(variants.size());
      args.reserve(variants.size());
      for (const auto& var : variants) {
        if (!wanted(var)) continue;
        FlashOwnArgs a;
        a.q = qp; a.k = kp; a.v = vp; a.o = o.data(); a.lse = lse.data();
        a.ld_in = ld; a.ld_o = D;
        workspaces.push_back(flash_own_workspace(p, var, alloc, ctx.stream));
        a.workspace = workspaces.back().data(); a.workspace_bytes = workspaces.back().bytes();
        args.push_back(a);
        const FlashOwnArgs* ap = &args.back();
        jobs.emplace_back("own:" + var, [&, ap, var] { flash_own_forward(p, t, *ap, ctx.stream, var); });
      }
      if (reverse) std::reverse(jobs.begin(), jobs.end());
      std::vector<double> ms(jobs.size());
      double cudnn_ms = 0;
      if (interleaved) {
        std::vector<std::function<void()>*> fs;
        for (auto& jb : jobs) fs.push_back(&jb.second);
        ms = bench::interleaved_median_ms(fs, ctx.stream);
      } else {
        for (std::size_t j = 0; j < jobs.size(); ++j) ms[j] = median_ms(jobs[j].second, ctx.stream);
      }
      for (std::size_t j = 0; j < jobs.size(); ++j)
        if (jobs[j].first == "flash-cudnn") cudnn_ms = ms[j];
      for (std::size_t j = 0; j < jobs.size(); ++j)
        std::printf("%-8lld %-4lld %-4lld %-7s %-18s %10.4f %9.1f %9.3f\n", static_cast<long long>(L),
                    static_cast<long long>(sh.H), static_cast<long long>(sh.d), sh.causal ? "yes" : "no",
                    jobs[j].first.c_str(), ms[j], p.flops() / (ms[j] * 1e-3) / 1e12,
                    cudnn_ms > 0 ? ms[j] / cudnn_ms : 0.0);
      std::fflush(stdout);
    }
  }
  CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  return bench::guarded_main("bench_flash_own", [&] { return run(argc, argv); });
}
