// Readers and writers for the files users bring: NumPy .npy and safetensors. Both are
// untrusted input: every length field is checked against the bytes actually present, and
// errors name the file and what is wrong. Writers go through a temporary name and a rename.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace longmix {

struct HostTensor {
  std::vector<std::int64_t> shape;
  std::vector<float> data;  // converted to float32
  std::string dtype;        // as stored: F32, F16, BF16
  std::int64_t numel() const;
};

// .npy (format 1.0–3.0), little-endian float32 or float16, C order. Throws std::runtime_error.
HostTensor parse_npy(const std::string& bytes, const std::string& name);
HostTensor read_npy(const std::string& path);
void write_npy(const std::string& path, const std::vector<std::int64_t>& shape, const std::vector<float>& data);

// safetensors: 8-byte little-endian header length, JSON header {name: {dtype, shape,
// data_offsets}}, data. Dtypes F32, F16, BF16. Throws std::runtime_error.
std::map<std::string, HostTensor> parse_safetensors(const std::string& bytes, const std::string& name);
std::map<std::string, HostTensor> read_safetensors(const std::string& path);
// Writes F32 tensors (and a "__metadata__" entry with the format string).
void write_safetensors(const std::string& path, const std::map<std::string, HostTensor>& tensors);

float half_to_float(std::uint16_t h);
float bf16_to_float(std::uint16_t b);

}  // namespace longmix
