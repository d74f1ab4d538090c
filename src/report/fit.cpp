#include "report/fit.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace longmix {

double model_basis(Model m, double L) {
  switch (m) {
    case Model::kLinear: return L;
    case Model::kQuadratic: return L * L;
    case Model::kNLogN: return L * std::log2(L);
  }
  return L;
}

std::string model_name(Model m) {
  switch (m) {
    case Model::kLinear: return "a*L + b";
    case Model::kQuadratic: return "a*L^2 + b";
    case Model::kNLogN: return "a*L*log2(L) + b";
  }
  return "?";
}

std::optional<ModelFit> fit_model(Model m, const std::vector<double>& L,
                                  const std::vector<double>& y) {
  const std::size_t n = std::min(L.size(), y.size());
  if (n == 0) return std::nullopt;
  ModelFit f{m, 0, 0, static_cast<int>(n)};
  auto fit_a_only = [&] {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double g = model_basis(m, L[i]);
      num += g * y[i];
      den += g * g;
    }
    f.a = den > 0 ? num / den : 0;
    f.b = 0;
  };
  if (n == 1) {
    fit_a_only();
    return f;
  }
  // Weighted by 1/y² (relative errors), so small lengths count as much as long ones.
  double sw = 0, sg = 0, sy = 0, sgg = 0, sgy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double w = y[i] != 0 ? 1.0 / (y[i] * y[i]) : 1.0;
    const double g = model_basis(m, L[i]);
    sw += w;
    sg += w * g;
    sy += w * y[i];
    sgg += w * g * g;
    sgy += w * g * y[i];
  }
  const double det = sw * sgg - sg * sg;
  if (std::fabs(det) < 1e-300) {
    fit_a_only();
    return f;
  }
  f.a = (sw * sgy - sg * sy) / det;
  f.b = (sy - f.a * sg) / sw;
  if (f.b < 0 || f.a < 0) fit_a_only();
  return f;
}

std::optional<PowerFit> fit_power(const std::vector<double>& L, const std::vector<double>& y) {
  std::vector<double> x, v;
  for (std::size_t i = 0; i < std::min(L.size(), y.size()); ++i)
    if (L[i] > 0 && y[i] > 0) {
      x.push_back(std::log(L[i]));
      v.push_back(std::log(y[i]));
    }
  if (x.size() < 2) return std::nullopt;
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += v[i];
    sxx += x[i] * x[i];
    sxy += x[i] * v[i];
    syy += v[i] * v[i];
  }
  const double den = n * sxx - sx * sx;
  if (den <= 0) return std::nullopt;
  PowerFit p;
  p.exponent = (n * sxy - sx * sy) / den;
  const double c = (sy - p.exponent * sx) / n;
  p.coeff = std::exp(c);
  const double ss_tot = syy - sy * sy / n;
  double ss_res = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double r = v[i] - (c + p.exponent * x[i]);
    ss_res += r * r;
  }
  p.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 1;
  p.L_lo = std::exp(*std::min_element(x.begin(), x.end()));
  p.L_hi = std::exp(*std::max_element(x.begin(), x.end()));
  p.points = static_cast<int>(x.size());
  return p;
}

namespace {
// log y at log L, linear in log-log between samples; nullopt outside the range.
std::optional<double> interp_log(const std::map<double, double>& c, double L) {
  auto hi = c.lower_bound(L);
  if (hi == c.end()) return std::nullopt;
  if (hi->first == L) return std::log(hi->second);
  if (hi == c.begin()) return std::nullopt;
  auto lo = std::prev(hi);
  const double t = (std::log(L) - std::log(lo->first)) / (std::log(hi->first) - std::log(lo->first));
  return std::log(lo->second) + t * (std::log(hi->second) - std::log(lo->second));
}
}  // namespace

std::optional<Crossover> crossover(const std::vector<double>& La, const std::vector<double>& ya,
                                   const std::vector<double>& Lb, const std::vector<double>& yb) {
  std::map<double, double> a, b;
  for (std::size_t i = 0; i < std::min(La.size(), ya.size()); ++i)
    if (La[i] > 0 && ya[i] > 0) a[La[i]] = ya[i];
  for (std::size_t i = 0; i < std::min(Lb.size(), yb.size()); ++i)
    if (Lb[i] > 0 && yb[i] > 0) b[Lb[i]] = yb[i];
  // Common grid: every sample length of either curve inside the overlap.
  std::vector<double> grid;
  for (auto& [L, _] : a) grid.push_back(L);
  for (auto& [L, _] : b) grid.push_back(L);
  std::sort(grid.begin(), grid.end());
  grid.erase(std::unique(grid.begin(), grid.end()), grid.end());
  std::vector<std::pair<double, double>> diff;  // (L, log a - log b)
  for (double L : grid) {
    auto la = interp_log(a, L), lb = interp_log(b, L);
    if (la && lb) diff.emplace_back(L, *la - *lb);
  }
  if (diff.empty()) return std::nullopt;
  if (diff.front().second <= 0) return Crossover{diff.front().first, true, diff.front().first, diff.front().first};
  for (std::size_t i = 1; i < diff.size(); ++i) {
    if (diff[i].second <= 0) {
      const auto [L0, d0] = diff[i - 1];
      const auto [L1, d1] = diff[i];
      const double x0 = std::log(L0), x = x0 + (std::log(L1) - x0) * d0 / (d0 - d1);
      return Crossover{std::exp(x), false, L0, L1};
    }
  }
  return std::nullopt;
}

}  // namespace longmix
