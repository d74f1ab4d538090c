// measure_rows: several implementations of one workload timed in turns (a fake backend whose
// calls report fixed times and log their order), memory of each taken alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>

#include "common/turn_order.h"
#include "harness/measure.h"

using namespace longmix;

namespace {

// Implementations "a", "b", "c" whose calls "take" the given seconds (time_call reports them)
// and hold the given bytes while they live; "nan" writes NaN; "unsupported" is refused.
class FakeBackend final : public Backend {
 public:
  std::map<std::string, double> seconds = {{"a", 0.004}, {"b", 0.001}, {"c", 0.002}, {"nan", 0.001}, {"d", 0.001}};
  std::map<std::string, std::size_t> bytes = {{"a", 1 << 20}, {"b", 3 << 20}, {"c", 2 << 20}, {"nan", 4096}, {"d", 1 << 20}};
  std::map<std::string, std::size_t> scratch = {{"d", 3 << 20}};  // work bytes of a call (default 4 KiB)
  std::vector<std::string> log;  // every forward, in order
  double last_s = 0;

  std::string name() const override { return "fake"; }
  Allocator& allocator() override { return alloc_; }
  std::vector<std::string> impls(const std::string&) const override { return {"a", "b", "c"}; }
  std::string unsupported(const std::string& impl, const Workload&) const override {
    return impl == "unsupported" ? "not this one" : "";
  }
  std::unique_ptr<Runner> make(const std::string& impl, const Problem&) override {
    return std::make_unique<FakeRunner>(*this, impl);
  }
  double time_call(const std::function<void()>& fn) override {
    fn();
    return last_s;
  }
  std::size_t device_total_bytes() const override { return 1ull << 30; }
  std::string default_dtype() const override { return "fp32"; }
  std::vector<std::pair<std::string, std::string>> environment() const override { return {}; }

 private:
  struct FakeRunner final : Runner {
    FakeRunner(FakeBackend& be, std::string impl)
        : be(be), impl(std::move(impl)), held(be.alloc_, be.bytes.at(this->impl)) {}
    void forward() override {
      be.log.push_back(impl);
      be.last_s = be.seconds.at(impl);
      Buffer<char> scratch(be.alloc_, be.scratch.count(impl) ? be.scratch.at(impl) : 4096);
    }
    std::vector<float> output() override { return {impl == "nan" ? std::numeric_limits<float>::quiet_NaN() : 1.0f}; }
    std::string note() const override { return "variant-" + impl; }
    FakeBackend& be;
    std::string impl;
    Buffer<char> held;
  };
  CpuAllocator alloc_;
};

RepPolicy policy(int warmup, int min_reps, double min_seconds) {
  RepPolicy p;
  p.warmup = warmup;
  p.min_reps = min_reps;
  p.min_seconds = min_seconds;
  return p;
}

Workload tiny() {
  Workload w;
  w.op = "flash";
  w.scope = "core";
  w.L = 16;
  w.H = 1;
  w.d = 8;
  return w;
}

}  // namespace

// Each round a permutation; over many rounds every implementation follows every other about
// equally often (a rotation would put each behind the same one every time).
TEST(TurnOrder, EveryRoundAPermutationAndNoFixedPredecessor) {
  constexpr std::size_t n = 5;
  TurnOrder order(n);
  std::vector<std::vector<int>> follows(n, std::vector<int>(n, 0));
  std::vector<int> first(n, 0);
  for (int r = 0; r < 4000; ++r) {
    const auto& o = order.next();
    std::vector<std::size_t> sorted(o.begin(), o.end());
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i);
    ++first[o[0]];
    for (std::size_t i = 1; i < n; ++i) ++follows[o[i - 1]][o[i]];
  }
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_NEAR(first[i], 800, 120);
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      EXPECT_NEAR(follows[i][j], 4000 * 4 / 20, 120) << i << " -> " << j;  // 800 each
    }
  }
  TurnOrder again(n);
  EXPECT_EQ(again.next(), TurnOrder(n).next());  // a fixed seed: runs repeat
}

TEST(TurnCalls, TurnsAsLongAsTheSlowestCall) {
  EXPECT_EQ(turn_calls({0.004, 0.001, 0.002}), (std::vector<int>{1, 4, 2}));
  EXPECT_EQ(turn_calls({0.001, 0.0013}), (std::vector<int>{1, 1}));
  EXPECT_EQ(turn_calls({1.0, 1e-6}), (std::vector<int>{1, kMaxCallsPerTurn}));
  EXPECT_EQ(turn_calls({0.0, 0.002}), (std::vector<int>{1, 1}));
}

TEST(MeasureRows, TimesInTurnsAndTakesEachOnesMemoryAlone) {
  FakeBackend be;
  const RepPolicy pol = policy(2, 6, 0.03);
  const auto rows = measure_rows(be, {"a", "b"}, tiny(), pol);
  ASSERT_EQ(rows.size(), 2u);
  for (const Row& r : rows) ASSERT_EQ(r.status, "ok") << r.note;
  EXPECT_EQ(rows[0].impl, "a");
  EXPECT_DOUBLE_EQ(*rows[0].time_ms, 4.0);
  EXPECT_DOUBLE_EQ(*rows[1].time_ms, 1.0);
  // Peak of one call alone: own bytes plus the call's 4 KiB, not the other runner's.
  EXPECT_NEAR(*rows[0].mem_GB * (1 << 30), (1 << 20) + 4096, 1);
  EXPECT_NEAR(*rows[1].mem_GB * (1 << 30), (3 << 20) + 4096, 1);
  EXPECT_NE(rows[0].note.find("variant-a"), std::string::npos);
  EXPECT_NE(rows[0].note.find("timed in turns with b (1 call a turn)"), std::string::npos) << rows[0].note;
  EXPECT_NE(rows[1].note.find("timed in turns with a (4 calls a turn)"), std::string::npos) << rows[1].note;
  // a needs 8 calls (0.03 s at 4 ms), b 30 (at 1 ms): 8 rounds of a's one call and b's turn of
  // 4, in TurnOrder's order. The log: a's peak call, b's peak call, warm-up (2 each), rounds.
  EXPECT_EQ(rows[0].reps, 8);
  EXPECT_EQ(rows[1].reps, 32);
  ASSERT_EQ(be.log.size(), 2u + 4u + 40u);
  EXPECT_EQ(std::vector<std::string>(be.log.begin(), be.log.begin() + 6),
            (std::vector<std::string>{"a", "b", "a", "a", "b", "b"}));
  TurnOrder order(2);
  std::vector<std::string> rounds;
  for (int r = 0; r < 8; ++r)
    for (std::size_t i : order.next())
      for (int c = 0; c < (i == 0 ? 1 : 4); ++c) rounds.push_back(i == 0 ? "a" : "b");
  EXPECT_EQ(std::vector<std::string>(be.log.begin() + 6, be.log.end()), rounds);
  EXPECT_EQ(be.allocator().current(), 0u);
}

TEST(MeasureRows, EachAloneWhenTheyDoNotFitTogether) {
  FakeBackend be;
  be.allocator().set_cap((3 << 20) + (1 << 20) / 2);  // a or b fits, not both
  const RepPolicy pol = policy(1, 3, 0);
  const auto rows = measure_rows(be, {"a", "b"}, tiny(), pol);
  for (const Row& r : rows) {
    ASSERT_EQ(r.status, "ok") << r.note;
    EXPECT_EQ(r.reps, 3);
    EXPECT_NE(r.note.find("timed alone"), std::string::npos) << r.note;
  }
  EXPECT_EQ(be.allocator().current(), 0u);
}

TEST(MeasureRows, SkippedFailedAndOversizedRowsAreRecordedAndTheRestTimed) {
  FakeBackend be;
  be.bytes["c"] = 1ull << 40;  // past the cap: OOM at setup
  be.allocator().set_cap(64 << 20);
  const RepPolicy pol = policy(1, 4, 0);
  const auto rows = measure_rows(be, {"unsupported", "a", "nan", "c", "b"}, tiny(), pol);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].status, "skipped");
  EXPECT_EQ(rows[0].note, "not this one");
  EXPECT_EQ(rows[1].status, "ok");
  EXPECT_EQ(rows[2].status, "error");
  EXPECT_NE(rows[2].note.find("NaN/Inf"), std::string::npos);
  EXPECT_FALSE(rows[2].time_ms.has_value());
  EXPECT_EQ(rows[3].status, "OOM");
  EXPECT_EQ(rows[4].status, "ok");
  EXPECT_NE(rows[1].note.find("timed in turns with b"), std::string::npos) << rows[1].note;
  EXPECT_EQ(be.allocator().current(), 0u);
}

TEST(MeasureRows, OneImplementationIsMeasureRow) {
  FakeBackend a, b;
  const RepPolicy pol = policy(3, 5, 0);
  const auto rows = measure_rows(a, {"unsupported", "c"}, tiny(), pol);
  const Row one = measure_row(b, "c", tiny(), pol);
  EXPECT_EQ(rows[1].reps, one.reps);
  EXPECT_EQ(rows[1].note, one.note);
  EXPECT_EQ(a.log, b.log);
}

TEST(MeasureRows, EachAloneWhenACallRunsOutOfMemoryBesideTheOthers) {
  FakeBackend be;
  be.allocator().set_cap((4 << 20) + (1 << 19));  // d alone: 1 + 3 MiB; beside a's runner: 5 MiB
  const RepPolicy pol = policy(1, 3, 0);
  const auto rows = measure_rows(be, {"a", "d"}, tiny(), pol);
  for (const Row& r : rows) {
    ASSERT_EQ(r.status, "ok") << r.note;
    EXPECT_EQ(r.reps, 3);
    EXPECT_NE(r.note.find("timed alone (a call ran out of memory"), std::string::npos) << r.note;
  }
  EXPECT_NEAR(*rows[1].mem_GB * (1 << 30), 4 << 20, 1);
  EXPECT_EQ(be.allocator().current(), 0u);
}

TEST(MeasureRows, OneLeftAfterTheOthersFailIsTimedWithoutATurnNote) {
  FakeBackend be;
  const RepPolicy pol = policy(1, 3, 0);
  const auto rows = measure_rows(be, {"nan", "c"}, tiny(), pol);
  EXPECT_EQ(rows[0].status, "error");
  ASSERT_EQ(rows[1].status, "ok");
  EXPECT_EQ(rows[1].note, "variant-c");
  EXPECT_EQ(rows[1].reps, 3);
}
