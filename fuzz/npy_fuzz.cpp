// libFuzzer target: the .npy reader never crashes, never reads out of bounds.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "io/tensor_io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    longmix::parse_npy(std::string(reinterpret_cast<const char*>(data), size), "fuzz.npy");
  } catch (const std::runtime_error&) {
  }
  return 0;
}
