// libFuzzer target: the results-CSV reader (what `longmix report` reads) never crashes.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "report/records.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    longmix::parse_csv(std::string(reinterpret_cast<const char*>(data), size), "fuzz.csv");
  } catch (const std::runtime_error&) {
  }
  return 0;
}
