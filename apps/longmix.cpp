// longmix: measure FlashAttention against Hyena. Thin CLI: parse -> harness -> printers.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdlib>
#include <iostream>

#include "harness/run_op.h"
#include "harness/sweep.h"
#include "report/report.h"

#ifdef LONGMIX_HAVE_CUDA
namespace longmix {
void inject_gpu_fault(const std::string& kind);  // common/cuda_context.h
}
#endif

using namespace longmix;

namespace {
void on_signal(int) { g_stop_requested = 1; }

const char* kExamples = R"(
Examples:
  longmix sweep                                   # the main job: 4k..128k, GPU if usable, else CPU + extrapolation
  longmix sweep --ops flash,hyena --lengths 4k..1M --heads 16   # D = 1024
  longmix sweep --memory-limit 8GiB               # emulate an 8 GB device
  longmix sweep --memory-fraction 0.5 --resume    # continue an interrupted sweep
  longmix sweep --backend cpu --time-budget 120 --lengths 1k,2k,4k,8k
  longmix report hyena_vs_flash_benchmark         # plots, tables and report.md from the CSVs
  longmix run hyena --weights hyena.safetensors --input x.npy --output y.npy   # check against PyTorch
)";
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"longmix: at what sequence length should you move from FlashAttention to Hyena, "
               "and what does it cost in memory and time?"};
  app.footer(kExamples);
  app.require_subcommand(1);

  SweepOptions so;
  std::string lengths = "4k,8k,16k,32k,64k,128k", ops = "flash,hyena,attention", impls;
  std::string mem_limit, filter = "recompute";
  double fraction = 0, budget = 0;
  bool no_report = false, no_extrapolate = false, no_check = false, non_causal = false;
  auto* sweep = app.add_subcommand("sweep", "measure forward time and peak memory over lengths");
  sweep->add_option("--ops", ops, "comma list of flash, attention (standard), hyena")->capture_default_str();
  sweep->add_option("--impls", impls, "only these implementation ids (e.g. flash-cudnn,hyena-cuda)");
  sweep->add_option("--scope", so.scope, "layer (projections included) or core (mixer alone)")->capture_default_str();
  sweep->add_option("--lengths", lengths, "lengths: 4096, 4k, 1M, ranges 4k..1M (doubling)")->capture_default_str();
  sweep->add_option("--batch", so.B, "batch size B")->capture_default_str();
  sweep->add_option("--heads", so.H, "attention heads H (D = H * head-dim for both mixers)")->capture_default_str();
  sweep->add_option("--head-dim", so.d, "head dim d")->capture_default_str();
  sweep->add_option("--dtype", so.dtype, "auto (fp16 on GPU, fp32 on CPU), fp32, fp16, bf16")->capture_default_str();
  sweep->add_option("--backend", so.backend, "auto, cpu or cuda")->capture_default_str();
  sweep->add_option("--memory-limit", mem_limit, "cap device memory, e.g. 8GiB (emulates a smaller device)");
  sweep->add_option("--memory-fraction", fraction, "cap at this fraction of the device, like set_per_process_memory_fraction");
  sweep->add_option("--filter", filter, "hyena filter: recompute (every call, like the reference) or cached")->capture_default_str();
  sweep->add_option("--order", so.order, "hyena order N")->capture_default_str();
  sweep->add_option("--l-max", so.l_max, "hyena l_max (default: the longest length of the run)");
  sweep->add_flag("--non-causal", non_causal, "attention without the causal mask");
  sweep->add_option("--warmup", so.policy.warmup, "warm-up calls per row")->capture_default_str();
  sweep->add_option("--min-reps", so.policy.min_reps, "timed calls per row, at least")->capture_default_str();
  sweep->add_option("--min-seconds", so.policy.min_seconds, "timed seconds per row, at least")->capture_default_str();
  sweep->add_option("--time-budget", budget, "seconds of measurement; longer rows are extrapolated (default: 420 on CPU, none on GPU)");
  sweep->add_flag("--no-extrapolate", no_extrapolate, "measure every row, however long");
  sweep->add_flag("--no-check", no_check, "skip the start-of-run correctness check");
  sweep->add_flag("--no-report", no_report, "do not write plots and report at the end");
  sweep->add_option("--out", so.out, "output folder")->capture_default_str();
  sweep->add_option("--seed", so.seed, "seed of weights and inputs")->capture_default_str();
  sweep->add_flag("--resume", so.resume, "skip rows already measured in --out");
  sweep->add_flag("--quiet", so.quiet, "no progress on stderr");
  bool no_interleave = false;
  sweep->add_flag("--no-interleave", no_interleave, "time the implementations of one op at one length one after the other instead of in turns");
  sweep->add_flag("--isolate", so.isolate, "measure each row in its own process: a crash, device fault or hang becomes that row's status=error and the sweep goes on");
  sweep->add_option("--row-timeout", so.row_timeout_s, "with --isolate: kill a row after this many seconds (0: never)");

  std::string report_dir = "hyena_vs_flash_benchmark";
  auto* report = app.add_subcommand("report", "plots, tables and report.md from a results folder");
  report->add_option("dir", report_dir, "results folder")->capture_default_str();

  RunOptions ro;
  std::string run_mem;
  auto* run = app.add_subcommand("run", "one forward of one operator on your weights (safetensors) and inputs (.npy)");
  run->add_option("op", ro.op, "hyena, attention-layer, flash or attention")->required();
  run->add_option("--weights", ro.weights, "safetensors file (hyena: a HyenaOperator state_dict; attention-layer: Wqkv.*, out_proj.*)");
  run->add_option("--input", ro.input, ".npy input (B, L, D) or (L, D), float32 or float16");
  run->add_option("--q", ro.q, ".npy (B, L, H, d) for flash / attention");
  run->add_option("--k", ro.k, ".npy (B, L, H, d)");
  run->add_option("--v", ro.v, ".npy (B, L, H, d)");
  run->add_option("--output", ro.output, "output .npy (float32)")->required();
  run->add_option("--backend", ro.backend, "cpu or cuda")->capture_default_str();
  run->add_option("--dtype", ro.dtype, "auto, fp32, fp16, bf16")->capture_default_str();
  run->add_option("--impl", ro.impl, "implementation id, e.g. flash-own (default: the fastest that takes the input)");
  run->add_option("--heads", ro.heads, "attention-layer heads")->capture_default_str();
  run->add_option("--l-max", ro.l_max, "hyena without --weights: l_max of the default weights (default: the input's L)");
  run->add_flag("--causal", ro.causal, "causal attention");
  run->add_option("--seed", ro.seed, "seed of the default weights")->capture_default_str();
  run->add_option("--save-weights", ro.save_weights, "write the weights used as safetensors (PyTorch can load them)");
  run->add_flag("--allow-nonfinite", ro.allow_nonfinite, "run on inputs holding NaN/Inf");
  run->add_option("--memory-limit", run_mem, "cap memory, e.g. 2GiB");

  // The row process of `sweep --isolate` (internal): measures one row, prints it as JSON.
  Workload rw;
  RepPolicy rp;
  std::string row_impl, row_backend = "cpu";
  std::size_t row_cap = 0;
  bool row_non_causal = false, row_cached = false;
  auto* row = app.add_subcommand("row", "internal: one row of an isolated sweep, printed as JSON");
  row->group("");  // hidden from --help
  row->add_option("--impl", row_impl)->required();
  row->add_option("--backend", row_backend);
  row->add_option("--op", rw.op);
  row->add_option("--scope", rw.scope);
  row->add_option("--batch", rw.B);
  row->add_option("--length", rw.L);
  row->add_option("--heads", rw.H);
  row->add_option("--head-dim", rw.d);
  row->add_option("--dtype", rw.dtype);
  row->add_option("--order", rw.order);
  row->add_option("--l-max", rw.l_max);
  row->add_option("--seed", rw.seed);
  row->add_option("--warmup", rp.warmup);
  row->add_option("--min-reps", rp.min_reps);
  row->add_option("--min-seconds", rp.min_seconds);
  row->add_option("--cap-bytes", row_cap);
  row->add_flag("--non-causal", row_non_causal);
  row->add_flag("--cached", row_cached);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  std::string cmdline;
  for (int i = 0; i < argc; ++i) cmdline += (i ? " " : "") + std::string(argv[i]);
  try {
    if (*sweep) {
      so.command_line = cmdline;
      so.lengths = parse_lengths(lengths);
      so.ops.clear();
      std::stringstream ss(ops);
      for (std::string op; std::getline(ss, op, ',');) so.ops.push_back(op);
      std::stringstream si(impls);
      for (std::string im; std::getline(si, im, ',');) so.impls.push_back(im);
      if (!mem_limit.empty()) so.memory_limit = parse_bytes(mem_limit);
      if (sweep->count("--memory-fraction")) so.memory_fraction = fraction;
      LONGMIX_REQUIRE(!(so.memory_limit && so.memory_fraction),
                      "give --memory-limit or --memory-fraction, not both");
      if (sweep->count("--time-budget")) so.time_budget_s = budget;
      LONGMIX_REQUIRE(filter == "recompute" || filter == "cached",
                      "--filter must be recompute or cached, got '", filter, "'");
      so.filter_cached = filter == "cached";
      so.causal = !non_causal;
      so.extrapolate = !no_extrapolate;
      so.interleave = !no_interleave;
      so.check = !no_check;
      LONGMIX_REQUIRE(so.policy.warmup >= 1, "--warmup must be >= 1 (the first call measures memory)");
      LONGMIX_REQUIRE(so.policy.min_reps >= 1, "--min-reps must be >= 1");
      std::signal(SIGINT, on_signal);
      std::signal(SIGTERM, on_signal);
      int rc = run_sweep(so);
      if (!no_report && rc != 130) {
        const int r = write_report(so.out, std::cerr);
        if (rc == 0) rc = r;
      }
      return rc;
    }
    if (*report) return write_report(report_dir, std::cerr);
    if (*row) {
      rw.causal = !row_non_causal;
      rw.filter_cached = row_cached;
      // Test hook: LONGMIX_INJECT_FAULT=impl:L makes that row's process crash (SIGSEGV);
      // impl:L:illegal-address and impl:L:hang run a GPU kernel that faults or never ends.
      std::string fault;
      if (const char* f = std::getenv("LONGMIX_INJECT_FAULT")) {
        const std::string key = row_impl + ":" + std::to_string(rw.L), s = f;
        if (s == key) std::raise(SIGSEGV);
        if (s.rfind(key + ":", 0) == 0) fault = s.substr(key.size() + 1);
      }
      std::string why;
      std::unique_ptr<Backend> be = row_backend == "cuda" ? make_cuda_backend(&why) : make_cpu_backend();
      LONGMIX_REQUIRE(be != nullptr, "no usable GPU: ", why);
#ifdef LONGMIX_HAVE_CUDA
      if (!fault.empty()) inject_gpu_fault(fault);
#endif
      if (row_cap) be->allocator().set_cap(row_cap);
      std::cout << row_to_json(measure_row(*be, row_impl, rw, rp)) << std::endl;
      return 0;
    }
    if (*run) {
      if (!run_mem.empty()) ro.memory_limit = parse_bytes(run_mem);
      return run_op(ro);
    }
  } catch (const InvalidArgument& e) {
    std::cerr << "longmix: error: " << e.what() << "\n";
    return 2;
  } catch (const OutOfMemory& e) {
    std::cerr << "longmix: error: " << e.what() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "longmix: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
