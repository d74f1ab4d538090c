#include "harness/run_op.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <set>
#include <sstream>

#include "harness/backend.h"

namespace longmix {

namespace {

std::string shape_str(const std::vector<std::int64_t>& s) {
  std::string o = "(";
  for (std::size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + ")";
}

const HostTensor& need(const std::map<std::string, HostTensor>& sd, const std::string& k, const std::string& file) {
  auto it = sd.find(k);
  LONGMIX_REQUIRE(it != sd.end(), file, ": missing tensor '", k, "'");
  return it->second;
}

void check_finite(const HostTensor& t, const std::string& what, bool allow) {
  if (allow) return;
  const auto bad = std::count_if(t.data.begin(), t.data.end(), [](float x) { return !std::isfinite(x); });
  LONGMIX_REQUIRE(bad == 0, what, " holds ", bad, " NaN/Inf values (refused; pass --allow-nonfinite to run anyway)");
}

// (B, L, D) or (L, D) -> B, L.
std::pair<std::int64_t, std::int64_t> batch_len(const HostTensor& x, std::int64_t D, const std::string& what) {
  if (x.shape.size() == 3 && x.shape[2] == D) return {x.shape[0], x.shape[1]};
  if (x.shape.size() == 2 && x.shape[1] == D) return {1, x.shape[0]};
  LONGMIX_REQUIRE(false, what, " has shape ", shape_str(x.shape), "; the weights need (B, L, ", D, ") or (L, ", D, ")");
  return {0, 0};
}

// A malformed or unreadable file is bad input: InvalidArgument (exit 2), message kept.
template <typename F>
auto as_bad_input(F&& f) {
  try {
    return f();
  } catch (const InvalidArgument&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw InvalidArgument(e.what());
  }
}
HostTensor load_npy(const std::string& path) { return as_bad_input([&] { return read_npy(path); }); }
std::map<std::string, HostTensor> load_st(const std::string& path) {
  return as_bad_input([&] { return read_safetensors(path); });
}

}  // namespace

HyenaWeights hyena_from_state_dict(const std::map<std::string, HostTensor>& sd) {
  const std::string f = "weights";
  const auto& win = need(sd, "in_proj.weight", f);
  const auto& pz = need(sd, "filter_fn.pos_emb.z", f);
  const auto& w0 = need(sd, "filter_fn.implicit_filter.0.weight", f);
  const auto& sw = need(sd, "short_filter.weight", f);
  LONGMIX_REQUIRE(win.shape.size() == 2 && win.shape[1] > 0 && win.shape[0] % win.shape[1] == 0,
                  "in_proj.weight has shape ", shape_str(win.shape), " (expected ((N+1)·D, D))");
  LONGMIX_REQUIRE(pz.shape.size() == 3 && pz.shape[0] == 1, "filter_fn.pos_emb.z has shape ", shape_str(pz.shape),
                  " (expected (1, l_max, E))");
  LONGMIX_REQUIRE(w0.shape.size() == 2, "filter_fn.implicit_filter.0.weight has shape ", shape_str(w0.shape));
  LONGMIX_REQUIRE(sw.shape.size() == 3, "short_filter.weight has shape ", shape_str(sw.shape), " (expected (C, 1, K))");
  HyenaConfig cfg;
  cfg.D = win.shape[1];
  cfg.order = static_cast<int>(win.shape[0] / win.shape[1] - 1);
  cfg.l_max = pz.shape[1];
  cfg.emb_dim = static_cast<int>(pz.shape[2]);
  cfg.filter_order = static_cast<int>(w0.shape[0]);
  cfg.short_filter_order = static_cast<int>(sw.shape[2]);
  int linears = 0;
  while (sd.count("filter_fn.implicit_filter." + std::to_string(2 * linears) + ".weight")) ++linears;
  cfg.num_inner_mlps = linears - 2;
  cfg.validate();
  LONGMIX_REQUIRE(linears >= 2, "the filter MLP needs at least two linear layers, found ", linears);
  HyenaWeights w = HyenaWeights::init(cfg, 0);  // shapes and buffers; every value replaced below
  auto named = w.named();
  std::set<std::string> expected, present;
  for (auto& nt : named) expected.insert(nt.name);
  for (auto& [k, _] : sd) present.insert(k);
  std::vector<std::string> missing, unexpected;
  std::set_difference(expected.begin(), expected.end(), present.begin(), present.end(), std::back_inserter(missing));
  std::set_difference(present.begin(), present.end(), expected.begin(), expected.end(), std::back_inserter(unexpected));
  if (!missing.empty() || !unexpected.empty()) {
    std::ostringstream os;
    os << "the weights do not match a HyenaOperator (D=" << cfg.D << ", order=" << cfg.order << ", l_max=" << cfg.l_max << ")";
    if (!missing.empty()) { os << "; missing:"; for (auto& m : missing) os << " " << m; }
    if (!unexpected.empty()) { os << "; unexpected:"; for (auto& u : unexpected) os << " " << u; }
    throw InvalidArgument(os.str());
  }
  const std::vector<float>* first_freq = nullptr;
  std::string first_freq_name;
  for (auto& nt : named) {
    const HostTensor& t = sd.at(nt.name);
    LONGMIX_REQUIRE(t.shape == nt.shape, "tensor '", nt.name, "' has shape ", shape_str(t.shape), ", expected ", shape_str(nt.shape));
    if (nt.name.find(".freq") != std::string::npos) {
      if (!first_freq) { first_freq = &t.data; first_freq_name = nt.name; }
      else LONGMIX_REQUIRE(t.data == *first_freq, "'", nt.name, "' differs from '", first_freq_name,
                           "': the reference module shares one Sin freq across the MLP");
    }
    *nt.data = t.data;
  }
  return w;
}

std::map<std::string, HostTensor> hyena_state_dict(HyenaWeights& w) {
  std::map<std::string, HostTensor> sd;
  for (auto& nt : w.named()) sd[nt.name] = HostTensor{nt.shape, *nt.data, "F32"};
  return sd;
}

int run_op(const RunOptions& opt) {
  const std::set<std::string> ops = {"hyena", "attention-layer", "flash", "attention"};
  LONGMIX_REQUIRE(ops.count(opt.op), "unknown op '", opt.op, "' (expected hyena, attention-layer, flash or attention)");
  LONGMIX_REQUIRE(!opt.output.empty(), "--output is required");
  std::unique_ptr<Backend> be;
  std::string why;
  if (opt.backend == "cuda") {
    be = make_cuda_backend(&why);
    LONGMIX_REQUIRE(be != nullptr, "--backend cuda: no usable GPU: ", why);
  } else {
    LONGMIX_REQUIRE(opt.backend == "cpu", "--backend must be cpu or cuda, got '", opt.backend, "'");
    be = make_cpu_backend();
  }
  const std::string dtype = opt.dtype == "auto" ? be->default_dtype() : opt.dtype;
  Problem p;
  Workload& w = p.w;
  w.dtype = dtype;
  w.causal = opt.causal;
  w.seed = opt.seed;
  std::size_t input_bytes = 0;
  std::vector<std::int64_t> out_shape;
  if (opt.op == "flash" || opt.op == "attention") {
    LONGMIX_REQUIRE(!opt.q.empty() && !opt.k.empty() && !opt.v.empty(), opt.op, " needs --q, --k and --v (.npy, (B, L, H, d))");
    const HostTensor q = load_npy(opt.q), k = load_npy(opt.k), v = load_npy(opt.v);
    LONGMIX_REQUIRE(q.shape.size() == 4, opt.q, ": shape ", shape_str(q.shape), " is not (B, L, H, d)");
    LONGMIX_REQUIRE(k.shape == q.shape && v.shape == q.shape, "--q, --k, --v shapes differ: ", shape_str(q.shape), " ",
                    shape_str(k.shape), " ", shape_str(v.shape));
    check_finite(q, opt.q, opt.allow_nonfinite);
    check_finite(k, opt.k, opt.allow_nonfinite);
    check_finite(v, opt.v, opt.allow_nonfinite);
    w.op = opt.op;
    w.scope = "core";
    w.B = q.shape[0]; w.L = q.shape[1]; w.H = q.shape[2]; w.d = q.shape[3];
    p.q = q.data; p.k = k.data; p.v = v.data;
    input_bytes = 3 * q.data.size() * 4;
    out_shape = q.shape;
  } else {
    LONGMIX_REQUIRE(!opt.input.empty(), "--input is required for ", opt.op);
    const HostTensor x = load_npy(opt.input);
    check_finite(x, opt.input, opt.allow_nonfinite);
    w.scope = "layer";
    if (opt.op == "hyena") {
      w.op = "hyena";
      if (!opt.weights.empty()) {
        p.hyena = hyena_from_state_dict(load_st(opt.weights));
      } else {
        HyenaConfig cfg;
        cfg.D = x.shape.empty() ? 0 : x.shape.back();
        cfg.l_max = opt.l_max ? opt.l_max : (x.shape.size() >= 2 ? x.shape[x.shape.size() - 2] : 0);
        p.hyena = HyenaWeights::init(cfg, opt.seed);
      }
      const std::int64_t D = p.hyena.cfg.D;
      std::tie(w.B, w.L) = batch_len(x, D, opt.input);
      LONGMIX_REQUIRE(w.L <= p.hyena.cfg.l_max, "the input is L=", w.L, " long but the weights have l_max=", p.hyena.cfg.l_max,
                      ": the implicit filter's time grid t_i = i/(l_max-1) and its positional embedding are fixed by l_max, "
                      "so longer inputs have no filter values");
      w.H = 1; w.d = D;  // Hyena has no heads; D = H·d with H = 1
      w.l_max = p.hyena.cfg.l_max;
      w.order = p.hyena.cfg.order;
      if (!opt.save_weights.empty()) write_safetensors(opt.save_weights, hyena_state_dict(p.hyena));
    } else {
      w.op = "flash";
      std::int64_t D = x.shape.empty() ? 0 : x.shape.back();
      if (!opt.weights.empty()) {
        const auto sd = load_st(opt.weights);
        const std::set<std::string> names = {"Wqkv.weight", "Wqkv.bias", "out_proj.weight", "out_proj.bias"};
        std::vector<std::string> missing, unexpected;
        for (auto& n : names) if (!sd.count(n)) missing.push_back(n);
        for (auto& [k, _] : sd) if (!names.count(k)) unexpected.push_back(k);
        if (!missing.empty() || !unexpected.empty()) {
          std::ostringstream os;
          os << opt.weights << ": not an MHA layer's weights";
          if (!missing.empty()) { os << "; missing:"; for (auto& m : missing) os << " " << m; }
          if (!unexpected.empty()) { os << "; unexpected:"; for (auto& u : unexpected) os << " " << u; }
          throw InvalidArgument(os.str());
        }
        D = sd.at("out_proj.weight").shape.empty() ? 0 : sd.at("out_proj.weight").shape[0];
        auto expect = [&](const std::string& n, std::vector<std::int64_t> s) {
          LONGMIX_REQUIRE(sd.at(n).shape == s, "tensor '", n, "' has shape ", shape_str(sd.at(n).shape), ", expected ", shape_str(s));
        };
        expect("Wqkv.weight", {3 * D, D});
        expect("Wqkv.bias", {3 * D});
        expect("out_proj.weight", {D, D});
        expect("out_proj.bias", {D});
        p.attn.D = D;
        p.attn.H = opt.heads;
        p.attn.Wqkv_weight = sd.at("Wqkv.weight").data;
        p.attn.Wqkv_bias = sd.at("Wqkv.bias").data;
        p.attn.out_proj_weight = sd.at("out_proj.weight").data;
        p.attn.out_proj_bias = sd.at("out_proj.bias").data;
      } else {
        p.attn = AttentionLayerWeights::init(D, opt.heads, opt.seed);
      }
      LONGMIX_REQUIRE(opt.heads > 0 && D % opt.heads == 0, "--heads ", opt.heads, " does not divide D=", D);
      std::tie(w.B, w.L) = batch_len(x, D, opt.input);
      w.H = opt.heads;
      w.d = D / opt.heads;
      if (!opt.save_weights.empty())
        write_safetensors(opt.save_weights, {{"Wqkv.weight", {{3 * D, D}, p.attn.Wqkv_weight, "F32"}},
                                             {"Wqkv.bias", {{3 * D}, p.attn.Wqkv_bias, "F32"}},
                                             {"out_proj.weight", {{D, D}, p.attn.out_proj_weight, "F32"}},
                                             {"out_proj.bias", {{D}, p.attn.out_proj_bias, "F32"}}});
    }
    p.x = x.data;
    input_bytes = x.data.size() * 4;
    out_shape = x.shape;
  }
  if (opt.memory_limit) {
    LONGMIX_REQUIRE(*opt.memory_limit > input_bytes, "--memory-limit ", format_bytes(*opt.memory_limit),
                    " is below the inputs' size ", format_bytes(input_bytes));
    be->allocator().set_cap(*opt.memory_limit);
  }
  // The fastest implementation that takes these weights (hyena-fused, e.g., needs F <= 64 and
  // even D; hyena-cuda takes the rest); the reasons of all when none does.
  std::string impl, reasons;
  std::unique_ptr<Runner> runner;
  std::vector<std::string> cands = be->impls(w.op);
  if (!opt.impl.empty()) {
    std::string known;
    for (const auto& c : cands) known += (known.empty() ? "" : ", ") + c;
    LONGMIX_REQUIRE(std::find(cands.begin(), cands.end(), opt.impl) != cands.end(), "--impl ", opt.impl,
                    " is not an implementation of ", w.op, " on ", be->name(), " (there: ", known, ")");
    cands = {opt.impl};
  }
  for (const auto& cand : cands) {
    std::string why_not = be->unsupported(cand, w);
    if (why_not.empty()) {
      try {
        runner = be->make(cand, p);
        impl = cand;
        break;
      } catch (const InvalidArgument& e) {
        why_not = e.what();
      }
    }
    reasons += (reasons.empty() ? "" : "; ") + cand + ": " + why_not;
  }
  LONGMIX_REQUIRE(runner != nullptr, "no implementation of ", w.op, " on ", be->name(), " takes this input (", reasons, ")");
  runner->forward();
  be->synchronize();
  const auto y = runner->output();
  write_npy(opt.output, out_shape, y);
  std::cerr << "longmix run: " << impl << " " << w.describe() << " -> " << opt.output << " " << shape_str(out_shape) << "\n";
  return 0;
}

}  // namespace longmix
