// `longmix run` end to end: weights round trip, outputs against float64, every bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <filesystem>

#include "common/compare.h"
#include "common/rng.h"
#include "harness/backend.h"
#include "harness/cli_test_util.h"
#include "harness/run_op.h"
#include "io/tensor_io.h"
#include "report/records.h"

namespace fs = std::filesystem;
using namespace longmix;

namespace {
using cli_test::CliRun;
CliRun run_cli(const std::string& args) { return cli_test::run_longmix("run " + args); }
struct Dir {
  fs::path p = fs::temp_directory_path() / ("longmix_run_" + std::to_string(::getpid()));
  Dir() { fs::remove_all(p); fs::create_directories(p); }
  ~Dir() { fs::remove_all(p); }
  std::string operator/(const std::string& n) const { return (p / n).string(); }
};
std::vector<float> randn(std::size_t n, std::uint64_t seed) {
  Rng r(seed);
  std::vector<float> v(n);
  r.fill_normal(v);
  return v;
}
}  // namespace

TEST(Run, HyenaWeightsRoundTripGiveIdenticalOutputs) {
  Dir d;
  write_npy(d / "x.npy", {1, 50, 16}, randn(50 * 16, 1));
  auto r = run_cli("hyena --input " + d / "x.npy" + " --output " + d / "y1.npy" + " --save-weights " + d / "w.st --seed 3 --l-max 64");
  ASSERT_EQ(r.code, 0) << r.out;
  r = run_cli("hyena --weights " + d / "w.st --input " + d / "x.npy" + " --output " + d / "y2.npy");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read_npy(d / "y1.npy").data, read_npy(d / "y2.npy").data);
  // The file carries the reference module's names, the shared freq under each Sin's name.
  const auto sd = read_safetensors(d / "w.st");
  EXPECT_EQ(sd.size(), 20u);
  EXPECT_EQ(sd.at("filter_fn.implicit_filter.1.freq").data, sd.at("filter_fn.implicit_filter.5.freq").data);
  EXPECT_EQ(sd.at("filter_fn.pos_emb.z").shape, (std::vector<std::int64_t>{1, 64, 3}));
  // Against the float64 reference of the same weights and input.
  Problem p;
  p.w.op = "hyena"; p.w.scope = "layer"; p.w.B = 1; p.w.L = 50; p.w.H = 1; p.w.d = 16;
  p.hyena = hyena_from_state_dict(sd);
  p.x = read_npy(d / "x.npy").data;
  const auto c = compare(read_npy(d / "y2.npy").data, reference_output(p));
  EXPECT_TRUE(c.passes(1e-5)) << c.summary();
}

TEST(Run, AttentionLayerOnGivenWeightsMatchesOwnFloat64) {
  Dir d;
  const std::int64_t L = 37, D = 32, H = 2, dh = 16;
  const auto Wqkv = randn(3 * D * D, 2), bqkv = randn(3 * D, 3), Wo = randn(D * D, 4), bo = randn(D, 5);
  write_safetensors(d / "w.st", {{"Wqkv.weight", {{3 * D, D}, Wqkv, "F32"}}, {"Wqkv.bias", {{3 * D}, bqkv, "F32"}},
                                 {"out_proj.weight", {{D, D}, Wo, "F32"}}, {"out_proj.bias", {{D}, bo, "F32"}}});
  const auto x = randn(L * D, 6);
  write_npy(d / "x.npy", {L, D}, x);
  const auto r = run_cli("attention-layer --weights " + d / "w.st --heads 2 --causal --input " + d / "x.npy" + " --output " + d / "y.npy");
  ASSERT_EQ(r.code, 0) << r.out;
  // float64: qkv, causal softmax attention per head, out_proj.
  std::vector<double> qkv(L * 3 * D), o(L * D, 0.0), y(L * D);
  for (std::int64_t t = 0; t < L; ++t)
    for (std::int64_t j = 0; j < 3 * D; ++j) {
      double a = bqkv[j];
      for (std::int64_t c = 0; c < D; ++c) a += double(x[t * D + c]) * Wqkv[j * D + c];
      qkv[t * 3 * D + j] = a;
    }
  for (std::int64_t h = 0; h < H; ++h)
    for (std::int64_t i = 0; i < L; ++i) {
      std::vector<double> s(i + 1);
      double mx = -1e300, sum = 0;
      for (std::int64_t j = 0; j <= i; ++j) {
        double a = 0;
        for (std::int64_t c = 0; c < dh; ++c) a += qkv[i * 3 * D + h * dh + c] * qkv[j * 3 * D + D + h * dh + c];
        s[j] = a / std::sqrt(double(dh));
        mx = std::max(mx, s[j]);
      }
      for (auto& e : s) sum += (e = std::exp(e - mx));
      for (std::int64_t j = 0; j <= i; ++j)
        for (std::int64_t c = 0; c < dh; ++c) o[i * D + h * dh + c] += s[j] / sum * qkv[j * 3 * D + 2 * D + h * dh + c];
    }
  for (std::int64_t t = 0; t < L; ++t)
    for (std::int64_t j = 0; j < D; ++j) {
      double a = bo[j];
      for (std::int64_t c = 0; c < D; ++c) a += o[t * D + c] * Wo[j * D + c];
      y[t * D + j] = a;
    }
  const auto out = read_npy(d / "y.npy");
  EXPECT_EQ(out.shape, (std::vector<std::int64_t>{L, D}));
  EXPECT_TRUE(compare(out.data, y).passes(1e-5)) << compare(out.data, y).summary();
}

TEST(Run, FlashOnQkvFiles) {
  Dir d;
  for (const char* n : {"q", "k", "v"}) write_npy(d / (std::string(n) + ".npy"), {1, 20, 2, 32}, randn(20 * 64, n[0]));
  const auto r = run_cli("flash --q " + d / "q.npy --k " + d / "k.npy --v " + d / "v.npy --output " + d / "o.npy");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read_npy(d / "o.npy").shape, (std::vector<std::int64_t>{1, 20, 2, 32}));
}

TEST(Run, ImplNamesTheImplementationThatRuns) {
  Dir d;
  write_npy(d / "x.npy", {1, 30, 16}, randn(30 * 16, 9));
  const auto r = run_cli("hyena --input " + d / "x.npy --output " + d / "y.npy --impl hyena-cpu --l-max 32");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("longmix run: hyena-cpu"), std::string::npos) << r.out;
}

TEST(Run, BadInputsGiveTheirMessageExitTwoAndNoOutput) {
  Dir d;
  write_npy(d / "x.npy", {1, 50, 16}, randn(50 * 16, 1));
  ASSERT_EQ(run_cli("hyena --input " + d / "x.npy --output " + d / "y.npy --save-weights " + d / "w.st --l-max 40").code, 2)
      << "L=50 > l_max=40 must be refused";
  ASSERT_EQ(run_cli("hyena --input " + d / "x.npy --output " + d / "y.npy --save-weights " + d / "w.st --l-max 64").code, 0);
  fs::remove(d / "y.npy");
  const std::string good = read_file(d / "w.st");
  // truncated and oversized safetensors headers
  write_file_atomic(d / "trunc.st", good.substr(0, 20));
  std::string over = good;
  over[6] = 0x7f;
  write_file_atomic(d / "over.st", over);
  // wrong dtype, NaN input, shape mismatch, L > l_max
  std::string f8 = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }";
  while ((10 + f8.size() + 1) % 64) f8 += ' ';
  f8 += '\n';
  write_file_atomic(d / "f8.npy", std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(f8.size()) + '\0' + f8 + std::string(16, '\0'));
  auto nan = randn(50 * 16, 2);
  nan[7] = NAN;
  write_npy(d / "nan.npy", {1, 50, 16}, nan);
  write_npy(d / "wide.npy", {1, 50, 24}, randn(50 * 24, 3));
  write_npy(d / "long.npy", {1, 65, 16}, randn(65 * 16, 4));
  write_file_atomic(d / "trunc.npy", read_file(d / "x.npy").substr(0, 9));
  // missing and unexpected names
  auto sd = read_safetensors(d / "w.st");
  sd.erase("out_proj.bias");
  sd["extra.weight"] = HostTensor{{1}, {0.0f}, "F32"};
  write_safetensors(d / "names.st", sd);
  const std::string out = " --output " + d / "y.npy";
  struct Case { std::string args, expect; };
  const std::vector<Case> cases = {
      {"hyena --weights " + d / "trunc.st --input " + d / "x.npy" + out, "runs past the end"},
      {"hyena --weights " + d / "over.st --input " + d / "x.npy" + out, "oversized"},
      {"hyena --weights " + d / "w.st --input " + d / "f8.npy" + out, "'<f8' not supported"},
      {"hyena --weights " + d / "w.st --input " + d / "trunc.npy" + out, "not a .npy file"},
      {"hyena --weights " + d / "w.st --input " + d / "wide.npy" + out, "the weights need (B, L, 16)"},
      {"hyena --weights " + d / "w.st --input " + d / "long.npy" + out, "l_max=64"},
      {"hyena --weights " + d / "w.st --input " + d / "nan.npy" + out, "NaN/Inf"},
      {"hyena --weights " + d / "names.st --input " + d / "x.npy" + out, "missing: out_proj.bias; unexpected: extra.weight"},
      {"hyena --weights " + d / "w.st --input " + d / "x.npy --memory-limit 1KiB" + out, "below the inputs' size"},
      {"attention-layer --weights " + d / "w.st --input " + d / "x.npy" + out, "missing: Wqkv.bias Wqkv.weight"},
      {"mamba --input " + d / "x.npy" + out, "unknown op 'mamba'"},
      {"hyena --weights " + d / "w.st --input " + d / "x.npy --impl flash-own" + out,
       "--impl flash-own is not an implementation of hyena on cpu (there: hyena-cpu)"},
  };
  for (const auto& c : cases) {
    const auto r = run_cli(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.expect), std::string::npos) << c.args << "\n" << r.out;
    EXPECT_FALSE(fs::exists(d / "y.npy")) << c.args;
  }
  const auto ok = run_cli("hyena --weights " + d / "w.st --input " + d / "nan.npy --allow-nonfinite" + out);
  EXPECT_EQ(ok.code, 0) << ok.out;
}
