// .npy and safetensors readers: round trips and every malformed input named.
#include "io/tensor_io.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "report/records.h"

using namespace longmix;

namespace {
std::string tmp(const std::string& n) {
  return (std::filesystem::temp_directory_path() / ("longmix_io_" + std::to_string(::getpid()) + "_" + n)).string();
}
std::string st_bytes(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}
void expect_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning " << needle;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}
}  // namespace

TEST(Npy, RoundTripAndFloat16) {
  const std::string p = tmp("a.npy");
  std::vector<float> v = {1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, 7.0f};
  write_npy(p, {2, 3}, v);
  const auto t = read_npy(p);
  EXPECT_EQ(t.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(t.data, v);
  // float16 written by hand: 1.0, -2.0, 0.5 (+ a subnormal)
  std::string h = "{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }";
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string b = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(h.size()) + '\0' + h;
  const unsigned short hv[4] = {0x3c00, 0xc000, 0x3800, 0x0001};
  b.append(reinterpret_cast<const char*>(hv), 8);
  const auto f = parse_npy(b, "f16.npy");
  EXPECT_EQ(f.data[0], 1.0f);
  EXPECT_EQ(f.data[1], -2.0f);
  EXPECT_EQ(f.data[2], 0.5f);
  EXPECT_FLOAT_EQ(f.data[3], std::ldexp(1.0f, -24));
  std::filesystem::remove(p);
}

TEST(Npy, MalformedInputIsNamed) {
  expect_error([] { parse_npy("hello", "x.npy"); }, "x.npy: not a .npy file");
  std::string good = std::string("\x93NUMPY\x01\x00", 8);
  expect_error([&] { parse_npy(good + std::string("\xff\xff", 2) + "{", "x.npy"); }, "runs past the end");
  auto with = [](const std::string& hdr, std::size_t data) {
    std::string h = hdr;
    while ((10 + h.size() + 1) % 64) h += ' ';
    h += '\n';
    return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(h.size()) + '\0' + h + std::string(data, '\0');
  };
  expect_error([&] { parse_npy(with("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 16), "x.npy"); }, "'<f8' not supported");
  expect_error([&] { parse_npy(with("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8), "x.npy"); }, "Fortran");
  expect_error([&] { parse_npy(with("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8), "x.npy"); }, "needs 12");
  expect_error([&] { parse_npy(with("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999,), }", 8), "x.npy"); }, "shape");
  expect_error([&] { parse_npy(with("{'descr': '<f4', 'fortran_order': False}", 8), "x.npy"); }, "lacks 'shape'");
}

TEST(Safetensors, RoundTripAndDtypes) {
  const std::string p = tmp("w.safetensors");
  std::map<std::string, HostTensor> m = {{"a", {{2, 2}, {1, 2, 3, 4}, "F32"}}, {"b", {{3}, {5, 6, 7}, "F32"}}};
  write_safetensors(p, m);
  const auto r = read_safetensors(p);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r.at("a").data, m["a"].data);
  EXPECT_EQ(r.at("b").shape, m["b"].shape);
  const unsigned short bf[2] = {0x3f80, 0xc000};  // 1.0, -2.0 in bf16
  const auto t = parse_safetensors(st_bytes(R"({"x":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})",
                                            std::string(reinterpret_cast<const char*>(bf), 4)), "x.st");
  EXPECT_EQ(t.at("x").data, (std::vector<float>{1.0f, -2.0f}));
  // Found by fuzz_npy: an empty tensor (a zero dimension) copied from a null pointer.
  const auto e = parse_safetensors(st_bytes(R"({"e":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]}})", ""), "e.st");
  EXPECT_TRUE(e.at("e").data.empty());
  std::filesystem::remove(p);
}

TEST(Safetensors, MalformedInputIsNamed) {
  expect_error([] { parse_safetensors("abc", "w.st"); }, "truncated");
  std::string big(8, '\0');
  big[7] = 0x10;
  expect_error([&] { parse_safetensors(big, "w.st"); }, "oversized");
  expect_error([] { parse_safetensors(st_bytes("{\"x\":", ""), "w.st"); }, "malformed JSON");
  std::string hdr = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::string h(8, '\0');
  h[0] = static_cast<char>(hdr.size() + 50);
  expect_error([&] { parse_safetensors(h + hdr, "w.st"); }, "runs past the end");
  expect_error([] { parse_safetensors(st_bytes(R"({"x":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})", std::string(8, '\0')), "w.st"); }, "I32 not supported");
  expect_error([] { parse_safetensors(st_bytes(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, '\0')), "w.st"); }, "need 12");
  expect_error([] { parse_safetensors(st_bytes(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,800]}})", std::string(8, '\0')), "w.st"); }, "outside");
  expect_error([] { parse_safetensors(st_bytes(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", std::string(12, '\0')), "w.st"); }, "overlap");
  expect_error([] { parse_safetensors(st_bytes(R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", std::string(8, '\0')), "w.st"); }, "negative");
  expect_error([] { parse_safetensors(st_bytes(R"({"x":{"dtype":"F32","data_offsets":[0,8]}})", std::string(8, '\0')), "w.st"); }, "needs dtype, shape");
}
