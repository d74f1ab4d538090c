// The report: reads a results folder (CSVs + results.json) and writes log-log plots
// (gnuplot, pngcairo + svg), comparison_table.md, table.tex and report.md. Every number in
// them is computed from the rows; extrapolated values are marked wherever they appear.
#pragma once
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "report/fit.h"
#include "report/records.h"

namespace longmix {

struct Curve {
  std::string impl, op, scope, dtype, filter, backend;
  std::int64_t B = 1, H = 0, d = 0, D = 0;
  std::vector<Row> rows;  // sorted by L
  std::string label() const;  // "flash-cudnn D=256"
  // Measured (not extrapolated) ok rows: (L, value).
  std::vector<std::pair<double, double>> measured_time() const;
  std::vector<std::pair<double, double>> measured_mem() const;
};

std::vector<Curve> group_curves(const std::vector<Row>& rows);

struct ExponentFinding {
  std::string curve, quantity;  // quantity: "time" | "memory"
  PowerFit fit;
};
struct CrossoverFinding {
  std::int64_t D = 0;
  std::string flash, hyena;
  std::optional<Crossover> at;
  double L_lo = 0, L_hi = 0;  // lengths where both were measured
};
struct MemoryRatio {
  std::int64_t D = 0;
  std::string flash, hyena;
  std::int64_t L = 0;       // longest length where both ran (measured)
  double flash_GB = 0, hyena_GB = 0;
};
struct OomPrediction {
  std::string curve;
  std::optional<std::int64_t> measured_first_oom;
  std::map<int, double> predicted_L;  // device GB -> longest L that fits (fitted model)
  std::string model;
};

struct Findings {
  std::vector<ExponentFinding> exponents;
  std::vector<CrossoverFinding> crossovers;
  std::vector<MemoryRatio> memory;
  std::vector<OomPrediction> oom;
};
// `tail` > 0 fits exponents on the longest `tail` measured lengths of each curve.
Findings compute_findings(const std::vector<Curve>& curves, int tail = 4);

// Of the FlashAttention curves of one (D, scope, dtype), the fastest: the lowest geometric mean
// time over the lengths all of them measured. `others` holds each other curve's label with its
// mean time ratio to the fastest (NaN when they share no measured length).
struct FlashChoice {
  std::int64_t D = 0;
  std::string scope, dtype;
  std::string fastest;  // curve label, e.g. "flash-cudnn D=256"
  std::vector<std::pair<std::string, double>> others;
};
std::vector<FlashChoice> choose_flash(const std::vector<Curve>& curves);
// The curves without the FlashAttention curves choose_flash did not pick: what the tables,
// crossovers and recommendations compare ("FlashAttention" is the fastest one, named).
std::vector<Curve> primary_curves(const std::vector<Curve>& curves);

// Reads DIR's results and writes every report file into DIR. Returns 0 on success.
// Throws std::runtime_error naming file and line for malformed input.
int write_report(const std::string& dir, std::ostream& log);

std::string length_label(double L);  // 4096 -> "4k", 1048576 -> "1M"

}  // namespace longmix
