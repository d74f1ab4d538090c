// The CUDA backend: attention-cuda (standard), flash-own, flash-cudnn, hyena-cuda, hyena-fused, in fp16/bf16, all
// device memory through the project's caching allocator, timed with CUDA events.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstring>

#include "common/cuda_check.h"
#include "common/cuda_context.h"
#include "common/cuda_workspace.h"
#include "harness/backend.h"
#include "memory/cuda_allocator.h"
#include "ops/attention/attention_cuda.h"
#include "ops/attention/attention_flash.h"
#include "ops/hyena/hyena_cuda.h"
#include "ops/hyena/hyena_fused.h"

namespace longmix {

namespace {

// kind: attention-cuda (standard), flash-cudnn or flash-own.
enum class AttnImpl { kStandard, kCudnn, kOwn };

class CudaAttentionRunner final : public Runner {
 public:
  CudaAttentionRunner(const Problem& p, CudaContext& ctx, AttnImpl kind, bool poison)
      : ctx_(ctx), w_(p.w), t_(parse_dtype(p.w.dtype)), kind_(kind), poison_(poison),
        params_{p.w.B, p.w.L, p.w.H, p.w.d, p.w.causal, 0} {
    params_.validate();
    Allocator& a = *ctx.alloc;
    const std::int64_t D = w_.D();
    if (w_.scope == "core") {
      q_ = upload_as(a, p.q, t_, ctx.stream);
      k_ = upload_as(a, p.k, t_, ctx.stream);
      v_ = upload_as(a, p.v, t_, ctx.stream);
    } else {
      x_ = upload_as(a, p.x, t_, ctx.stream);
      wqkv_ = upload_as(a, p.attn.Wqkv_weight, t_, ctx.stream);
      bqkv_ = upload_as(a, p.attn.Wqkv_bias, t_, ctx.stream);  // in the product's epilogue
      wout_ = upload_as(a, p.attn.out_proj_weight, t_, ctx.stream);
      bout_ = upload_as(a, p.attn.out_proj_bias, t_, ctx.stream);
    }
    const std::int64_t ld_in = w_.scope == "core" ? D : 3 * D;  // q, k, v rows: separate, or inside the layer's qkv
    if (kind_ == AttnImpl::kCudnn) cudnn_ = std::make_unique<CudnnFlash>(params_, t_, ld_in, D);
    if (kind_ == AttnImpl::kStandard || w_.scope == "layer") ws_ = std::make_unique<CublasWorkspace>(ctx);
    if (kind_ == AttnImpl::kOwn) {
      variant_ = flash_own_tune(params_, t_, a, ctx.stream, ld_in);  // tuned on the calls' layout
      forced_ = !flash_own_forced_variant(params_).empty();
      flash_ws_ = flash_own_workspace(params_, variant_, a, ctx.stream);
    }
  }
  void forward() override {
    Allocator& a = *ctx_.alloc;
    const std::int64_t D = w_.D(), BL = w_.B * w_.L;
    const std::size_t es = dtype_size(t_);
    Buffer<char> y(a, static_cast<std::size_t>(BL * D) * es);  // (B, L, D)
    if (poison_) fill_nan_cuda(t_, y.data(), BL * D, ctx_.stream);
    if (w_.scope == "core") {
      attend(q_.data(), k_.data(), v_.data(), D, y.data());
    } else {
      Buffer<char> o(a, static_cast<std::size_t>(BL * D) * es);  // (B, L, H, d)
      {
        Buffer<char> qkv(a, static_cast<std::size_t>(BL * 3 * D) * es);  // (B, L, 3, H, d)
        linear_cuda(t_, BL, 3 * D, D, x_.data(), wqkv_.data(), bqkv_.data(),
                    qkv.data(), ctx_);
        attend(qkv.data(), qkv.data() + D * es, qkv.data() + 2 * D * es, 3 * D, o.data());
      }
      linear_cuda(t_, BL, D, D, o.data(), wout_.data(), bout_.data(), y.data(), ctx_);
    }
    out_ = std::move(y);
  }
  std::vector<float> output() override {
    return download_as(out_, static_cast<std::size_t>(w_.B * w_.L * w_.D()), t_, *ctx_.alloc, ctx_.stream);
  }
  std::string note() const override {
    if (variant_.empty()) return "";
    return "kernel " + variant_ + (forced_ ? " (LONGMIX_FLASH_VARIANT)" : " (tuned at setup)");
  }

 private:
  void attend(const void* q, const void* k, const void* v, std::int64_t ld, void* o) {
    if (kind_ == AttnImpl::kStandard) {
      attention_standard_cuda(params_, t_, q, k, v, ld, o, w_.D(), ctx_);
      return;
    }
    Buffer<float> lse(*ctx_.alloc, static_cast<std::size_t>(w_.B * w_.H * w_.L));  // (B, H, L)
    if (kind_ == AttnImpl::kCudnn) {
      cudnn_->run(q, k, v, o, lse.data(), ctx_);
    } else {
      FlashOwnArgs a;
      a.q = q; a.k = k; a.v = v; a.o = o; a.lse = lse.data(); a.ld_in = ld; a.ld_o = w_.D();
      a.workspace = flash_ws_.data(); a.workspace_bytes = flash_ws_.bytes();
      flash_own_forward(params_, t_, a, ctx_.stream, variant_);
    }
  }
  CudaContext& ctx_;
  Workload w_;
  DType t_;
  AttnImpl kind_;
  bool poison_;
  AttentionParams params_;
  Buffer<char> q_, k_, v_, x_, wqkv_, bqkv_, wout_, bout_, out_;
  Buffer<char> flash_ws_;  // flash-own's -split workspace (empty for the other kernels)
  std::unique_ptr<CudnnFlash> cudnn_;
  std::unique_ptr<CublasWorkspace> ws_;
  std::string variant_;  // flash-own's kernel
  bool forced_ = false;  // variant_ from LONGMIX_FLASH_VARIANT, not the tuner
};

// hyena-cuda allocates its output per call like the other ops; hyena-fused replays a CUDA graph
// captured for fixed input and output addresses, so it keeps one output buffer for its life.
class CudaHyenaRunner final : public Runner {
 public:
  CudaHyenaRunner(const Problem& p, CudaContext& ctx, bool poison, bool fused)
      : ctx_(ctx), w_(p.w), t_(parse_dtype(p.w.dtype)), poison_(poison), ws_(ctx) {
    x_ = upload_as(*ctx.alloc, p.x, t_, ctx.stream);
    if (fused) {
      fused_ = std::make_unique<HyenaFusedPlan>(p.hyena, w_.B, w_.L, t_, w_.filter_cached, ctx,
                                                hyena_fused_options_from_env());
      out_ = Buffer<char>(*ctx.alloc, size() * dtype_size(t_));
    } else {
      plan_ = std::make_unique<HyenaCudaPlan>(p.hyena, w_.B, w_.L, t_, w_.filter_cached, ctx);
    }
  }
  void forward() override {
    if (fused_) {
      if (poison_) fill_nan_cuda(t_, out_.data(), size(), ctx_.stream);
      if (w_.scope == "core") fused_->core(x_.data(), out_.data());
      else fused_->forward(x_.data(), out_.data());
      return;
    }
    Buffer<char> y(*ctx_.alloc, size() * dtype_size(t_));  // (B, L, D)
    if (poison_) fill_nan_cuda(t_, y.data(), size(), ctx_.stream);
    if (w_.scope == "core") plan_->core(x_.data(), y.data());
    else plan_->forward(x_.data(), y.data());
    out_ = std::move(y);
  }
  std::vector<float> output() override { return download_as(out_, size(), t_, *ctx_.alloc, ctx_.stream); }

 private:
  std::size_t size() const { return static_cast<std::size_t>(w_.B * w_.L * w_.D()); }
  CudaContext& ctx_;
  Workload w_;
  DType t_;
  bool poison_;
  CublasWorkspace ws_;
  Buffer<char> x_, out_;
  std::unique_ptr<HyenaCudaPlan> plan_;
  std::unique_ptr<HyenaFusedPlan> fused_;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend() : alloc_(0) {
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaStreamCreateWithFlags(&ctx_.stream, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasCreate(&ctx_.cublas));
    CUBLAS_CHECK(cublasSetStream(ctx_.cublas, ctx_.stream));
    CUBLAS_CHECK(cublasSetWorkspace(ctx_.cublas, nullptr, 0));  // runners lend it one
    ctx_.alloc = &alloc_;
    CUDA_CHECK(cudaEventCreate(&ev0_));
    CUDA_CHECK(cudaEventCreate(&ev1_));
    CUDA_CHECK(cudaGetDeviceProperties(&prop_, 0));
    AttentionParams probe{1, 128, 1, 64, true, 0};
    cudnn_why_ = cudnn_flash_unsupported(probe, DType::kF16);
    if (cudnn_why_.empty()) {
      try {  // building one graph tells whether cuDNN's flash attention runs on this device
        CudnnFlash f(probe, DType::kF16, 64, 64);
      } catch (const std::exception& e) {
        cudnn_why_ = std::string("cuDNN flash attention unavailable: ") + e.what();
      }
    }
    baseline_used_ = driver_used();
  }
  ~CudaBackend() override {
    alloc_.release_cached();
    cudaEventDestroy(ev0_);
    cudaEventDestroy(ev1_);
    cublasDestroy(ctx_.cublas);
    cudaStreamDestroy(ctx_.stream);
  }
  std::string name() const override { return "cuda"; }
  Allocator& allocator() override { return alloc_; }
  std::vector<std::string> impls(const std::string& op) const override {
    if (op == "flash") return {"flash-cudnn", "flash-own"};
    if (op == "attention") return {"attention-cuda"};
    if (op == "hyena") return {"hyena-fused", "hyena-cuda"};
    return {};
  }
  std::string unsupported(const std::string& impl, const Workload& w) const override {
    if (w.dtype != "fp16" && w.dtype != "bf16") return "the GPU ops store fp16 or bf16 (asked for " + w.dtype + ")";
    AttentionParams p{w.B, w.L, w.H, w.d, w.causal, 0};
    if (impl == "flash-cudnn") {
      if (!cudnn_why_.empty()) return cudnn_why_;
      return cudnn_flash_unsupported(p, parse_dtype(w.dtype));
    }
    if (impl == "flash-own") return flash_own_unsupported(p, parse_dtype(w.dtype));
    if (impl == "attention-cuda") return w.d % 8 ? "head dim must be a multiple of 8" : "";
    if (impl == "hyena-cuda" || impl == "hyena-fused") {
      HyenaConfig cfg;
      cfg.D = w.D();
      cfg.order = w.order;
      if (impl == "hyena-fused") return hyena_fused_unsupported(cfg, w.L, parse_dtype(w.dtype));
      return hyena_cuda_unsupported(cfg, parse_dtype(w.dtype));
    }
    return "no implementation '" + impl + "' on the GPU";
  }
  std::unique_ptr<Runner> make(const std::string& impl, const Problem& p) override {
    if (impl == "hyena-cuda" || impl == "hyena-fused")
      return std::make_unique<CudaHyenaRunner>(p, ctx_, poison_, impl == "hyena-fused");
    const AttnImpl kind = impl == "flash-cudnn" ? AttnImpl::kCudnn : impl == "flash-own" ? AttnImpl::kOwn : AttnImpl::kStandard;
    return std::make_unique<CudaAttentionRunner>(p, ctx_, kind, poison_);
  }
  void synchronize() override { CUDA_CHECK(cudaStreamSynchronize(ctx_.stream)); }
  double time_call(const std::function<void()>& fn) override {
    CUDA_CHECK(cudaEventRecord(ev0_, ctx_.stream));
    fn();
    CUDA_CHECK(cudaEventRecord(ev1_, ctx_.stream));
    CUDA_CHECK(cudaEventSynchronize(ev1_));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, ev0_, ev1_));
    return ms / 1e3;
  }
  std::size_t device_total_bytes() const override { return prop_.totalGlobalMem; }
  std::size_t device_used_bytes() const override {
    const std::size_t u = driver_used();
    return u > baseline_used_ ? u - baseline_used_ : 1;
  }
  std::size_t reserved_bytes() const override { return alloc_.reserved(); }
  std::string default_dtype() const override { return "fp16"; }
  void release_cached() override {
    synchronize();
    alloc_.release_cached();
  }
  void set_poison_outputs(bool on) override { poison_ = on; }
  std::vector<std::pair<std::string, std::string>> environment() const override {
    int drv = 0, rt = 0, cbl = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    cublasGetVersion(ctx_.cublas, &cbl);
    auto ver = [](int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); };
    return {{"gpu", prop_.name},
            {"gpu_sm", std::to_string(prop_.major) + "." + std::to_string(prop_.minor)},
            {"gpu_multiprocessors", std::to_string(prop_.multiProcessorCount)},
            {"gpu_memory_GiB", std::to_string(prop_.totalGlobalMem / double(1ull << 30))},
            {"driver", "CUDA driver API " + ver(drv)},
            {"cuda_runtime", ver(rt)},
            {"cublas", std::to_string(cbl)},
            {"cufft", cufft_version_string()},
            {"cudnn", cudnn_version_string()},
            {"cublas_workspace_bytes", std::to_string(CublasWorkspace::kBytes)}};
  }
  std::vector<std::pair<std::string, double>> measure_ceilings() override {
    // bf16 matrix product 8192³ and a device-to-device copy, as SPEC §6's ceilings.
    const int n = 8192;
    std::vector<std::pair<std::string, double>> out;
    try {
      CublasWorkspace ws(ctx_);
      Buffer<char> A(alloc_, std::size_t(n) * n * 2), Bm(alloc_, std::size_t(n) * n * 2), C(alloc_, std::size_t(n) * n * 2);
      CUDA_CHECK(cudaMemsetAsync(A.data(), 0x3c, A.bytes(), ctx_.stream));  // bit patterns of ~1.0-ish values
      CUDA_CHECK(cudaMemsetAsync(Bm.data(), 0x3b, Bm.bytes(), ctx_.stream));
      const float one = 1.0f, zero = 0.0f;
      auto gemm = [&] {
        CUBLAS_CHECK(cublasGemmEx(ctx_.cublas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A.data(), CUDA_R_16BF, n,
                                  Bm.data(), CUDA_R_16BF, n, &zero, C.data(), CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT));
      };
      for (int i = 0; i < 3; ++i) gemm();
      double best = 1e30;
      for (int i = 0; i < 10; ++i) best = std::min(best, time_call(gemm));
      out.push_back({"ceiling_matmul_tflops", 2.0 * n * n * double(n) / best / 1e12});
      const std::size_t bytes = std::size_t(n) * n * 2;
      auto copy = [&] { CUDA_CHECK(cudaMemcpyAsync(C.data(), A.data(), bytes, cudaMemcpyDeviceToDevice, ctx_.stream)); };
      for (int i = 0; i < 3; ++i) copy();
      double bc = 1e30;
      for (int i = 0; i < 10; ++i) bc = std::min(bc, time_call(copy));
      out.push_back({"ceiling_copy_tbps", 2.0 * bytes / bc / 1e12});
    } catch (const std::exception&) {
    }
    release_cached();
    return out;
  }

 private:
  std::size_t driver_used() const {
    std::size_t fr = 0, tot = 0;
    cudaMemGetInfo(&fr, &tot);
    return tot - fr;
  }
  CudaAllocator alloc_;
  CudaContext ctx_;
  cudaEvent_t ev0_{}, ev1_{};
  cudaDeviceProp prop_{};
  std::string cudnn_why_;
  std::size_t baseline_used_ = 0;
  bool poison_ = false;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why) *why = e != cudaSuccess ? std::string("no CUDA device: ") + cudaGetErrorString(e) : "no CUDA device";
    (void)cudaGetLastError();
    return nullptr;
  }
  int drv = 0;
  cudaDriverGetVersion(&drv);
  int rt = 0;
  cudaRuntimeGetVersion(&rt);
  if (drv < rt) {
    if (why) *why = "the CUDA driver (" + std::to_string(drv) + ") is older than the runtime (" + std::to_string(rt) + ")";
    return nullptr;
  }
  try {
    return std::make_unique<CudaBackend>();
  } catch (const std::exception& ex) {
    if (why) *why = ex.what();
    return nullptr;
  }
}

}  // namespace longmix
