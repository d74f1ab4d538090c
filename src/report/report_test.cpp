// The report recovers known exponents and crossovers from synthetic result folders.
#include "report/report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using namespace longmix;

namespace {

Row row(const std::string& op, const std::string& impl, std::int64_t L, double ms, double gb, std::int64_t D = 256) {
  Row r;
  r.L = L; r.time_ms = ms; r.mem_GB = gb; r.work_GB = gb / 2; r.time_min_ms = ms * 0.99; r.time_max_ms = ms * 1.01;
  r.reps = 10; r.status = "ok"; r.impl = impl; r.op = op; r.scope = "layer"; r.backend = "cuda"; r.dtype = "fp16";
  r.B = 1; r.H = D / 64; r.d = 64; r.D = D; r.filter = op == "hyena" ? "recompute" : "-";
  return r;
}

std::string folder(const std::string& name, const std::vector<Row>& rows) {
  const fs::path p = fs::temp_directory_path() / ("longmix_report_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  std::map<std::string, std::string> text;
  for (const auto& r : rows) {
    auto& t = text[r.op];
    if (t.empty()) t = csv_header();
    t += csv_line(r);
  }
  for (auto& [op, t] : text) std::ofstream(p / csv_name_for_op(op)) << t;
  std::ofstream(p / "results.json") << R"({"environment": {"gpu": "Test GPU", "backend": "cuda", "command_line": "longmix sweep", "ceiling_matmul_tflops": 500}, "rows": []})";
  return p.string();
}

// flash: time 1e-6·L² ms, memory 1e-6·L GiB; hyena: time 2e-3·L ms (+0.5), memory 4.7e-6·L.
// Crossover where 1e-6 L² = 2e-3 L + 0.5 -> L ≈ 2250.
std::vector<Row> synthetic(bool hyena_slow = false) {
  std::vector<Row> rows;
  for (std::int64_t L = 512; L <= 131072; L *= 2) {
    rows.push_back(row("flash", "flash-x", L, 1e-6 * L * L, 1e-6 * L));
    rows.push_back(row("hyena", "hyena-x", L, hyena_slow ? 1e-5 * L * L : 2e-3 * L + 0.5, 4.7e-6 * L));
    rows.push_back(row("attention", "attention-x", L, 3e-6 * L * L, 2e-9 * L * L));
  }
  return rows;
}

double find_exponent(const Findings& f, const std::string& curve, const std::string& q) {
  for (auto& e : f.exponents) if (e.curve == curve && e.quantity == q) return e.fit.exponent;
  return NAN;
}

bool png_size(const std::string& path, unsigned& w, unsigned& h) {
  std::ifstream f(path, std::ios::binary);
  unsigned char b[24];
  if (!f.read(reinterpret_cast<char*>(b), 24)) return false;
  const unsigned char sig[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (!std::equal(sig, sig + 8, b) || std::string(reinterpret_cast<char*>(b + 12), 4) != "IHDR") return false;
  w = (b[16] << 24) | (b[17] << 16) | (b[18] << 8) | b[19];
  h = (b[20] << 24) | (b[21] << 16) | (b[22] << 8) | b[23];
  return true;
}

}  // namespace

TEST(Findings, RecoverExponentsAndCrossover) {
  const auto f = compute_findings(group_curves(synthetic()));
  EXPECT_NEAR(find_exponent(f, "flash-x D=256", "time"), 2.0, 0.02);
  EXPECT_NEAR(find_exponent(f, "flash-x D=256", "memory"), 1.0, 0.02);
  EXPECT_NEAR(find_exponent(f, "attention-x D=256", "memory"), 2.0, 0.02);
  EXPECT_NEAR(find_exponent(f, "hyena-x D=256", "memory"), 1.0, 0.02);
  EXPECT_NEAR(find_exponent(f, "hyena-x D=256", "time"), 1.0, 0.02);
  ASSERT_EQ(f.crossovers.size(), 1u);
  ASSERT_TRUE(f.crossovers[0].at.has_value());
  const double exact = (2e-3 + std::sqrt(4e-6 + 4 * 1e-6 * 0.5)) / (2 * 1e-6);
  EXPECT_NEAR(f.crossovers[0].at->L / exact, 1.0, 0.02) << f.crossovers[0].at->L << " vs " << exact;
  EXPECT_NEAR(f.crossovers[0].at->L_before, 2048, 1e-6);  // the measured lengths either side
  EXPECT_NEAR(f.crossovers[0].at->L_after, 4096, 1e-6);
  ASSERT_EQ(f.memory.size(), 1u);
  EXPECT_EQ(f.memory[0].L, 131072);
  EXPECT_NEAR(f.memory[0].hyena_GB / f.memory[0].flash_GB, 4.7, 1e-6);
}

TEST(Report, WritesValidImagesTablesAndComputedText) {
  const std::string dir = folder("full", synthetic());
  std::ostringstream log;
  ASSERT_EQ(write_report(dir, log), 0) << log.str();
  for (const std::string name : {"memory_vs_length.png", "time_vs_length.png"}) {
    unsigned w = 0, h = 0;
    ASSERT_TRUE(png_size(dir + "/" + name, w, h)) << name;
    EXPECT_EQ(w, 1400u);
    EXPECT_EQ(h, 850u);
    EXPECT_TRUE(fs::exists(dir + "/" + name.substr(0, name.size() - 4) + ".svg"));
  }
  const std::string table = read_file(dir + "/comparison_table.md");
  // Every CSV row appears in the all-rows table.
  for (const auto& r : synthetic()) {
    const std::string needle = "| " + r.impl + " | layer | fp16 | 256 | " + r.filter + " | " + length_label(r.L) + " |";
    EXPECT_NE(table.find(needle), std::string::npos) << needle;
  }
  const std::string tex = read_file(dir + "/table.tex");
  EXPECT_NE(tex.find("\\toprule"), std::string::npos);
  EXPECT_NE(tex.find("128k"), std::string::npos);
  const std::string report = read_file(dir + "/report.md");
  EXPECT_NE(report.find("Hyena becomes faster from L ≈"), std::string::npos);
  EXPECT_NE(report.find("on (the crossing interpolated between the measured 2k, where FlashAttention was faster, "
                        "and 4k, where Hyena was); below it FlashAttention is faster."),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("Hyena holds 4.7× more"), std::string::npos);
  EXPECT_NE(report.find("![Peak memory vs length](memory_vs_length.png)"), std::string::npos);
  EXPECT_NE(report.find("The data shows linear growth"), std::string::npos);
  fs::remove_all(dir);
}

// Where the medians either side of the crossing are closer than the ~3% one build moves between
// calls, the recommendation says the measurement does not order them there; a clear gap says
// nothing of the kind.
TEST(Report, SaysWhenTheLengthsBesideTheCrossingAreLevel) {
  for (const bool close : {true, false}) {
    std::vector<Row> rows;
    for (std::int64_t L = 4096; L <= 65536; L *= 2) {
      const double flash = 1e-5 * L;  // linear, so the ratio below sets the order at each length
      const double ratio = L == 4096 ? (close ? 1.012 : 1.2) : 0.5;  // hyena / flash
      rows.push_back(row("flash", "flash-x", L, flash, 1e-6 * L));
      rows.push_back(row("hyena", "hyena-x", L, flash * ratio, 4.7e-6 * L));
    }
    const std::string dir = folder(close ? "level" : "apart", rows);
    std::ostringstream log;
    ASSERT_EQ(write_report(dir, log), 0) << log.str();
    const std::string report = read_file(dir + "/report.md");
    EXPECT_NE(report.find("switch to Hyena from L ≈"), std::string::npos) << report;
    const bool said = report.find("At 4k the two were level within 1.2% (FlashAttention 0.041 ms, Hyena 0.0415 ms)") !=
                      std::string::npos;
    EXPECT_EQ(said, close) << report;
    EXPECT_EQ(report.find("At 8k the two were level"), std::string::npos) << report;  // Hyena 2× faster there
    fs::remove_all(dir);
  }
  // Hyena ahead from the shortest length, by 1.5% there: said too.
  std::vector<Row> rows;
  for (std::int64_t L = 4096; L <= 65536; L *= 2) {
    rows.push_back(row("flash", "flash-x", L, 1e-5 * L, 1e-6 * L));
    rows.push_back(row("hyena", "hyena-x", L, 1e-5 * L * (L == 4096 ? 1 / 1.015 : 0.5), 4.7e-6 * L));
  }
  const std::string dir = folder("ahead", rows);
  std::ostringstream log;
  ASSERT_EQ(write_report(dir, log), 0) << log.str();
  const std::string report = read_file(dir + "/report.md");
  EXPECT_NE(report.find("Hyena is at least as fast from the shortest measured length (4k) on. At 4k the two were "
                        "level within 1.5%"),
            std::string::npos)
      << report;
  fs::remove_all(dir);
}

TEST(Report, SaysNeverCrossesWhenItDoesNot) {
  const std::string dir = folder("never", synthetic(true));
  std::ostringstream log;
  ASSERT_EQ(write_report(dir, log), 0) << log.str();
  const std::string report = read_file(dir + "/report.md");
  EXPECT_NE(report.find("never crosses in range (512–128k)"), std::string::npos) << report;
  fs::remove_all(dir);
}

TEST(Report, ExtrapolatedValuesAreMarked) {
  auto rows = synthetic();
  rows.back().extrapolated = true;  // attention-x at 128k
  rows.back().note = "extrapolated: test";
  Row oom = row("attention", "attention-x", 262144, 0, 0);
  oom.time_ms.reset(); oom.mem_GB.reset(); oom.status = "OOM"; oom.note = "cap";
  rows.push_back(oom);
  Row oom_predicted = oom;  // at 512k, from the fitted memory model
  oom_predicted.L = 524288;
  oom_predicted.extrapolated = true;
  oom_predicted.note = "extrapolated: test";
  rows.push_back(oom_predicted);
  const std::string dir = folder("marked", rows);
  std::ostringstream log;
  ASSERT_EQ(write_report(dir, log), 0) << log.str();
  const std::string table = read_file(dir + "/comparison_table.md");
  EXPECT_NE(table.find("†"), std::string::npos);
  EXPECT_NE(table.find("| attention-x | layer | fp16 | 256 | - | 256k | — | OOM |"), std::string::npos) << table;
  EXPECT_NE(table.find("| attention-x | layer | fp16 | 256 | - | 512k | — | OOM |"), std::string::npos) << table;
  // The plots tell a measured OOM from a predicted one, on the marker's label and in the key.
  const std::string gp = read_file(dir + "/.plotdata/time_vs_length.gp");
  EXPECT_NE(gp.find("set label 'OOM' at 262144,"), std::string::npos) << gp;
  EXPECT_NE(gp.find("set label 'OOM (predicted)' at 524288,"), std::string::npos) << gp;
  EXPECT_NE(gp.find("title 'attention-x D=256: out of memory (measured)'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("title 'attention-x D=256: out of memory (predicted)'"), std::string::npos) << gp;
  fs::remove_all(dir);
}

TEST(Report, MalformedCsvNamesFileAndLine) {
  const std::string dir = folder("bad", synthetic());
  {
    std::ofstream f(dir + "/results_flash.csv", std::ios::app);
    f << "notanumber,1,2\n";
  }
  std::ostringstream log;
  try {
    write_report(dir, log);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("results_flash.csv:"), std::string::npos) << what;
    EXPECT_NE(what.find(":11:"), std::string::npos) << what;  // header + 9 rows, then line 11
  }
  EXPECT_THROW(parse_csv("L,time_ms,mem_GB\n4096,\"1.0,2\n", "x.csv"), std::runtime_error);
  EXPECT_THROW(parse_csv("L,time_ms,mem_GB\n4096,nan,1\n", "x.csv"), std::runtime_error);
  EXPECT_THROW(parse_csv("A,B\n", "x.csv"), std::runtime_error);
  // Found by fuzz_csv: a repeated column let a short row pass the field count.
  EXPECT_THROW(parse_csv("L,time_ms,mem_GB,L\n4096,1,2\n", "x.csv"), std::runtime_error);
  fs::remove_all(dir);
}

// Two FlashAttention implementations: the tables, crossovers and recommendations use the faster
// one, named, and the report says by how much the other is slower; exponents cover both.
TEST(Report, FlashAttentionIsTheFastestImplementationNamed) {
  auto rows = synthetic();
  for (std::int64_t L = 512; L <= 131072; L *= 2) rows.push_back(row("flash", "flash-slow", L, 1.25e-6 * L * L, 1e-6 * L));
  const auto curves = group_curves(rows);
  const auto choice = choose_flash(curves);
  ASSERT_EQ(choice.size(), 1u);
  EXPECT_EQ(choice[0].fastest, "flash-x D=256");
  ASSERT_EQ(choice[0].others.size(), 1u);
  EXPECT_NEAR(choice[0].others[0].second, 1.25, 1e-9);
  const auto prim = primary_curves(curves);
  EXPECT_EQ(std::count_if(prim.begin(), prim.end(), [](const Curve& c) { return c.op == "flash"; }), 1);
  const auto f = compute_findings(prim);
  ASSERT_EQ(f.crossovers.size(), 1u);
  EXPECT_EQ(f.crossovers[0].flash, "flash-x D=256");

  const std::string dir = folder("two_flash", rows);
  std::ostringstream log;
  ASSERT_EQ(write_report(dir, log), 0) << log.str();
  const std::string report = read_file(dir + "/report.md");
  EXPECT_NE(report.find("**flash-x D=256**, the fastest"), std::string::npos) << report;
  EXPECT_NE(report.find("flash-slow D=256 took 1.25× its time"), std::string::npos);
  EXPECT_EQ(report.find("### D = 256: flash-slow vs"), std::string::npos);  // no table against the slower one
  EXPECT_NE(report.find("| flash-slow D=256 | time | 2 |"), std::string::npos);  // its exponent is still reported
  fs::remove_all(dir);
}

// A folder of FlashAttention rows only (e.g. a flash-only sweep) says so instead of empty sections.
TEST(Report, FlashOnlyFolderSaysThereIsNoHyenaToCompare) {
  std::vector<Row> rows;
  for (const auto& r : synthetic()) if (r.op == "flash") rows.push_back(r);
  const std::string dir = folder("flash_only", rows);
  std::ostringstream log;
  ASSERT_EQ(write_report(dir, log), 0) << log.str();
  const std::string report = read_file(dir + "/report.md");
  EXPECT_NE(report.find("No FlashAttention and Hyena curves of the same width"), std::string::npos) << report;
  EXPECT_NE(report.find("No length where a FlashAttention and a Hyena curve"), std::string::npos);
  fs::remove_all(dir);
}

// The limitations follow the run's recorded order: rows timed in turns, or back to back (results
// of builds before the turns, which record no order).
// A folder merged by tools/merge_results.py names each source's build and date, not only the first's.
TEST(Report, MergedFolderNamesEverySourcesBuild) {
  const std::string dir = folder("merged", synthetic());
  std::ofstream(dir + "/results.json")
      << R"({"environment": {"gpu": "Test GPU", "backend": "cuda", "git_commit": "aaaaaaa1111", "command_line": "a ; b"},)"
         R"( "rows": [], "merged_from": [)"
         R"({"folder": "d256", "environment": {"gpu": "Test GPU", "git_commit": "aaaaaaa1111", "date": "2026-12-07T12:00:00Z"}},)"
         R"({"folder": "d1024-flash", "environment": {"gpu": "Test GPU", "git_commit": "bbbbbbb2222", "git_dirty": true,)"
         R"( "date": "2026-12-07T14:56:24Z"}}]})";
  std::ostringstream log;
  ASSERT_EQ(write_report(dir, log), 0) << log.str();
  const std::string report = read_file(dir + "/report.md");
  EXPECT_NE(report.find("`d256` (aaaaaaa, Test GPU, 2026-12-07T12:00:00Z);"), std::string::npos) << report;
  EXPECT_NE(report.find("`d1024-flash` (bbbbbbb with uncommitted changes, Test GPU, 2026-12-07T14:56:24Z)\n"),
            std::string::npos) << report;
  fs::remove_all(dir);
}

TEST(Report, LimitationsSayHowTheRowsWereTimed) {
  const std::string dir = folder("order", synthetic());
  std::ostringstream log;
  ASSERT_EQ(write_report(dir, log), 0) << log.str();
  EXPECT_NE(read_file(dir + "/report.md").find("back-to-back calls on warm caches"), std::string::npos);
  std::ofstream(dir + "/results.json")
      << R"({"environment": {"gpu": "Test GPU", "backend": "cuda", "command_line": "longmix sweep",)"
         R"( "protocol": {"warmup": 3, "order": "the implementations of one op at one length timed in turns"}}, "rows": []})";
  ASSERT_EQ(write_report(dir, log), 0) << log.str();
  const std::string report = read_file(dir + "/report.md");
  EXPECT_EQ(report.find("back-to-back calls on warm caches"), std::string::npos);
  EXPECT_NE(report.find("were timed in turns, so a call may find in L2"), std::string::npos);
  EXPECT_NE(report.find("- order: the implementations of one op at one length timed in turns."), std::string::npos);
  fs::remove_all(dir);
}
