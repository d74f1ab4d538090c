// One checker for every implementation: relative L2 error against a float64 reference,
// max abs error, NaN/Inf counts, first mismatches.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace longmix {

struct CompareResult {
  double rel_l2 = 0;      // ||out - ref|| / ||ref||
  double max_abs = 0;     // max |out - ref|
  std::size_t nonfinite = 0;  // NaN or Inf in out
  std::size_t count = 0;
  std::vector<std::size_t> first_mismatches;  // up to 8 indices with |out-ref| > tol_abs
  bool passes(double tol_rel) const { return nonfinite == 0 && rel_l2 <= tol_rel; }
  std::string summary() const;
};

// tol_abs only selects which indices are listed as first mismatches.
CompareResult compare(const float* out, const double* ref, std::size_t n, double tol_abs = 1e-3);
CompareResult compare(const std::vector<float>& out, const std::vector<double>& ref,
                      double tol_abs = 1e-3);

}  // namespace longmix
