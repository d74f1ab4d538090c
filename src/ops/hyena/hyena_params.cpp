// Hyena parameters: the reference module's names, shapes and default initialisation, and
// the implicit filter (SPEC §3 step 4).
#include <omp.h>

#include <cmath>

#include "common/cpu_math.h"
#include "common/rng.h"
#include "ops/hyena/hyena.h"

namespace longmix {

void HyenaConfig::validate() const {
  LONGMIX_REQUIRE(D > 0, "hyena: d_model D must be positive, got ", D);
  LONGMIX_REQUIRE(l_max > 0, "hyena: l_max must be positive, got ", l_max);
  LONGMIX_REQUIRE(order >= 2 && order <= 8, "hyena: unsupported order ", order,
                  " (supported: 2..8)");
  LONGMIX_REQUIRE(filter_order > 0, "hyena: filter_order must be positive, got ", filter_order);
  LONGMIX_REQUIRE(emb_dim >= 3 && emb_dim % 2 == 1, "hyena: emb_dim must be odd and >= 3, got ",
                  emb_dim);
  LONGMIX_REQUIRE(num_inner_mlps >= 0, "hyena: num_inner_mlps must be >= 0, got ",
                  num_inner_mlps);
  LONGMIX_REQUIRE(short_filter_order >= 1, "hyena: short_filter_order must be >= 1, got ",
                  short_filter_order);
  LONGMIX_REQUIRE(fast_decay_pct > 0 && slow_decay_pct > 0 && target > 0 && target < 1,
                  "hyena: modulation needs fast/slow_decay_pct > 0 and 0 < target < 1");
}

HyenaWeights HyenaWeights::init(const HyenaConfig& cfg, std::uint64_t seed) {
  cfg.validate();
  HyenaWeights w;
  w.cfg = cfg;
  const std::int64_t D = cfg.D, C = cfg.C(), Dh = cfg.Dh(), E = cfg.emb_dim, F = cfg.filter_order;
  Rng rng(seed);
  auto uniform = [&](std::vector<float>& v, std::size_t n, double fan_in) {
    v.resize(n);
    const double bound = 1.0 / std::sqrt(fan_in);
    rng.fill_uniform(v, -bound, bound);
  };
  uniform(w.in_proj_weight, C * D, D);
  uniform(w.in_proj_bias, C, D);
  uniform(w.short_filter_weight, C * cfg.short_filter_order, cfg.short_filter_order);
  uniform(w.short_filter_bias, C, cfg.short_filter_order);
  // MLP: Linear(E,F), Sin, num_inner × (Linear(F,F), Sin), Linear(F, Dh, bias=False).
  const int nl = cfg.num_linear();
  w.mlp_weight.resize(nl);
  w.mlp_bias.resize(nl);
  for (int i = 0; i < nl; ++i) {
    const std::int64_t in = i == 0 ? E : F, out = i == nl - 1 ? Dh : F;
    uniform(w.mlp_weight[i], out * in, static_cast<double>(in));
    if (i != nl - 1) uniform(w.mlp_bias[i], out, static_cast<double>(in));
  }
  w.filter_bias.resize(Dh);
  rng.fill_normal(w.filter_bias);
  w.freq.assign(F, cfg.w);
  // Exponential modulation: deltas = linspace(ln(target)/slow, ln(target)/fast, Dh).
  const double max_decay = std::log(cfg.target) / cfg.fast_decay_pct;
  const double min_decay = std::log(cfg.target) / cfg.slow_decay_pct;
  w.modulation_deltas.resize(Dh);
  for (std::int64_t c = 0; c < Dh; ++c)
    w.modulation_deltas[c] = static_cast<float>(
        Dh == 1 ? min_decay : min_decay + (max_decay - min_decay) * c / (Dh - 1));
  // Positional embedding buffers over l_max: t = linspace(0, 1, l_max), z = [t, cos, -sin].
  const std::int64_t Lm = cfg.l_max;
  const int bands = cfg.bands();
  w.pos_emb_t.resize(Lm);
  w.pos_emb_z.resize(Lm * E);
  const double pi = 3.14159265358979323846;
  for (std::int64_t i = 0; i < Lm; ++i) {
    const double t = Lm == 1 ? 0.0 : static_cast<double>(i) / (Lm - 1);
    const double omega = 2 * pi * i / Lm;
    w.pos_emb_t[i] = static_cast<float>(t);
    float* z = &w.pos_emb_z[i * E];
    z[0] = static_cast<float>(t);
    for (int b = 0; b < bands; ++b) {
      const double f = bands == 1 ? 1e-4 : 1e-4 + (bands - 1 - 1e-4) * b / (bands - 1);
      z[1 + b] = static_cast<float>(std::cos(f * omega));
      z[1 + bands + b] = static_cast<float>(-std::sin(f * omega));
    }
  }
  uniform(w.out_proj_weight, D * D, D);
  uniform(w.out_proj_bias, D, D);
  return w;
}

std::vector<NamedTensor> HyenaWeights::named() {
  const std::int64_t D = cfg.D, C = cfg.C(), Dh = cfg.Dh(), E = cfg.emb_dim, F = cfg.filter_order;
  std::vector<NamedTensor> t = {
      {"in_proj.weight", {C, D}, &in_proj_weight},
      {"in_proj.bias", {C}, &in_proj_bias},
      {"short_filter.weight", {C, 1, cfg.short_filter_order}, &short_filter_weight},
      {"short_filter.bias", {C}, &short_filter_bias},
      {"filter_fn.bias", {Dh}, &filter_bias},
      {"filter_fn.pos_emb.z", {1, cfg.l_max, E}, &pos_emb_z},
      {"filter_fn.pos_emb.t", {1, cfg.l_max, 1}, &pos_emb_t},
  };
  const int nl = cfg.num_linear();
  for (int i = 0; i < nl; ++i) {
    const std::int64_t in = i == 0 ? E : F, out = i == nl - 1 ? Dh : F;
    const std::string base = "filter_fn.implicit_filter." + std::to_string(2 * i);
    t.push_back({base + ".weight", {out, in}, &mlp_weight[i]});
    if (i != nl - 1) {
      t.push_back({base + ".bias", {out}, &mlp_bias[i]});
      t.push_back({"filter_fn.implicit_filter." + std::to_string(2 * i + 1) + ".freq", {1, F},
                   &freq});
    }
  }
  t.push_back({"filter_fn.modulation.deltas", {1, 1, Dh}, &modulation_deltas});
  t.push_back({"out_proj.weight", {D, D}, &out_proj_weight});
  t.push_back({"out_proj.bias", {D}, &out_proj_bias});
  return t;
}

void HyenaWeights::require_plan(const std::string& impl, std::int64_t B, std::int64_t L,
                                const std::string& unsupported) const {
  validate();
  LONGMIX_REQUIRE(unsupported.empty(), unsupported);
  LONGMIX_REQUIRE(B > 0 && L > 0, impl, ": B and L must be positive");
  LONGMIX_REQUIRE(L <= cfg.l_max, "hyena: L=", L, " is longer than l_max=", cfg.l_max,
                  " of these weights (the filter's time grid is fixed by l_max)");
}

void HyenaWeights::validate() const {
  cfg.validate();
  auto* self = const_cast<HyenaWeights*>(this);
  for (const auto& nt : self->named()) {
    std::int64_t n = 1;
    for (auto s : nt.shape) n *= s;
    LONGMIX_REQUIRE(static_cast<std::int64_t>(nt.data->size()) == n, "hyena weights: ", nt.name,
                    " holds ", nt.data->size(), " values, its shape needs ", n);
  }
}

HyenaView view_of(const HyenaWeights& w) {
  HyenaView v;
  v.cfg = w.cfg;
  v.in_proj_weight = w.in_proj_weight.data();
  v.in_proj_bias = w.in_proj_bias.data();
  v.short_filter_weight = w.short_filter_weight.data();
  v.short_filter_bias = w.short_filter_bias.data();
  v.filter_bias = w.filter_bias.data();
  v.pos_emb_z = w.pos_emb_z.data();
  v.pos_emb_t = w.pos_emb_t.data();
  v.freq = w.freq.data();
  v.modulation_deltas = w.modulation_deltas.data();
  v.out_proj_weight = w.out_proj_weight.data();
  v.out_proj_bias = w.out_proj_bias.data();
  for (std::size_t i = 0; i < w.mlp_weight.size(); ++i) {
    v.mlp_weight.push_back(w.mlp_weight[i].data());
    v.mlp_bias.push_back(w.mlp_bias[i].empty() ? nullptr : w.mlp_bias[i].data());
  }
  return v;
}

void hyena_filter_cpu(const HyenaView& w, std::int64_t L, float* h, Allocator& alloc,
                      FilterLayout layout) {
  const HyenaConfig& cfg = w.cfg;
  LONGMIX_REQUIRE(L > 0 && L <= cfg.l_max, "hyena filter: L=", L, " must be in 1..l_max=",
                  cfg.l_max, " (the filter's time grid is fixed by l_max)");
  const std::int64_t F = cfg.filter_order, E = cfg.emb_dim, Dh = cfg.Dh();
  Buffer<float> a(alloc, static_cast<std::size_t>(L * F));  // (L, F)
  Buffer<float> b(alloc, static_cast<std::size_t>(L * F));  // (L, F)
  auto sin_act = [&](float* x) {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < L; ++i)
      for (std::int64_t c = 0; c < F; ++c) x[i * F + c] = std::sin(w.freq[c] * x[i * F + c]);
  };
  linear(L, F, E, w.pos_emb_z, w.mlp_weight[0], w.mlp_bias[0], a.data());
  sin_act(a.data());
  float* cur = a.data();
  float* nxt = b.data();
  for (int i = 1; i < cfg.num_linear() - 1; ++i) {
    linear(L, F, F, cur, w.mlp_weight[i], w.mlp_bias[i], nxt);
    sin_act(nxt);
    std::swap(cur, nxt);
  }
  const float* last = w.mlp_weight[cfg.num_linear() - 1];  // (Dh, F)
  auto window = [&](std::int64_t i, std::int64_t c) {
    return std::exp(-w.pos_emb_t[i] * std::fabs(w.modulation_deltas[c])) + cfg.shift;
  };
  if (layout == FilterLayout::kTimeMajor) {
    linear(L, Dh, F, cur, last, nullptr, h);  // (L, Dh)
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < L; ++i)
      for (std::int64_t c = 0; c < Dh; ++c) h[i * Dh + c] *= window(i, c);
  } else {
    sgemm(false, true, Dh, L, F, 1.0f, last, F, cur, F, 0.0f, h, L);  // (Dh, L) = W · curᵀ
#pragma omp parallel for schedule(static)
    for (std::int64_t c = 0; c < Dh; ++c)
      for (std::int64_t i = 0; i < L; ++i) h[c * L + i] *= window(i, c);
  }
}

}  // namespace longmix
