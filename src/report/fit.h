// Least-squares fits used for extrapolation and for the report's findings.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace longmix {

// Complexity models y = a·g(L) + b.
enum class Model { kLinear, kQuadratic, kNLogN };
double model_basis(Model m, double L);
std::string model_name(Model m);  // "a·L+b", ...

struct ModelFit {
  Model model;
  double a = 0, b = 0;
  int points = 0;
  double predict(double L) const { return a * model_basis(model, L) + b; }
};
// Needs >= 1 point; with one point b = 0. With two or more, b is clamped to >= 0
// (a measured floor cannot be negative) and a refitted.
std::optional<ModelFit> fit_model(Model m, const std::vector<double>& L,
                                  const std::vector<double>& y);

// y ≈ c·L^k fitted in log-log space: exponent k with its range.
struct PowerFit {
  double exponent = 0, coeff = 0, r2 = 0;
  double L_lo = 0, L_hi = 0;
  int points = 0;
};
std::optional<PowerFit> fit_power(const std::vector<double>& L, const std::vector<double>& y);

// Smallest L in the overlap of both curves where a(L) <= b(L) after a(L) > b(L) at the start,
// interpolated linearly in log-log space between the bracketing sample points. Curves are
// sampled at their own lengths. Returns the crossing or nullopt when it never crosses.
struct Crossover {
  double L = 0;
  bool a_below_from_start = false;  // a <= b already at the first common length
  double L_before = 0, L_after = 0;  // the bracketing grid lengths (a > b at L_before, a <= b at L_after)
};
std::optional<Crossover> crossover(const std::vector<double>& La, const std::vector<double>& ya,
                                   const std::vector<double>& Lb, const std::vector<double>& yb);

}  // namespace longmix
