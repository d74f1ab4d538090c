// Workload descriptions, problem generation and the float64 references used by the
// start-of-run correctness check.
#include <cmath>
#include <cstring>
#include <sstream>

#include "common/rng.h"
#include "harness/backend.h"

namespace longmix {

std::string Workload::filter_name() const {
  if (op != "hyena") return "-";
  return filter_cached ? "cached" : "recompute";
}

std::string Workload::describe() const {
  std::ostringstream os;
  os << op << " " << scope << " B=" << B << " L=" << L << " H=" << H << " d=" << d << " D=" << D()
     << " " << dtype;
  if (op == "hyena") os << " order=" << order << " filter=" << filter_name();
  else os << (causal ? " causal" : " non-causal");
  return os.str();
}

Problem Problem::make(const Workload& w) {
  LONGMIX_REQUIRE(w.op == "flash" || w.op == "attention" || w.op == "hyena", "unknown op '", w.op,
                  "' (expected flash, attention or hyena)");
  LONGMIX_REQUIRE(w.scope == "layer" || w.scope == "core", "unknown scope '", w.scope,
                  "' (expected layer or core)");
  LONGMIX_REQUIRE(w.B > 0 && w.L > 0 && w.H > 0 && w.d > 0, "workload sizes must be positive: ",
                  w.describe());
  Problem p;
  p.w = w;
  Rng rng(w.seed * 1000003ull + 17);
  const std::int64_t D = w.D();
  if (w.op == "hyena") {
    HyenaConfig cfg;
    cfg.D = D;
    cfg.order = w.order;
    cfg.l_max = w.l_max;
    p.hyena = HyenaWeights::init(cfg, w.seed);
    p.x.resize(w.B * w.L * (w.scope == "core" ? cfg.C() : D));
    rng.fill_normal(p.x);
  } else if (w.scope == "layer") {
    p.attn = AttentionLayerWeights::init(D, w.H, w.seed);
    p.x.resize(w.B * w.L * D);
    rng.fill_normal(p.x);
  } else {
    for (auto* t : {&p.q, &p.k, &p.v}) {
      t->resize(w.B * w.L * D);
      rng.fill_normal(*t);
    }
  }
  return p;
}

namespace {
float round_bf16(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  std::memcpy(&x, &u, 4);
  return x;
}
}  // namespace

void round_to_dtype(std::vector<float>& v, const std::string& dtype) {
  if (dtype == "fp16")
    for (auto& x : v) x = static_cast<float>(static_cast<_Float16>(x));
  else if (dtype == "bf16")
    for (auto& x : v) x = round_bf16(x);
}

void Problem::round_to(const std::string& dtype) {
  // The GPU products add these biases in their epilogue, in the storage dtype (as PyTorch's
  // half-precision modules hold them); hyena's in_proj bias stays fp32 (added in the conv kernel).
  for (auto* v : {&x, &q, &k, &v, &attn.Wqkv_weight, &attn.out_proj_weight, &hyena.in_proj_weight,
                  &hyena.out_proj_weight, &attn.Wqkv_bias, &attn.out_proj_bias, &hyena.out_proj_bias})
    round_to_dtype(*v, dtype);
}

std::size_t Problem::output_size() const { return static_cast<std::size_t>(w.B * w.L * w.D()); }

namespace {
// (B, L, H, d) inputs with row stride ld -> (B, L, H, d) output.
void attention_f64(const Workload& w, const double* q, const double* k, const double* v,
                   std::int64_t ld, std::vector<double>& o) {
  const std::int64_t B = w.B, L = w.L, H = w.H, d = w.d;
  o.assign(B * L * H * d, 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> s(L);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < L; ++i) {
        const std::int64_t n = w.causal ? i + 1 : L;
        double mx = -INFINITY;
        for (std::int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (std::int64_t c = 0; c < d; ++c)
            acc += q[(b * L + i) * ld + h * d + c] * k[(b * L + j) * ld + h * d + c];
          s[j] = acc * scale;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (std::int64_t j = 0; j < n; ++j) sum += (s[j] = std::exp(s[j] - mx));
        double* out = &o[((b * L + i) * H + h) * d];
        for (std::int64_t j = 0; j < n; ++j)
          for (std::int64_t c = 0; c < d; ++c) out[c] += s[j] / sum * v[(b * L + j) * ld + h * d + c];
      }
}

// Y (M, N) = X (M, K) · W (N, K)ᵀ + bias.
std::vector<double> linear_f64(const std::vector<double>& X, std::int64_t M, std::int64_t K,
                               const std::vector<float>& W, const std::vector<float>* bias,
                               std::int64_t N) {
  std::vector<double> Y(M * N);
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      double acc = bias ? (*bias)[j] : 0.0;
      for (std::int64_t c = 0; c < K; ++c) acc += X[i * K + c] * W[j * K + c];
      Y[i * N + j] = acc;
    }
  return Y;
}

std::vector<double> hyena_f64(const Problem& p) {
  const Workload& w = p.w;
  const HyenaWeights& hw = p.hyena;
  const HyenaConfig& cfg = hw.cfg;
  const std::int64_t B = w.B, L = w.L, D = cfg.D, C = cfg.C(), Dh = cfg.Dh(), N = cfg.order;
  const std::int64_t K = cfg.short_filter_order, F = cfg.filter_order, E = cfg.emb_dim;
  // Filter (L, Dh) from the positional buffers through the MLP and modulation.
  std::vector<double> h(L * Dh);
  for (std::int64_t i = 0; i < L; ++i) {
    std::vector<double> a(hw.pos_emb_z.begin() + i * E, hw.pos_emb_z.begin() + (i + 1) * E);
    const int nl = cfg.num_linear();
    for (int l = 0; l < nl; ++l) {
      const std::int64_t in = l == 0 ? E : F, out = l == nl - 1 ? Dh : F;
      auto y = linear_f64(a, 1, in, hw.mlp_weight[l], l == nl - 1 ? nullptr : &hw.mlp_bias[l], out);
      if (l != nl - 1)
        for (std::int64_t c = 0; c < out; ++c) y[c] = std::sin(double(hw.freq[c]) * y[c]);
      a.swap(y);
    }
    for (std::int64_t c = 0; c < Dh; ++c)
      h[i * Dh + c] = a[c] * (std::exp(-double(hw.pos_emb_t[i]) * std::fabs(double(hw.modulation_deltas[c]))) + cfg.shift);
  }
  std::vector<double> out(B * L * D);
  for (std::int64_t b = 0; b < B; ++b) {
    std::vector<double> z;
    if (w.scope == "core") {
      z.assign(p.x.begin() + b * L * C, p.x.begin() + (b + 1) * L * C);
    } else {
      std::vector<double> u(p.x.begin() + b * L * D, p.x.begin() + (b + 1) * L * D);
      z = linear_f64(u, L, D, hw.in_proj_weight, &hw.in_proj_bias, C);
    }
    std::vector<double> zc(L * C);
    for (std::int64_t t = 0; t < L; ++t)
      for (std::int64_t c = 0; c < C; ++c) {
        double acc = hw.short_filter_bias[c];
        for (std::int64_t j = 0; j < K; ++j)
          if (t + j - (K - 1) >= 0) acc += hw.short_filter_weight[c * K + j] * z[(t + j - (K - 1)) * C + c];
        zc[t * C + c] = acc;
      }
    std::vector<double> yg(L * D), v(L), nv(L);
    for (std::int64_t c = 0; c < D; ++c) {
      for (std::int64_t t = 0; t < L; ++t) v[t] = zc[t * C + N * D + c];
      for (std::int64_t o = 0; o < N - 1; ++o) {
        for (std::int64_t t = 0; t < L; ++t) v[t] *= zc[t * C + (N - 1 - o) * D + c];
        for (std::int64_t t = 0; t < L; ++t) {
          double acc = 0;
          for (std::int64_t s = 0; s <= t; ++s) acc += h[(t - s) * Dh + o * D + c] * v[s];
          nv[t] = acc + double(hw.filter_bias[o * D + c]) * v[t];
        }
        std::swap(v, nv);
      }
      for (std::int64_t t = 0; t < L; ++t) yg[t * D + c] = v[t] * zc[t * C + c];
    }
    auto y = w.scope == "core" ? yg : linear_f64(yg, L, D, hw.out_proj_weight, &hw.out_proj_bias, D);
    std::copy(y.begin(), y.end(), out.begin() + b * L * D);
  }
  return out;
}
}  // namespace

std::vector<double> reference_output(const Problem& p) {
  const Workload& w = p.w;
  if (w.op == "hyena") return hyena_f64(p);
  const std::int64_t D = w.D(), BL = w.B * w.L;
  std::vector<double> o;
  if (w.scope == "core") {
    std::vector<double> q(p.q.begin(), p.q.end()), k(p.k.begin(), p.k.end()), v(p.v.begin(), p.v.end());
    attention_f64(w, q.data(), k.data(), v.data(), D, o);
    return o;
  }
  std::vector<double> x(p.x.begin(), p.x.end());
  auto qkv = linear_f64(x, BL, D, p.attn.Wqkv_weight, &p.attn.Wqkv_bias, 3 * D);
  attention_f64(w, qkv.data(), qkv.data() + D, qkv.data() + 2 * D, 3 * D, o);
  return linear_f64(o, BL, D, p.attn.out_proj_weight, &p.attn.out_proj_bias, D);
}

}  // namespace longmix
