// flash-cudnn: cuDNN's fused flash attention through cudnn-frontend's SDPA graph.
// Kept in its own translation unit: the frontend headers are slow to compile.
#include <cudnn.h>
#include <cudnn_frontend.h>

#include <mutex>

#include "common/cuda_check.h"
#include "ops/attention/attention_cuda.h"

namespace fe = cudnn_frontend;

namespace longmix {

namespace {
#define CUDNN_CHECK(x)                                                                      \
  do {                                                                                      \
    cudnnStatus_t s_ = (x);                                                                 \
    if (s_ != CUDNN_STATUS_SUCCESS)                                                         \
      throw RuntimeFailure(detail::concat(__FILE__, ":", __LINE__, ": ", #x, ": ",         \
                                          cudnnGetErrorString(s_)));                        \
  } while (0)

void fe_check(fe::error_t e, const char* what, const char* file, int line) {
  if (e.is_good()) return;
  throw RuntimeFailure(detail::concat(file, ":", line, ": cudnn-frontend ", what, ": ", e.get_message()));
}
#define FE_CHECK(x) fe_check((x), #x, __FILE__, __LINE__)

cudnnHandle_t shared_handle() {
  static cudnnHandle_t h = [] {
    cudnnHandle_t x;
    CUDNN_CHECK(cudnnCreate(&x));
    return x;
  }();
  return h;
}
enum Uid : std::int64_t { kQ = 1, kK, kV, kO, kStats };
}  // namespace

struct CudnnFlash::Impl {
  std::shared_ptr<fe::graph::Graph> graph;
  std::int64_t workspace = 0;
};

std::string cudnn_version_string() {
  const std::size_t v = cudnnGetVersion();
  return std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." + std::to_string(v % 100) +
         " (headers " + std::to_string(CUDNN_MAJOR) + "." + std::to_string(CUDNN_MINOR) + "." +
         std::to_string(CUDNN_PATCHLEVEL) + ", frontend " + std::to_string(CUDNN_FRONTEND_MAJOR_VERSION) + "." +
         std::to_string(CUDNN_FRONTEND_MINOR_VERSION) + "." + std::to_string(CUDNN_FRONTEND_PATCH_VERSION) + ")";
}

std::string cudnn_flash_unsupported(const AttentionParams& p, DType t) {
  if (t == DType::kF32) return "flash-cudnn supports fp16 and bf16 storage only";
  if (p.d != 64 && p.d != 128) return "flash-cudnn here covers head dims 64 and 128, not " + std::to_string(p.d);
  if (cudnnGetVersion() < 90000) return "cuDNN " + std::to_string(cudnnGetVersion()) + " is older than 9.0";
  return {};
}

CudnnFlash::CudnnFlash(const AttentionParams& p, DType t, std::int64_t ld_in, std::int64_t ld_o)
    : impl_(std::make_unique<Impl>()) {
  const std::string why = cudnn_flash_unsupported(p, t);
  LONGMIX_REQUIRE(why.empty(), why);
  const std::int64_t B = p.B, H = p.H, L = p.L, d = p.d;
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(t == DType::kF16 ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  // Logical (B, H, L, d) over memory (B, L, H, d) with row stride ld.
  auto in = [&](const char* name, std::int64_t uid) {
    return g->tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim({B, H, L, d})
                         .set_stride({L * ld_in, d, ld_in, 1}));
  };
  auto Q = in("Q", kQ), K = in("K", kK), V = in("V", kV);
  auto opts = fe::graph::SDPA_attributes().set_name("flash").set_generate_stats(true)
                  .set_attn_scale(p.softmax_scale()).set_causal_mask(p.causal);
  auto [O, Stats] = g->sdpa(Q, K, V, opts);
  O->set_output(true).set_uid(kO).set_dim({B, H, L, d}).set_stride({L * ld_o, d, ld_o, 1});
  Stats->set_output(true).set_uid(kStats).set_data_type(fe::DataType_t::FLOAT)
      .set_dim({B, H, L, 1}).set_stride({H * L, L, 1, 1});
  static std::mutex mu;  // graph building shares the handle
  std::lock_guard<std::mutex> lock(mu);
  FE_CHECK(g->validate());
  FE_CHECK(g->build_operation_graph(shared_handle()));
  FE_CHECK(g->create_execution_plans({fe::HeurMode_t::A}));
  FE_CHECK(g->check_support(shared_handle()));
  FE_CHECK(g->build_plans(shared_handle()));
  FE_CHECK(g->get_workspace_size(impl_->workspace));
  impl_->graph = g;
}

CudnnFlash::~CudnnFlash() = default;

std::int64_t CudnnFlash::workspace_bytes() const { return impl_->workspace; }

void CudnnFlash::run(const void* q, const void* k, const void* v, void* o, float* lse, CudaContext& ctx) {
  CUDNN_CHECK(cudnnSetStream(shared_handle(), ctx.stream));
  Buffer<char> ws;
  if (impl_->workspace > 0) ws = Buffer<char>(*ctx.alloc, static_cast<std::size_t>(impl_->workspace));
  std::unordered_map<std::int64_t, void*> pack = {
      {kQ, const_cast<void*>(q)}, {kK, const_cast<void*>(k)}, {kV, const_cast<void*>(v)}, {kO, o}, {kStats, lse}};
  FE_CHECK(impl_->graph->execute(shared_handle(), pack, ws.data()));
}

}  // namespace longmix
