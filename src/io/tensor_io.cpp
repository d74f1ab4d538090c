#include "io/tensor_io.h"

#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "report/records.h"

namespace longmix {

namespace {
[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw std::runtime_error(name + ": " + what);
}

constexpr std::uint64_t kMaxHeader = 100ull << 20;  // a header larger than 100 MB is not a header

std::int64_t checked_numel(const std::vector<std::int64_t>& shape, const std::string& name) {
  std::int64_t n = 1;
  for (auto s : shape) {
    if (s < 0) fail(name, "negative dimension " + std::to_string(s));
    if (s != 0 && n > std::numeric_limits<std::int64_t>::max() / 8 / s) fail(name, "shape too large");
    n *= s;
  }
  return n;
}

void convert(const unsigned char* p, std::int64_t n, const std::string& dtype, std::vector<float>& out) {
  out.resize(static_cast<std::size_t>(n));
  if (n == 0) return;  // memcpy from/to a null pointer is undefined even for 0 bytes
  if (dtype == "F32") {
    std::memcpy(out.data(), p, static_cast<std::size_t>(n) * 4);
  } else {
    for (std::int64_t i = 0; i < n; ++i) {
      const std::uint16_t v = static_cast<std::uint16_t>(p[2 * i] | (p[2 * i + 1] << 8));
      out[i] = dtype == "F16" ? half_to_float(v) : bf16_to_float(v);
    }
  }
}
}  // namespace

std::int64_t HostTensor::numel() const {
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  std::uint32_t bits;
  if (exp == 0) {
    if (man == 0) bits = sign;
    else {  // subnormal
      int e = -1;
      std::uint32_t m = man;
      do { m <<= 1; ++e; } while (!(m & 0x400));
      bits = sign | ((127 - 15 - e) << 23) | ((m & 0x3ff) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_to_float(std::uint16_t b) {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

HostTensor parse_npy(const std::string& bytes, const std::string& name) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) fail(name, "not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  std::uint64_t hlen = 0, start = 0;
  if (major == 1) {
    hlen = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail(name, "truncated header");
    for (int i = 0; i < 4; ++i) hlen |= std::uint64_t(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    start = 12;
  } else {
    fail(name, "unsupported .npy format version " + std::to_string(major));
  }
  if (hlen > kMaxHeader || start + hlen > bytes.size()) fail(name, "header length " + std::to_string(hlen) + " runs past the end of the file");
  const std::string h = bytes.substr(start, hlen);
  auto field = [&](const std::string& key) -> std::string {
    const auto k = h.find("'" + key + "'");
    if (k == std::string::npos) fail(name, "header lacks '" + key + "'");
    auto c = h.find(':', k);
    if (c == std::string::npos) fail(name, "malformed header near '" + key + "'");
    ++c;
    while (c < h.size() && h[c] == ' ') ++c;
    if (c >= h.size()) fail(name, "malformed header near '" + key + "'");
    if (h[c] == '\'') {
      const auto e = h.find('\'', c + 1);
      if (e == std::string::npos) fail(name, "malformed header near '" + key + "'");
      return h.substr(c + 1, e - c - 1);
    }
    if (h[c] == '(') {
      const auto e = h.find(')', c);
      if (e == std::string::npos) fail(name, "malformed shape");
      return h.substr(c + 1, e - c - 1);
    }
    const auto e = h.find_first_of(",}", c);
    return h.substr(c, e == std::string::npos ? std::string::npos : e - c);
  };
  const std::string descr = field("descr"), order = field("fortran_order"), shape_s = field("shape");
  HostTensor t;
  if (descr == "<f4" || descr == "=f4") t.dtype = "F32";
  else if (descr == "<f2" || descr == "=f2") t.dtype = "F16";
  else fail(name, "dtype '" + descr + "' not supported (expected little-endian float32 '<f4' or float16 '<f2')");
  if (order.rfind("False", 0) != 0) fail(name, "Fortran-ordered arrays are not supported (save with C order)");
  std::size_t i = 0;
  while (i < shape_s.size()) {
    while (i < shape_s.size() && (shape_s[i] == ' ' || shape_s[i] == ',')) ++i;
    if (i >= shape_s.size()) break;
    std::size_t j = i;
    while (j < shape_s.size() && std::isdigit(static_cast<unsigned char>(shape_s[j]))) ++j;
    if (j == i || j - i > 15) fail(name, "malformed shape '(" + shape_s + ")'");
    t.shape.push_back(std::stoll(shape_s.substr(i, j - i)));
    i = j;
  }
  const std::int64_t n = checked_numel(t.shape, name);
  const std::uint64_t need = static_cast<std::uint64_t>(n) * (t.dtype == "F32" ? 4 : 2);
  const std::uint64_t have = bytes.size() - start - hlen;
  if (have != need)
    fail(name, "data holds " + std::to_string(have) + " bytes; shape (" + shape_s + ") of " + descr + " needs " + std::to_string(need));
  convert(reinterpret_cast<const unsigned char*>(bytes.data() + start + hlen), n, t.dtype, t.data);
  return t;
}

HostTensor read_npy(const std::string& path) { return parse_npy(read_file(path), path); }

void write_npy(const std::string& path, const std::vector<std::int64_t>& shape, const std::vector<float>& data) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += std::to_string(shape[i]) + (shape.size() == 1 || i + 1 < shape.size() ? "," : "");
  s += ")";
  std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': " + s + ", }";
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>((h.size() >> 8) & 0xff);
  out += h;
  out.append(reinterpret_cast<const char*>(data.data()), data.size() * 4);
  write_file_atomic(path, out);
}

std::map<std::string, HostTensor> parse_safetensors(const std::string& bytes, const std::string& name) {
  if (bytes.size() < 8) fail(name, "truncated: fewer than 8 bytes, no header length");
  std::uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i) hlen |= std::uint64_t(static_cast<unsigned char>(bytes[i])) << (8 * i);
  if (hlen > kMaxHeader) fail(name, "header length " + std::to_string(hlen) + " is oversized (limit 100 MB)");
  if (8 + hlen > bytes.size()) fail(name, "truncated: header length " + std::to_string(hlen) + " runs past the end of the file (" + std::to_string(bytes.size()) + " bytes)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(bytes.substr(8, hlen));
  } catch (const nlohmann::json::exception& e) {
    fail(name, std::string("malformed JSON header: ") + e.what());
  }
  if (!j.is_object()) fail(name, "header is not a JSON object");
  const std::uint64_t data_size = bytes.size() - 8 - hlen;
  std::map<std::string, HostTensor> out;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const auto& v = it.value();
    const std::string tn = name + ": tensor '" + it.key() + "'";
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
      throw std::runtime_error(tn + ": needs dtype, shape and data_offsets");
    HostTensor t;
    if (!v["dtype"].is_string()) throw std::runtime_error(tn + ": dtype is not a string");
    t.dtype = v["dtype"].get<std::string>();
    if (t.dtype != "F32" && t.dtype != "F16" && t.dtype != "BF16")
      throw std::runtime_error(tn + ": dtype " + t.dtype + " not supported (F32, F16, BF16)");
    if (!v["shape"].is_array()) throw std::runtime_error(tn + ": shape is not an array");
    for (const auto& d : v["shape"]) {
      if (!d.is_number_integer()) throw std::runtime_error(tn + ": shape holds a non-integer");
      t.shape.push_back(d.get<std::int64_t>());
    }
    const auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      throw std::runtime_error(tn + ": data_offsets must be two non-negative integers");
    const std::uint64_t b = off[0].get<std::uint64_t>(), e = off[1].get<std::uint64_t>();
    if (b > e || e > data_size)
      throw std::runtime_error(tn + ": data_offsets [" + std::to_string(b) + ", " + std::to_string(e) +
                               ") outside the " + std::to_string(data_size) + " data bytes");
    const std::int64_t n = checked_numel(t.shape, tn);
    const std::uint64_t need = static_cast<std::uint64_t>(n) * (t.dtype == "F32" ? 4 : 2);
    if (e - b != need)
      throw std::runtime_error(tn + ": holds " + std::to_string(e - b) + " bytes, its shape and dtype need " + std::to_string(need));
    ranges.emplace_back(b, e);
    convert(reinterpret_cast<const unsigned char*>(bytes.data() + 8 + hlen + b), n, t.dtype, t.data);
    out.emplace(it.key(), std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second) fail(name, "tensors' data ranges overlap");
  return out;
}

std::map<std::string, HostTensor> read_safetensors(const std::string& path) {
  return parse_safetensors(read_file(path), path);
}

void write_safetensors(const std::string& path, const std::map<std::string, HostTensor>& tensors) {
  nlohmann::json h = nlohmann::json::object();
  h["__metadata__"] = {{"format", "pt"}};
  std::uint64_t off = 0;
  for (const auto& [k, t] : tensors) {
    const std::uint64_t n = t.data.size() * 4;
    h[k] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {off, off + n}}};
    off += n;
  }
  std::string hs = h.dump();
  while ((8 + hs.size()) % 8) hs += ' ';
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((hs.size() >> (8 * i)) & 0xff);
  out += hs;
  for (const auto& [k, t] : tensors) out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size() * 4);
  write_file_atomic(path, out);
}

}  // namespace longmix
