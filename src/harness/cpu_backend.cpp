// The CPU backend: fp32 operators of src/ops on OpenMP threads, FFTW and OpenBLAS.
#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <cstring>
#include <fstream>

#include "common/cpu_math.h"
#include "harness/backend.h"

namespace longmix {

double Backend::time_call(const std::function<void()>& fn) {
  synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

namespace {

Buffer<float> copy_in(Allocator& a, const std::vector<float>& v) {
  Buffer<float> b(a, v.size());
  if (!v.empty()) std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
  return b;
}

class CpuAttentionRunner final : public Runner {
 public:
  CpuAttentionRunner(const Problem& p, Allocator& a, bool flash)
      : a_(a), w_(p.w), flash_(flash), params_{p.w.B, p.w.L, p.w.H, p.w.d, p.w.causal, 0} {
    params_.validate();
    if (w_.scope == "core") {
      q_ = copy_in(a, p.q);
      k_ = copy_in(a, p.k);
      v_ = copy_in(a, p.v);
    } else {
      x_ = copy_in(a, p.x);
      wqkv_ = copy_in(a, p.attn.Wqkv_weight);
      bqkv_ = copy_in(a, p.attn.Wqkv_bias);
      wout_ = copy_in(a, p.attn.out_proj_weight);
      bout_ = copy_in(a, p.attn.out_proj_bias);
    }
  }
  void forward() override {
    Buffer<float> y(a_, static_cast<std::size_t>(w_.B * w_.L * w_.D()));  // (B, L, D)
    if (w_.scope == "core") {
      Buffer<float> lse(a_, static_cast<std::size_t>(w_.B * w_.H * w_.L));  // (B, H, L)
      if (flash_) attention_flash_cpu(params_, q_.data(), k_.data(), v_.data(), y.data(), lse.data(), a_);
      else attention_standard_cpu(params_, q_.data(), k_.data(), v_.data(), y.data(), lse.data(), a_);
    } else {
      AttentionLayerView view{wqkv_.data(), bqkv_.data(), wout_.data(), bout_.data()};
      attention_layer_cpu(params_, view, x_.data(), y.data(),
                          flash_ ? AttentionKind::kFlash : AttentionKind::kStandard, a_);
    }
    out_ = std::move(y);
  }
  std::vector<float> output() override { return {out_.data(), out_.data() + out_.size()}; }

 private:
  Allocator& a_;
  Workload w_;
  bool flash_;
  AttentionParams params_;
  Buffer<float> q_, k_, v_, x_, wqkv_, bqkv_, wout_, bout_, out_;
};

class CpuHyenaRunner final : public Runner {
 public:
  CpuHyenaRunner(const Problem& p, Allocator& a) : a_(a), w_(p.w) {
    // Weights held through the allocator; the view points at those copies.
    HyenaWeights& hw = const_cast<HyenaWeights&>(p.hyena);
    HyenaView view = view_of(hw);
    for (auto& nt : hw.named()) {
      if (held_.count(nt.data)) continue;
      held_[nt.data] = copy_in(a, *nt.data);
    }
    auto remap = [&](const std::vector<float>& v) {
      return static_cast<const float*>(held_.at(const_cast<std::vector<float>*>(&v)).data());
    };
    view.in_proj_weight = remap(hw.in_proj_weight);
    view.in_proj_bias = remap(hw.in_proj_bias);
    view.short_filter_weight = remap(hw.short_filter_weight);
    view.short_filter_bias = remap(hw.short_filter_bias);
    view.filter_bias = remap(hw.filter_bias);
    view.pos_emb_z = remap(hw.pos_emb_z);
    view.pos_emb_t = remap(hw.pos_emb_t);
    view.freq = remap(hw.freq);
    view.modulation_deltas = remap(hw.modulation_deltas);
    view.out_proj_weight = remap(hw.out_proj_weight);
    view.out_proj_bias = remap(hw.out_proj_bias);
    for (std::size_t i = 0; i < hw.mlp_weight.size(); ++i) {
      view.mlp_weight[i] = remap(hw.mlp_weight[i]);
      view.mlp_bias[i] = hw.mlp_bias[i].empty() ? nullptr : remap(hw.mlp_bias[i]);
    }
    x_ = copy_in(a, p.x);
    plan_ = std::make_unique<HyenaCpuPlan>(view, w_.L, w_.filter_cached, a);
  }
  void forward() override {
    Buffer<float> y(a_, static_cast<std::size_t>(w_.B * w_.L * w_.D()));  // (B, L, D)
    if (w_.scope == "core") plan_->core(w_.B, x_.data(), y.data(), a_);
    else plan_->forward(w_.B, x_.data(), y.data(), a_);
    out_ = std::move(y);
  }
  std::vector<float> output() override { return {out_.data(), out_.data() + out_.size()}; }

 private:
  Allocator& a_;
  Workload w_;
  std::map<std::vector<float>*, Buffer<float>> held_;
  Buffer<float> x_, out_;
  std::unique_ptr<HyenaCpuPlan> plan_;
};

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) return line.substr(p + 2);
    }
  return "unknown CPU";
}

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  Allocator& allocator() override { return alloc_; }
  std::vector<std::string> impls(const std::string& op) const override {
    if (op == "flash") return {"flash-cpu"};
    if (op == "attention") return {"attention-cpu"};
    if (op == "hyena") return {"hyena-cpu"};
    return {};
  }
  std::string unsupported(const std::string& impl, const Workload& w) const override {
    if (w.dtype != "fp32") return "the CPU backend computes in fp32 only (asked for " + w.dtype + ")";
    if (impl != "flash-cpu" && impl != "attention-cpu" && impl != "hyena-cpu")
      return "no implementation '" + impl + "' on the CPU";
    if (w.op != "hyena" && (w.d % 8 != 0 || w.d > 256))
      return "head dim " + std::to_string(w.d) + " unsupported on the CPU (multiples of 8 up to 256)";
    return {};
  }
  std::unique_ptr<Runner> make(const std::string& impl, const Problem& p) override {
    if (impl == "hyena-cpu") return std::make_unique<CpuHyenaRunner>(p, alloc_);
    return std::make_unique<CpuAttentionRunner>(p, alloc_, impl == "flash-cpu");
  }
  std::size_t device_total_bytes() const override {
    return static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  }
  std::string default_dtype() const override { return "fp32"; }
  // The allocator's kept blocks, as the CUDA backend's cache: given back between rows and before
  // --isolate's row processes, and counted in reserved_GB (handed out + kept).
  void release_cached() override { alloc_.release_cached(); }
  std::size_t reserved_bytes() const override { return alloc_.current() + alloc_.cached(); }
  std::vector<std::pair<std::string, double>> measure_ceilings() override {
    const std::int64_t n = 1024;
    std::vector<float> A(n * n, 0.5f), B(n * n, 0.25f), C(n * n);
    // The best call of >= 10 and >= 0.3 s: OpenBLAS's worker threads spin for ~0.1 s after the
    // library starts, and the first calls of a process (on 2 cores: ~40 ms of them) run at half
    // speed while they do.
    double best = 1e30, spent = 0;
    for (int i = 0; i < 10 || spent < 0.3; ++i) {
      const double s = time_call([&] { sgemm(false, false, n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, C.data(), n); });
      best = std::min(best, s);
      spent += s;
    }
    return {{"ceiling_matmul_tflops", 2.0 * n * n * n / best / 1e12}};
  }
  std::vector<std::pair<std::string, std::string>> environment() const override {
    return {{"cpu", cpu_model()},
            {"cpu_threads", std::to_string(omp_get_max_threads())},
            {"memory_total_GiB", std::to_string(device_total_bytes() / double(1ull << 30))},
            {"fftw", fftw_version()},
            {"openblas", blas_version()}};
  }

 private:
  CpuAllocator alloc_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

#ifndef LONGMIX_HAVE_CUDA
std::unique_ptr<Backend> make_cuda_backend(std::string* why) {
  if (why) *why = "this build of longmix has no CUDA backend (nvcc was not found at configure time)";
  return nullptr;
}
#endif

}  // namespace longmix
