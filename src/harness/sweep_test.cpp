// The longmix program end to end on the CPU: bad input, files, resume, OOM, extrapolation.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "harness/cli_test_util.h"
#include "harness/sweep.h"
#include "report/records.h"

namespace fs = std::filesystem;
using namespace longmix;

namespace {

using cli_test::CliRun;
CliRun run_cli(const std::string& args, const std::string& env = "") { return cli_test::run_longmix(args, env); }

std::string tmpdir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("longmix_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p.string();
}

const std::string kTiny = "--heads 2 --head-dim 32 --warmup 1 --min-reps 2 --min-seconds 0 --quiet --no-report ";

}  // namespace

TEST(ParseLengths, UnitsAndRanges) {
  EXPECT_EQ(parse_lengths("4k,8k"), (std::vector<std::int64_t>{4096, 8192}));
  EXPECT_EQ(parse_lengths("131072,1M"), (std::vector<std::int64_t>{131072, 1048576}));
  EXPECT_EQ(parse_lengths("4k..32k"), (std::vector<std::int64_t>{4096, 8192, 16384, 32768}));
  EXPECT_THROW(parse_lengths("0"), InvalidArgument);
  EXPECT_THROW(parse_lengths("4q"), InvalidArgument);
  EXPECT_THROW(parse_lengths("-4k"), InvalidArgument);
  EXPECT_THROW(parse_lengths("8k..4k"), InvalidArgument);
  EXPECT_THROW(parse_lengths(""), InvalidArgument);
}

TEST(Sweep, CpuDefaultCapIsTheAvailableMemory) {
  const auto avail = available_memory_bytes();
  ASSERT_TRUE(avail.has_value());
  EXPECT_GT(*avail, 64ull << 20);
  const std::string dir = tmpdir("cap");
  const CliRun r = run_cli("sweep " + kTiny + "--backend cpu --ops flash --lengths 64 --out " + dir + " 2>&1; true");
  EXPECT_NE(r.out.find("memory cap"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

TEST(Cli, BadInputGivesOneClearMessageAndKeepsResults) {
  const std::string dir = tmpdir("bad");
  fs::create_directories(dir);
  { std::ofstream(dir + "/results_flash.csv") << "precious\n"; }
  struct Case { std::string args, expect; };
  const std::vector<Case> cases = {
      {"sweep --ops flush --out " + dir, "unknown op 'flush'"},
      {"sweep --lengths 0 --out " + dir, "lengths must be positive"},
      {"sweep --lengths 4q --out " + dir, "'4q'"},
      {"sweep --memory-limit -1 --out " + dir, "not a size in bytes: '-1'"},
      {"sweep --memory-fraction 1.5 --out " + dir, "--memory-fraction"},
      {"sweep --dtype fp8 --out " + dir, "--dtype"},
      {"sweep --heads 0 --out " + dir, "--heads must be positive"},
      {"sweep --filter sometimes --out " + dir, "--filter"},
      {"sweep --lengths 64 --out /proc/longmix-cannot-write", "--out"},
  };
  for (const auto& c : cases) {
    const CliRun r = run_cli(c.args);
    EXPECT_NE(r.code, 0) << c.args;
    EXPECT_NE(r.out.find(c.expect), std::string::npos) << c.args << "\n" << r.out;
    EXPECT_EQ(read_file(dir + "/results_flash.csv"), "precious\n") << c.args;
  }
  fs::remove_all(dir);
}

TEST(Cli, HelpShowsExamples) {
  const CliRun r = run_cli("sweep --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--memory-fraction"), std::string::npos);
  EXPECT_NE(run_cli("--help").out.find("Examples:"), std::string::npos);
}

TEST(Sweep, TinySweepWritesDocumentedFilesAndResumes) {
  const std::string dir = tmpdir("tiny");
  CliRun r = run_cli("sweep " + kTiny + "--backend cpu --lengths 64,128 --out " + dir);
  ASSERT_EQ(r.code, 0) << r.out;
  for (const std::string op : {"flash", "hyena", "attention"}) {
    const std::string text = read_file(dir + "/results_" + op + ".csv");
    EXPECT_EQ(text.substr(0, text.find('\n') + 1), csv_header());
    EXPECT_EQ(text.rfind("L,time_ms,mem_GB,work_GB,time_min_ms,time_max_ms,reps,status,impl,scope,"
                         "backend,dtype,B,H,d,D,filter,extrapolated", 0), 0u);
    const auto rows = read_csv(dir + "/results_" + op + ".csv");
    ASSERT_EQ(rows.size(), 2u) << op;
    for (const auto& row : rows) {
      EXPECT_EQ(row.status, "ok");
      EXPECT_FALSE(row.extrapolated);
      EXPECT_GT(*row.time_ms, 0);
      EXPECT_GT(*row.mem_GB, 0);
      EXPECT_GE(row.reps, 2);
    }
  }
  const auto j = nlohmann::json::parse(read_file(dir + "/results.json"));
  const std::string commit = j["environment"]["git_commit"];
  FILE* g = ::popen(("git -C '" LONGMIX_SOURCE_DIR "' rev-parse HEAD 2>/dev/null"), "r");
  char buf[128] = {0};
  const bool have_git = g && std::fgets(buf, sizeof buf, g);
  if (g) ::pclose(g);
  if (have_git) {
    EXPECT_EQ(commit + "\n", std::string(buf));
  }
  EXPECT_FALSE(j["environment"]["command_line"].get<std::string>().empty());
  EXPECT_EQ(j["rows"].size(), 6u);
  for (const auto& c : j["checks"]) EXPECT_TRUE(c["passed"].get<bool>()) << c.dump();

  // --resume keeps the finished rows untouched and measures only the new length.
  const auto before = read_csv(dir + "/results_flash.csv");
  r = run_cli("sweep " + kTiny + "--backend cpu --lengths 64,128,256 --resume --out " + dir);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto after = read_csv(dir + "/results_flash.csv");
  ASSERT_EQ(after.size(), 3u);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(*after[i].time_ms, *before[i].time_ms);
  EXPECT_EQ(after[2].L, 256);

  // A fresh run keeps the earlier results in a previous-* folder.
  r = run_cli("sweep " + kTiny + "--backend cpu --lengths 64 --ops flash --out " + dir);
  ASSERT_EQ(r.code, 0) << r.out;
  bool kept = false;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("previous-", 0) == 0 && fs::exists(e.path() / "results_flash.csv")) kept = true;
  EXPECT_TRUE(kept);
  fs::remove_all(dir);
}

// SIGINT mid-sweep: exit 130 after the current row, every finished row valid on disk, and
// --resume completes the sweep without measuring those rows again.
TEST(Sweep, SigintKeepsFinishedRowsAndResumeCompletes) {
  const std::string dir = tmpdir("sigint");
  const std::string args = "--heads 2 --head-dim 32 --warmup 1 --min-reps 2 --min-seconds 0.3 --quiet --no-report "
                           "--backend cpu --ops flash --lengths 256,512,1024,2048,4096 --out " + dir;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", (std::string("exec ") + LONGMIX_BIN + " sweep " + args + " 2>/dev/null").c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const std::string csv = dir + "/results_flash.csv";
  for (int i = 0; i < 600; ++i) {  // wait for the first finished row
    if (fs::exists(csv) && read_csv(csv).size() >= 1) break;
    ::usleep(20000);
  }
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 130);
  const auto partial = read_csv(csv);
  ASSERT_GE(partial.size(), 1u);
  ASSERT_LT(partial.size(), 5u) << "the signal came after the last row";
  for (const auto& r : partial) EXPECT_EQ(r.status, "ok");
  const CliRun r = run_cli("sweep " + args + " --resume");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto full = read_csv(csv);
  ASSERT_EQ(full.size(), 5u);
  for (std::size_t i = 0; i < partial.size(); ++i) EXPECT_EQ(*full[i].time_ms, *partial[i].time_ms);
  fs::remove_all(dir);
}

// A fault in one row (here an injected SIGSEGV in its process) is that row's status=error;
// every other row is measured.
TEST(Sweep, IsolatedRowFaultLeavesTheOthersMeasured) {
  const std::string dir = tmpdir("fault");
  const CliRun r = run_cli("sweep " + kTiny + "--backend cpu --ops flash,hyena --lengths 64,128,256 --isolate --out " + dir,
                           "LONGMIX_INJECT_FAULT=flash-cpu:128");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto fl = read_csv(dir + "/results_flash.csv");
  ASSERT_EQ(fl.size(), 3u);
  EXPECT_EQ(fl[0].status, "ok");
  EXPECT_EQ(fl[1].status, "error");
  EXPECT_FALSE(fl[1].time_ms.has_value());
  // Killed by SIGSEGV, or (under AddressSanitizer, which catches the signal) ASan's SEGV report.
  EXPECT_TRUE(fl[1].note.find("signal 11") != std::string::npos || fl[1].note.find("SEGV") != std::string::npos)
      << fl[1].note;
  EXPECT_EQ(fl[2].status, "ok");
  for (const auto& row : read_csv(dir + "/results_hyena.csv")) EXPECT_EQ(row.status, "ok");
  fs::remove_all(dir);
}

TEST(Sweep, TinyMemoryLimitMakesStandardAttentionOomAndFinishesTheRest) {
  const std::string dir = tmpdir("oom");
  // 2 heads × 1024² × 4 B = 8 MiB of scores; flash and Hyena need far less.
  const CliRun r = run_cli("sweep " + kTiny + "--backend cpu --lengths 256,1024 --memory-limit 6MiB --out " + dir);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto att = read_csv(dir + "/results_attention.csv");
  ASSERT_EQ(att.size(), 2u);
  EXPECT_EQ(att[0].status, "ok");
  EXPECT_EQ(att[1].status, "OOM");
  EXPECT_FALSE(att[1].time_ms.has_value());
  EXPECT_NE(att[1].note.find("cap"), std::string::npos);
  const std::string text = read_file(dir + "/results_attention.csv");
  EXPECT_NE(text.find("\n1024,,OOM,"), std::string::npos) << text;
  for (const std::string op : {"flash", "hyena"})
    for (const auto& row : read_csv(dir + "/results_" + op + ".csv")) EXPECT_EQ(row.status, "ok") << op;
  fs::remove_all(dir);
}

// The next row: a curve's first two rows always; on a budget, the cheapest of the rest, and a
// curve whose next row does not fit stops there; without one, by length, then curve order.
TEST(ChooseNextRow, FirstTwoRowsThenTheCheapestOnABudget) {
  // curve 0 (flash) and 2 (attention) are past their first two rows at 32k, curve 1 (hyena) at 64k
  const std::vector<RowCandidate> c = {{0, 32768, 3, 95.0}, {1, 65536, 4, 8.0}, {2, 32768, 3, 250.0}};
  RowChoice r = choose_next_row(c, 300, true);
  ASSERT_TRUE(r.pick.has_value());
  EXPECT_EQ(*r.pick, 1u);  // hyena's 64k before attention's 32k
  EXPECT_TRUE(r.defer.empty());
  r = choose_next_row(c, 100, true);  // attention's 32k no longer fits: it stops; hyena first
  EXPECT_EQ(r.pick, std::optional<std::size_t>(1));
  EXPECT_EQ(r.defer, (std::vector<std::size_t>{2}));
  r = choose_next_row(c, 5, true);  // nothing fits
  EXPECT_FALSE(r.pick.has_value());
  EXPECT_EQ(r.defer, (std::vector<std::size_t>{0, 1, 2}));
  // without a budget: by length, then curve order; costs and time left do not matter
  r = choose_next_row(c, 0, false);
  EXPECT_EQ(r.pick, std::optional<std::size_t>(0));
  EXPECT_TRUE(r.defer.empty());
  // a curve with fewer than two measured rows goes first and is never deferred, even with no
  // time left and a dearer predicted cost than the others
  const std::vector<RowCandidate> m = {{0, 8192, 2, 1.0}, {1, 16384, 1, 50.0}, {2, 8192, 0, 0.0}};
  r = choose_next_row(m, -1, true);
  EXPECT_EQ(r.pick, std::optional<std::size_t>(2));  // the shorter of the two mandatory rows
  EXPECT_EQ(r.defer, (std::vector<std::size_t>{0}));
  EXPECT_FALSE(choose_next_row({}, 100, true).pick.has_value());
}

// A budget spent before the first row (0.01 s: the correctness checks alone take longer) still
// measures the first two lengths of each curve, and extrapolates the rest from them.
TEST(Sweep, ASpentBudgetStillMeasuresTheFirstTwoRowsOfEachCurve) {
  const std::string dir = tmpdir("spent");
  const CliRun r = run_cli("sweep " + kTiny + "--backend cpu --ops flash,hyena --lengths 256,512,1024,2048 "
                        "--time-budget 0.01 --out " + dir);
  ASSERT_EQ(r.code, 0) << r.out;
  for (const std::string op : {"flash", "hyena"}) {
    const auto rows = read_csv(dir + "/results_" + op + ".csv");
    ASSERT_EQ(rows.size(), 4u) << op;
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(rows[i].extrapolated, i >= 2) << op << " row " << i;
      EXPECT_EQ(rows[i].status, "ok") << op << " row " << i;
      EXPECT_TRUE(rows[i].time_ms.has_value()) << op << " row " << i;
    }
  }
  fs::remove_all(dir);
}

// The budget counts the whole sweep (the correctness checks too), so on a loaded machine it can
// be spent before the first row; the first two rows of each curve are measured regardless, and
// 64k (predicted at ≥ 100× the 512 row) never fits in what is left of 3 s.
TEST(Sweep, RowsPastTheTimeBudgetAreExtrapolatedAndMarked) {
  const std::string dir = tmpdir("extra");
  const CliRun r = run_cli("sweep " + kTiny + "--backend cpu --ops flash,attention --lengths 256,512,32k,64k "
                        "--time-budget 3 --memory-limit 1GiB --out " + dir);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto fl = read_csv(dir + "/results_flash.csv");
  ASSERT_EQ(fl.size(), 4u);
  EXPECT_FALSE(fl[0].extrapolated);
  EXPECT_FALSE(fl[1].extrapolated);
  EXPECT_TRUE(fl[3].extrapolated);
  EXPECT_NE(fl[3].note.find("extrapolated"), std::string::npos);
  EXPECT_GT(*fl[3].time_ms, *fl[1].time_ms * 100);  // grows like L² (noisy small rows)
  // Standard attention's predicted memory at 64k (2 × 64k² × 4 B = 32 GiB) passes the 1 GiB cap.
  const auto at = read_csv(dir + "/results_attention.csv");
  ASSERT_EQ(at.size(), 4u);
  EXPECT_TRUE(at[3].extrapolated);
  EXPECT_EQ(at[3].status, "OOM");
  EXPECT_NE(at[3].note.find("predicted peak"), std::string::npos);
  fs::remove_all(dir);
}

// Rows timed together: the pick and the other curves of its op at its length, unless deferred
// or, on a budget, past the time left.
TEST(RowsTimedTogether, SameOpAndLengthOnly) {
  // curves: 0 flash-cudnn, 1 flash-own, 2 hyena-fused, 3 flash (another), 4 attention
  const std::vector<std::string> ops = {"flash", "flash", "hyena", "flash", "attention"};
  const std::vector<RowCandidate> c = {{0, 4096, 3, 1.0}, {1, 4096, 3, 2.0}, {2, 4096, 3, 1.0},
                                       {3, 8192, 3, 1.0}, {4, 4096, 3, 1.0}};
  RowChoice ch;
  ch.pick = 0;
  EXPECT_EQ(rows_timed_together(c, ch, ops, 0, false), (std::vector<std::size_t>{0, 1}));
  ch.pick = 1;
  EXPECT_EQ(rows_timed_together(c, ch, ops, 0, false), (std::vector<std::size_t>{1, 0}));
  ch.pick = 2;
  EXPECT_EQ(rows_timed_together(c, ch, ops, 0, false), (std::vector<std::size_t>{2}));
  ch.pick = 0;
  ch.defer = {1};
  EXPECT_EQ(rows_timed_together(c, ch, ops, 0, false), (std::vector<std::size_t>{0}));
  ch.defer.clear();
  EXPECT_EQ(rows_timed_together(c, ch, ops, 2.5, true), (std::vector<std::size_t>{0}));   // 1 + 2 > 2.5
  EXPECT_EQ(rows_timed_together(c, ch, ops, 3.0, true), (std::vector<std::size_t>{0, 1}));
  const std::vector<RowCandidate> first = {{0, 4096, 3, 1.0}, {1, 4096, 1, 9.0}};  // mandatory row
  EXPECT_EQ(rows_timed_together(first, ch, ops, 0.5, true), (std::vector<std::size_t>{0, 1}));
  ch.pick.reset();
  EXPECT_TRUE(rows_timed_together(c, ch, ops, 0, false).empty());
}
