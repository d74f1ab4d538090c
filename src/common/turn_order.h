// The order of one round of turns when several implementations are timed in turns (the sweep's
// measure_rows, the GPU benchmarks' interleaved_median_ms): a fresh permutation each round, from
// a fixed seed so that a run repeats. A rotation alone (0, 1, …, n−1, the first moving on) left
// each implementation behind the same one in every round, and on a GPU at its power cap a
// kernel's time depends on what ran just before it: with 21 implementations in turn, cuDNN,
// always right after the slowest (and least power-hungry) kernel, ran 5–9% faster than in any
// other measurement (H100, 2026-12-07, bench/NOTES.md flash-own Next 7).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace longmix {

class TurnOrder {
 public:
  explicit TurnOrder(std::size_t n, std::uint64_t seed = 0x5eed7a11u) : order_(n), rng_(seed) {
    std::iota(order_.begin(), order_.end(), std::size_t(0));
  }
  // The next round's order: a permutation of 0 … n−1.
  const std::vector<std::size_t>& next() {
    std::shuffle(order_.begin(), order_.end(), rng_);
    return order_;
  }

 private:
  std::vector<std::size_t> order_;
  std::mt19937_64 rng_;
};

// Rounds of turns over 0 … n−1, each round in TurnOrder's next order, turn(i) called for each i,
// until done(i) holds for every i (checked before each round; nothing when n is 0).
template <typename Turn, typename Done>
void take_turns(std::size_t n, Turn&& turn, Done&& done) {
  TurnOrder order(n);
  auto all_done = [&] {
    for (std::size_t i = 0; i < n; ++i)
      if (!done(i)) return false;
    return true;
  };
  while (n > 0 && !all_done())
    for (const std::size_t i : order.next()) turn(i);
}

}  // namespace longmix
