// Error types and argument checks shared by every module.
#pragma once
#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>

namespace longmix {

// A caller passed a value the operation cannot accept (names the argument and its value).
class InvalidArgument : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The project's own out-of-memory error: raised by an Allocator when a request passes its cap
// or when the underlying device refuses it. The harness records such a row as OOM.
class OutOfMemory : public std::runtime_error {
 public:
  OutOfMemory(const std::string& what, std::size_t requested, std::size_t held, std::size_t cap)
      : std::runtime_error(what), requested_(requested), held_(held), cap_(cap) {}
  std::size_t requested() const { return requested_; }
  std::size_t held() const { return held_; }
  std::size_t cap() const { return cap_; }

 private:
  std::size_t requested_, held_, cap_;
};

// A library or runtime call failed (CUDA, cuBLAS, cuFFT, cuDNN, FFTW, I/O).
class RuntimeFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace longmix

// Throws InvalidArgument with the message when cond is false.
#define LONGMIX_REQUIRE(cond, ...)                                                \
  do {                                                                            \
    if (!(cond)) throw ::longmix::InvalidArgument(::longmix::detail::concat(__VA_ARGS__)); \
  } while (0)
