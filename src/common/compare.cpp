#include "common/compare.h"

#include <cmath>
#include <sstream>

#include "common/error.h"

namespace longmix {

CompareResult compare(const float* out, const double* ref, std::size_t n, double tol_abs) {
  CompareResult r;
  r.count = n;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double o = out[i];
    if (!std::isfinite(o)) {
      ++r.nonfinite;
      if (r.first_mismatches.size() < 8) r.first_mismatches.push_back(i);
      continue;
    }
    const double e = std::fabs(o - ref[i]);
    num += e * e;
    den += ref[i] * ref[i];
    if (e > r.max_abs) r.max_abs = e;
    if (e > tol_abs && r.first_mismatches.size() < 8) r.first_mismatches.push_back(i);
  }
  r.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  if (r.nonfinite) r.rel_l2 = INFINITY;
  return r;
}

CompareResult compare(const std::vector<float>& out, const std::vector<double>& ref,
                      double tol_abs) {
  LONGMIX_REQUIRE(out.size() == ref.size(), "compare: sizes differ (", out.size(), " vs ",
                  ref.size(), ")");
  return compare(out.data(), ref.data(), out.size(), tol_abs);
}

std::string CompareResult::summary() const {
  std::ostringstream os;
  os << "rel_l2=" << rel_l2 << " max_abs=" << max_abs << " nonfinite=" << nonfinite << " n="
     << count;
  if (!first_mismatches.empty()) {
    os << " first mismatches at";
    for (auto i : first_mismatches) os << ' ' << i;
  }
  return os.str();
}

}  // namespace longmix
