#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

namespace fs = std::filesystem;
using nlohmann::json;

namespace longmix {

std::string length_label(double Lf) {
  const std::int64_t L = std::llround(Lf);
  if (L >= (1 << 20) && L % (1 << 20) == 0) return std::to_string(L >> 20) + "M";
  if (L >= 1024 && L % 1024 == 0) return std::to_string(L >> 10) + "k";
  return std::to_string(L);
}

std::string Curve::label() const {
  std::string s = impl + " D=" + std::to_string(D);
  if (scope == "core") s += " core";
  if (op == "hyena" && filter == "cached") s += " cached";
  return s;
}

std::vector<std::pair<double, double>> Curve::measured_time() const {
  std::vector<std::pair<double, double>> v;
  for (const auto& r : rows)
    if (r.status == "ok" && !r.extrapolated && r.time_ms) v.emplace_back(r.L, *r.time_ms);
  return v;
}
std::vector<std::pair<double, double>> Curve::measured_mem() const {
  std::vector<std::pair<double, double>> v;
  for (const auto& r : rows)
    if (r.status == "ok" && !r.extrapolated && r.mem_GB) v.emplace_back(r.L, *r.mem_GB);
  return v;
}

std::vector<Curve> group_curves(const std::vector<Row>& rows) {
  std::map<std::string, Curve> m;
  std::vector<std::string> order;
  for (const auto& r : rows) {
    const std::string k = r.curve();
    auto it = m.find(k);
    if (it == m.end()) {
      Curve c;
      c.impl = r.impl; c.op = r.op; c.scope = r.scope; c.dtype = r.dtype; c.filter = r.filter;
      c.backend = r.backend; c.B = r.B; c.H = r.H; c.d = r.d; c.D = r.D;
      it = m.emplace(k, c).first;
      order.push_back(k);
    }
    it->second.rows.push_back(r);
  }
  std::vector<Curve> out;
  for (const auto& k : order) {
    Curve c = m[k];
    std::stable_sort(c.rows.begin(), c.rows.end(), [](const Row& a, const Row& b) { return a.L < b.L; });
    out.push_back(std::move(c));
  }
  // Flash first, then Hyena, then standard attention; within an op by width.
  auto rank = [](const Curve& c) { return c.op == "flash" ? 0 : c.op == "hyena" ? 1 : 2; };
  std::stable_sort(out.begin(), out.end(), [&](const Curve& a, const Curve& b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    return a.D < b.D;
  });
  return out;
}

namespace {

constexpr double kGB = 1e9, kGiB = 1024.0 * 1024 * 1024;

// A predicted length in the units of the sweep: "5.2M", "44k".
std::string length_estimate(double L) {
  char buf[32];
  if (L >= 1000 * 1024) std::snprintf(buf, sizeof buf, "%.3gM", L / 1048576);
  else std::snprintf(buf, sizeof buf, "%.3gk", L / 1024);
  return buf;
}

std::string fmt(double v, int sig = 3) {
  char buf[64];
  if (std::fabs(v) >= 1000 && std::fabs(v) < 1e7) std::snprintf(buf, sizeof buf, "%.0f", v);  // 1520, not 1.52e+03
  else if (v != 0 && (std::fabs(v) >= 1e7 || std::fabs(v) < 1e-3)) std::snprintf(buf, sizeof buf, "%.*e", sig - 1, v);
  else std::snprintf(buf, sizeof buf, "%.*g", sig, v);
  return buf;
}

void split(const std::vector<std::pair<double, double>>& p, std::vector<double>& x, std::vector<double>& y) {
  for (auto& [a, b] : p) { x.push_back(a); y.push_back(b); }
}

std::vector<std::pair<double, double>> tail_of(std::vector<std::pair<double, double>> p, int tail) {
  if (tail > 0 && static_cast<int>(p.size()) > tail) p.erase(p.begin(), p.end() - tail);
  return p;
}

}  // namespace

std::vector<FlashChoice> choose_flash(const std::vector<Curve>& curves) {
  std::map<std::tuple<std::int64_t, std::string, std::string>, std::vector<const Curve*>> groups;
  std::vector<std::tuple<std::int64_t, std::string, std::string>> order;
  for (const auto& c : curves) {
    if (c.op != "flash") continue;
    const auto key = std::make_tuple(c.D, c.scope, c.dtype);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&c);
  }
  std::vector<FlashChoice> out;
  for (const auto& key : order) {
    const auto& g = groups[key];
    std::set<double> common;
    bool first = true;
    for (const Curve* c : g) {
      std::set<double> Ls;
      for (auto& [L, t] : c->measured_time()) Ls.insert(L);
      if (first) common = Ls;
      else {
        std::set<double> both;
        for (double L : common) if (Ls.count(L)) both.insert(L);
        common = both;
      }
      first = false;
    }
    auto log_mean = [&](const Curve* c) {
      double sum = 0;
      for (auto& [L, t] : c->measured_time()) if (common.count(L)) sum += std::log(t);
      return common.empty() ? 0.0 : sum / common.size();
    };
    const Curve* best = g.front();
    for (const Curve* c : g) if (log_mean(c) < log_mean(best)) best = c;
    FlashChoice fc;
    fc.D = std::get<0>(key); fc.scope = std::get<1>(key); fc.dtype = std::get<2>(key);
    fc.fastest = best->label();
    for (const Curve* c : g)
      if (c != best) fc.others.push_back({c->label(), common.empty() ? NAN : std::exp(log_mean(c) - log_mean(best))});
    out.push_back(fc);
  }
  return out;
}

std::vector<Curve> primary_curves(const std::vector<Curve>& curves) {
  std::set<std::string> keep;
  for (const auto& fc : choose_flash(curves)) keep.insert(fc.fastest);
  std::vector<Curve> out;
  for (const auto& c : curves)
    if (c.op != "flash" || keep.count(c.label())) out.push_back(c);
  return out;
}

Findings compute_findings(const std::vector<Curve>& curves, int tail) {
  Findings f;
  for (const auto& c : curves) {
    for (int q = 0; q < 2; ++q) {
      std::vector<double> x, y;
      split(tail_of(q == 0 ? c.measured_time() : c.measured_mem(), tail), x, y);
      if (auto p = fit_power(x, y)) f.exponents.push_back({c.label(), q == 0 ? "time" : "memory", *p});
    }
  }
  std::set<std::int64_t> widths;
  for (const auto& c : curves) widths.insert(c.D);
  for (std::int64_t D : widths) {
    for (const auto& fl : curves) {
      if (fl.op != "flash" || fl.D != D) continue;
      for (const auto& hy : curves) {
        if (hy.op != "hyena" || hy.D != D || hy.scope != fl.scope || hy.dtype != fl.dtype) continue;
        std::vector<double> La, ya, Lb, yb;
        split(hy.measured_time(), La, ya);
        split(fl.measured_time(), Lb, yb);
        CrossoverFinding cf{D, fl.label(), hy.label(), crossover(La, ya, Lb, yb), 0, 0};
        if (!La.empty() && !Lb.empty()) {
          cf.L_lo = std::max(La.front(), Lb.front());
          cf.L_hi = std::min(La.back(), Lb.back());
        }
        f.crossovers.push_back(cf);
        // Memory at the longest length where both were measured.
        MemoryRatio mr{D, fl.label(), hy.label(), 0, 0, 0};
        for (const auto& [L, m] : fl.measured_mem())
          for (const auto& [L2, m2] : hy.measured_mem())
            if (L == L2 && L >= mr.L) { mr.L = static_cast<std::int64_t>(L); mr.flash_GB = m; mr.hyena_GB = m2; }
        if (mr.L) f.memory.push_back(mr);
      }
    }
  }
  for (const auto& c : curves) {
    OomPrediction o;
    o.curve = c.label();
    for (const auto& r : c.rows)
      if (r.status == "OOM" && !r.extrapolated) { o.measured_first_oom = r.L; break; }
    std::vector<double> x, y;
    split(c.measured_mem(), x, y);
    const Model m = c.op == "attention" ? Model::kQuadratic : Model::kLinear;
    if (auto fit = fit_model(m, x, y)) {
      o.model = model_name(m);
      for (int gb : {16, 24, 40, 80}) {
        const double cap = gb * kGB / kGiB;  // GiB
        const double g = (cap - fit->b) / fit->a;
        if (fit->a <= 0 || g <= 0) continue;
        o.predicted_L[gb] = m == Model::kQuadratic ? std::sqrt(g) : g;
      }
    }
    f.oom.push_back(o);
  }
  return f;
}

namespace {

struct Env {
  json j;
  std::string get(const std::string& k, const std::string& dflt = "unknown") const {
    if (j.contains(k) && !j[k].is_null()) return j[k].is_string() ? j[k].get<std::string>() : j[k].dump();
    return dflt;
  }
};

std::string device_title(const Env& env, const std::vector<Curve>& curves) {
  std::string dev = env.get("gpu", "");
  if (dev.empty()) dev = env.get("cpu", "unknown device");
  std::set<std::string> dt;
  std::set<std::int64_t> bs;
  for (auto& c : curves) { dt.insert(c.dtype); bs.insert(c.B); }
  std::string d;
  for (auto& x : dt) d += (d.empty() ? "" : "/") + x;
  std::string b;
  for (auto x : bs) b += (b.empty() ? "" : "/") + std::to_string(x);
  return dev + ", " + d + ", B=" + b;
}

// Writes a gnuplot script for one quantity and runs it; returns "" or an error message.
std::string plot(const std::string& dir, const std::vector<Curve>& curves, bool time,
                 const std::string& title) {
  const std::string base = time ? "time_vs_length" : "memory_vs_length";
  const std::string data_dir = dir + "/.plotdata";
  fs::create_directories(data_dir);
  std::ostringstream gp;
  double ymin = 1e300, ymax = 0, xmin = 1e300, xmax = 0;
  std::set<std::int64_t> Ls;
  auto val = [&](const Row& r) -> std::optional<double> { return time ? r.time_ms : r.mem_GB; };
  for (auto& c : curves)
    for (auto& r : c.rows) {
      Ls.insert(r.L);
      xmin = std::min(xmin, double(r.L));
      xmax = std::max(xmax, double(r.L));
      if (auto v = val(r); v && *v > 0) { ymin = std::min(ymin, *v); ymax = std::max(ymax, *v); }
    }
  if (ymax <= 0) return "no values to plot";
  const double ytop = ymax * 8, ybot = ymin / 2;
  std::vector<std::string> plots;
  const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  std::map<std::int64_t, int> width_idx;
  for (auto& c : curves) width_idx.emplace(c.D, static_cast<int>(width_idx.size()));
  const int pts_full[] = {7, 5, 9, 11}, pts_hollow[] = {6, 4, 8, 10};
  struct OomAt {
    int markers = 0;        // stacked down from the top edge
    bool measured = false;  // labelled "OOM" when one of them is measured, else "OOM (predicted)"
  };
  std::map<std::int64_t, OomAt> oom_at;
  std::ostringstream labels;
  std::map<std::string, int> impl_color;
  for (std::size_t ci = 0; ci < curves.size(); ++ci) {
    const auto& c = curves[ci];
    const int col = impl_color.emplace(c.impl + c.filter + c.scope, static_cast<int>(impl_color.size())).first->second % 8;
    const int wi = width_idx[c.D] % 4;
    const std::string stem = data_dir + "/" + base + "_" + std::to_string(ci);
    std::ofstream m(stem + "_m.dat"), x(stem + "_x.dat"), oom(stem + "_oom.dat"), oomx(stem + "_oomx.dat");
    std::optional<std::pair<double, double>> last_measured;
    bool any_m = false, any_x = false, any_oom = false, any_oomx = false;
    for (auto& r : c.rows) {
      auto v = val(r);
      if (r.status == "OOM") {  // at the top edge, in the curve's colour and marker
        OomAt& at = oom_at[r.L];
        const int k = at.markers++;
        at.measured = at.measured || !r.extrapolated;
        (r.extrapolated ? oomx : oom) << r.L << " " << ytop / std::pow(1.35, k + 1) << "\n";
        (r.extrapolated ? any_oomx : any_oom) = true;
        continue;
      }
      if (!v || *v <= 0 || r.status != "ok") continue;
      if (!r.extrapolated) { m << r.L << " " << *v << "\n"; last_measured = {double(r.L), *v}; any_m = true; }
      else {
        if (!any_x && last_measured) x << last_measured->first << " " << last_measured->second << "\n";
        x << r.L << " " << *v << "\n";
        any_x = true;
      }
    }
    const std::string lc = std::string("lc rgb '") + colors[col] + "'";
    if (any_m)
      plots.push_back("'" + stem + "_m.dat' using 1:2 with linespoints lw 2 pt " + std::to_string(pts_full[wi]) +
                      " ps 1.4 " + lc + " title '" + c.label() + "'");
    if (any_x)
      plots.push_back("'" + stem + "_x.dat' using 1:2 with linespoints lw 2 dt 2 pt " + std::to_string(pts_hollow[wi]) +
                      " ps 1.4 " + lc + " title '" + c.label() + " (extrapolated)'");
    if (any_oom)
      plots.push_back("'" + stem + "_oom.dat' using 1:2 with points pt " + std::to_string(pts_full[wi]) + " ps 2 " + lc +
                      " title '" + c.label() + ": out of memory (measured)'");
    if (any_oomx)
      plots.push_back("'" + stem + "_oomx.dat' using 1:2 with points pt " + std::to_string(pts_hollow[wi]) + " ps 2 " +
                      lc + " title '" + c.label() + ": out of memory (predicted)'");
  }
  for (auto& [L, at] : oom_at)
    labels << "set label '" << (at.measured ? "OOM" : "OOM (predicted)") << "' at " << L << ","
           << ytop / std::pow(1.35, at.markers + 1) / 1.35 << " center font ',11' front\n";
  // Guides anchored at the first measured point of the first curve that has one.
  for (auto& c : curves) {
    auto p = time ? c.measured_time() : c.measured_mem();
    if (p.empty()) continue;
    const double x0 = p.front().first, y0 = p.front().second;
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.6g*(x/%.6g) with lines dt 3 lw 1.5 lc rgb '#888888' title 'O(L) from %s'", y0, x0, length_label(x0).c_str());
    plots.push_back(buf);
    std::snprintf(buf, sizeof buf, "%.6g*(x/%.6g)**2 with lines dt 4 lw 1.5 lc rgb '#444444' title 'O(L^2) from %s'", y0, x0, length_label(x0).c_str());
    plots.push_back(buf);
    if (time) {
      std::snprintf(buf, sizeof buf, "%.6g*(x/%.6g)*log(x)/log(%.6g) with lines dt 5 lw 1.5 lc rgb '#aaaaaa' title 'O(L log L) from %s'", y0, x0, x0, length_label(x0).c_str());
      plots.push_back(buf);
    }
    break;
  }
  std::string xt;
  for (auto L : Ls) xt += (xt.empty() ? "" : ", ") + ("'" + length_label(L) + "' " + std::to_string(L));
  gp << "set logscale xy\nset grid xtics ytics mytics lc rgb '#dddddd'\n"
     << "set xlabel 'sequence length L (tokens)'\n"
     << "set ylabel '" << (time ? "forward time per call (ms)" : "peak device memory (GiB)") << "'\n"
     << "set title \"" << (time ? "Forward time vs sequence length" : "Peak memory vs sequence length")
     << "\\n" << title << "\" noenhanced\n"
     << "set key inside left top noenhanced spacing 1.1 box opaque\n"
     << "set xrange [" << xmin / 1.3 << ":" << xmax * 1.3 << "]\n"
     << "set yrange [" << ybot << ":" << ytop << "]\n"
     << "set xtics (" << xt << ")\nset format y '%g'\n"
     << labels.str();
  std::string plot_cmd = "plot ";
  for (std::size_t i = 0; i < plots.size(); ++i) plot_cmd += (i ? ", \\\n  " : "") + plots[i];
  const std::string script = data_dir + "/" + base + ".gp";
  {
    std::ofstream s(script);
    s << "set terminal pngcairo size 1400,850 font 'DejaVu Sans,12'\nset output '" << dir << "/" << base << ".png'\n"
      << gp.str() << plot_cmd << "\n"
      << "set terminal svg size 1400,850 dynamic font 'DejaVu Sans,12'\nset output '" << dir << "/" << base << ".svg'\n"
      << "replot\n";
  }
  const int rc = std::system(("gnuplot '" + script + "' 2>'" + data_dir + "/" + base + ".log'").c_str());
  if (rc != 0) {
    std::ifstream lf(data_dir + "/" + base + ".log");
    std::stringstream e;
    e << lf.rdbuf();
    return "gnuplot failed (is it installed? apt-get install gnuplot-nox): " + e.str();
  }
  return "";
}

std::string cell(const Row* r, bool time, bool tex) {
  if (!r) return tex ? "--" : "—";
  if (r->status == "OOM") return r->extrapolated ? (tex ? "OOM$^\\dagger$" : "OOM†") : "OOM";
  if (r->status != "ok") return r->status;
  auto v = time ? r->time_ms : r->mem_GB;
  if (!v) return tex ? "--" : "—";
  std::string s = fmt(*v);
  if (r->extrapolated) s += tex ? "$^\\dagger$" : "†";
  return s;
}

const Row* at(const Curve& c, std::int64_t L) {
  for (auto& r : c.rows) if (r.L == L) return &r;
  return nullptr;
}

std::optional<double> ratio(const Row* a, const Row* b, bool time) {
  if (!a || !b || a->status != "ok" || b->status != "ok") return std::nullopt;
  auto x = time ? a->time_ms : a->mem_GB;
  auto y = time ? b->time_ms : b->mem_GB;
  if (!x || !y || *y <= 0) return std::nullopt;
  return *x / *y;
}

struct Pair {
  const Curve* flash;
  const Curve* hyena;
  const Curve* standard;
  std::int64_t D;
  std::set<std::int64_t> lengths() const {  // every length either side has a row for
    std::set<std::int64_t> Ls;
    for (auto& r : flash->rows) Ls.insert(r.L);
    for (auto& r : hyena->rows) Ls.insert(r.L);
    return Ls;
  }
  bool extrapolated_at(std::int64_t L) const {
    const Row *f = at(*flash, L), *h = at(*hyena, L);
    return (f && f->extrapolated) || (h && h->extrapolated);
  }
};

std::vector<Pair> pairs_of(const std::vector<Curve>& curves) {
  std::vector<Pair> out;
  for (auto& fl : curves) {
    if (fl.op != "flash") continue;
    for (auto& hy : curves) {
      if (hy.op != "hyena" || hy.D != fl.D || hy.scope != fl.scope || hy.dtype != fl.dtype) continue;
      const Curve* st = nullptr;
      for (auto& s : curves) if (s.op == "attention" && s.D == fl.D && s.scope == fl.scope && s.dtype == fl.dtype) st = &s;
      out.push_back({&fl, &hy, st, fl.D});
    }
  }
  return out;
}

std::string md_tables(const std::vector<Curve>& curves) {
  std::ostringstream md;
  for (auto& p : pairs_of(curves)) {
    md << "\n### D = " << p.D << ": " << p.flash->impl << " vs " << p.hyena->impl
       << (p.hyena->filter == "cached" ? " (filter cached)" : "") << " (" << p.flash->scope << ", " << p.flash->dtype << ")\n\n"
       << "| L | Flash mem (GiB) | Flash time (ms) | Hyena mem (GiB) | Hyena time (ms) | mem Hyena/Flash | time Hyena/Flash |";
    if (p.standard) md << " standard mem (GiB) | standard time (ms) |";
    md << "\n|---|---|---|---|---|---|---|" << (p.standard ? "---|---|" : "") << "\n";
    for (auto L : p.lengths()) {
      const Row *f = at(*p.flash, L), *h = at(*p.hyena, L);
      auto rm = ratio(h, f, false), rt = ratio(h, f, true);
      const bool ex = p.extrapolated_at(L);
      md << "| " << length_label(L) << " | " << cell(f, false, false) << " | " << cell(f, true, false) << " | "
         << cell(h, false, false) << " | " << cell(h, true, false) << " | "
         << (rm ? fmt(*rm) + "×" + (ex ? "†" : "") : "—") << " | " << (rt ? fmt(*rt) + "×" + (ex ? "†" : "") : "—") << " |";
      if (p.standard) md << " " << cell(at(*p.standard, L), false, false) << " | " << cell(at(*p.standard, L), true, false) << " |";
      md << "\n";
    }
  }
  md << "\n† extrapolated from the fitted complexity model (not measured). OOM: did not fit under the "
        "memory cap (measured) — OOM† predicted from the fitted memory model.\n";
  return md.str();
}

std::string tex_table(const std::vector<Curve>& curves) {
  std::ostringstream t;
  t << "% generated by longmix report; values from the results CSVs\n"
    << "\\begin{table}[t]\n\\centering\n\\small\n\\begin{tabular}{rrrrrrrr}\n\\toprule\n"
    << "$D$ & $L$ & Flash mem (GiB) & Flash time (ms) & Hyena mem (GiB) & Hyena time (ms) & mem ratio & time ratio \\\\\n\\midrule\n";
  bool first = true;
  for (auto& p : pairs_of(curves)) {
    if (!first) t << "\\midrule\n";
    first = false;
    t << "\\multicolumn{8}{l}{\\texttt{" << p.flash->impl << "} vs \\texttt{" << p.hyena->impl << "}"
      << (p.hyena->filter == "cached" ? " (filter cached)" : "") << "} \\\\\n";
    for (auto L : p.lengths()) {
      const Row *f = at(*p.flash, L), *h = at(*p.hyena, L);
      auto rm = ratio(h, f, false), rt = ratio(h, f, true);
      const std::string mark = p.extrapolated_at(L) ? "$^\\dagger$" : "";
      t << p.D << " & " << length_label(L) << " & " << cell(f, false, true) << " & " << cell(f, true, true) << " & "
        << cell(h, false, true) << " & " << cell(h, true, true) << " & " << (rm ? fmt(*rm) + mark : "--") << " & "
        << (rt ? fmt(*rt) + mark : "--") << " \\\\\n";
    }
  }
  t << "\\bottomrule\n\\end{tabular}\n\\caption{Peak memory and forward time; ratios are Hyena/Flash. "
       "$^\\dagger$ extrapolated, not measured.}\n\\label{tab:longmix}\n\\end{table}\n";
  return t.str();
}

std::string all_rows_md(const std::vector<Row>& rows) {
  std::ostringstream md;
  md << "\n## Every row\n\n| impl | scope | dtype | D | filter | L | time_ms (min–max, reps) | mem_GB | work_GB | status | extrapolated | note |\n"
     << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (auto& r : rows) {
    md << "| " << r.impl << " | " << r.scope << " | " << r.dtype << " | " << r.D << " | " << r.filter << " | "
       << length_label(r.L) << " | ";
    if (r.time_ms) {
      md << fmt(*r.time_ms);
      if (r.time_min_ms && r.time_max_ms) md << " (" << fmt(*r.time_min_ms) << "–" << fmt(*r.time_max_ms) << ", " << r.reps << ")";
    } else md << "—";
    md << " | " << (r.mem_GB ? fmt(*r.mem_GB) : (r.status == "OOM" ? "OOM" : "—")) << " | "
       << (r.work_GB ? fmt(*r.work_GB) : "—") << " | " << r.status << " | " << (r.extrapolated ? "yes" : "no")
       << " | " << r.note << " |\n";
  }
  return md.str();
}

// Peers measured in the same run (bench/peers/peers.py writes DIR/peers.json).
struct PeerSet {
  std::vector<Row> rows;
  json env;
};

PeerSet read_peers(const std::string& path) {
  PeerSet ps;
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const json::exception& e) {
    throw std::runtime_error(path + ": malformed JSON: " + e.what());
  }
  ps.env = j.value("environment", json::object());
  if (!j.contains("rows") || !j["rows"].is_array()) throw std::runtime_error(path + ": no \"rows\" array");
  std::size_t i = 0;
  for (const auto& r : j["rows"]) {
    ++i;
    try {
      Row x;
      x.impl = r.at("impl").get<std::string>();
      x.L = r.at("L").get<std::int64_t>();
      x.D = r.at("D").get<std::int64_t>();
      x.H = r.value("H", 0);
      x.d = r.value("d", 0);
      x.B = r.value("B", 1);
      x.scope = r.value("scope", std::string("layer"));
      x.dtype = r.value("dtype", std::string("fp16"));
      x.status = r.value("status", std::string("ok"));
      x.backend = "torch";
      x.op = x.impl == "torch-hyena" ? "hyena" : x.impl == "torch-naive" ? "attention" : "flash";
      x.filter = x.op == "hyena" ? "recompute" : "-";
      if (x.status == "ok") {
        x.time_ms = r.at("time_ms").get<double>();
        x.mem_GB = r.at("mem_GB").get<double>();
        x.reps = r.value("reps", 0);
      }
      if (x.L <= 0 || (x.time_ms && !(*x.time_ms > 0))) throw std::runtime_error("bad L or time");
      ps.rows.push_back(x);
    } catch (const std::exception& e) {
      throw std::runtime_error(path + ": row " + std::to_string(i) + ": " + e.what());
    }
  }
  return ps;
}

std::string peers_section(const std::vector<Curve>& ours, const PeerSet& ps) {
  std::ostringstream md;
  md << "\n## Side by side with the peers (same machine, same run)\n\n"
     << "Measured by `bench/peers/peers.py` (PyTorch " << (ps.env.contains("torch") ? ps.env["torch"].get<std::string>() : "?")
     << ", cuDNN " << (ps.env.contains("cudnn") ? ps.env["cudnn"].dump() : "?")
     << ") right after the sweep, same shapes and protocol. Ratios are ours / peer (below 1: ours is faster or smaller).\n\n"
     << "| D | L | ours | peer | ours time (ms) | peer time (ms) | time ratio | ours mem (GiB) | peer mem (GiB) | mem ratio |\n"
     << "|---|---|---|---|---|---|---|---|---|---|\n";
  const std::map<std::string, std::string> counterpart = {{"torch-sdpa-cudnn", "flash"}, {"torch-sdpa-flash", "flash"},
                                                          {"torch-hyena", "hyena"}, {"torch-naive", "attention"}};
  for (const auto& pr : ps.rows) {
    for (const auto& c : ours) {
      if (c.op != counterpart.at(pr.impl) || c.D != pr.D || c.scope != pr.scope || c.dtype != pr.dtype) continue;
      const Row* o = at(c, pr.L);
      if (!o || o->extrapolated) continue;
      auto rt = ratio(o, &pr, true), rm = ratio(o, &pr, false);
      md << "| " << pr.D << " | " << length_label(pr.L) << " | " << c.impl << " | " << pr.impl << " | " << cell(o, true, false)
         << " | " << cell(&pr, true, false) << " | " << (rt ? fmt(*rt) + "×" : "—") << " | " << cell(o, false, false) << " | "
         << cell(&pr, false, false) << " | " << (rm ? fmt(*rm) + "×" : "—") << " |\n";
    }
  }
  // Crossovers with the peers' FlashAttention implementations and the reference Hyena.
  std::vector<Curve> all = ours;
  for (auto& c : group_curves(ps.rows)) all.push_back(c);
  const auto f = compute_findings(all);
  md << "\nTime crossovers including the peers (Hyena becomes faster than FlashAttention):\n\n";
  for (const auto& x : f.crossovers) {
    if (x.flash.rfind("torch", 0) != 0 && x.hyena.rfind("torch", 0) != 0) continue;
    md << "- D = " << x.D << ", " << x.hyena << " vs " << x.flash << ": ";
    if (x.L_hi <= 0) md << "no common length.\n";
    else if (!x.at) md << "never crosses in range (" << length_label(x.L_lo) << "–" << length_label(x.L_hi) << ").\n";
    else if (x.at->a_below_from_start) md << "Hyena already faster at " << length_label(x.at->L) << ".\n";
    else md << "L ≈ " << std::to_string(std::llround(x.at->L)) << ".\n";
  }
  return md.str();
}

}  // namespace

int write_report(const std::string& dir, std::ostream& log) {
  std::vector<Row> rows;
  bool any = false;
  for (const std::string op : {"flash", "hyena", "attention"}) {
    const std::string path = dir + "/" + csv_name_for_op(op);
    if (!fs::exists(path)) continue;
    any = true;
    auto r = read_csv(path);
    for (auto& x : r) if (x.op.empty()) x.op = op;
    rows.insert(rows.end(), r.begin(), r.end());
  }
  if (!any) throw std::runtime_error(dir + ": no results_*.csv files to report on");
  Env env;
  json merged_from = json::array();  // tools/merge_results.py: each source folder's environment
  if (fs::exists(dir + "/results.json")) {
    try {
      const json top = json::parse(read_file(dir + "/results.json"));
      env.j = top.value("environment", json::object());
      if (top.contains("merged_from") && top["merged_from"].is_array()) merged_from = top["merged_from"];
    } catch (const json::exception& e) {
      throw std::runtime_error(dir + "/results.json: malformed JSON: " + e.what());
    }
  }
  const auto curves = group_curves(rows);
  // The tables, crossovers and recommendations compare the fastest FlashAttention of each width
  // (named); exponents, OOM, throughput and plots show every curve.
  const auto primary = primary_curves(curves);
  const auto choices = choose_flash(curves);
  const auto f_all = compute_findings(curves);
  const auto f = compute_findings(primary);
  const std::string title = device_title(env, curves);
  int rc = 0;
  for (bool time : {false, true}) {
    const std::string err = plot(dir, curves, time, title);
    if (!err.empty()) { log << "longmix report: " << err << "\n"; rc = 5; }
  }
  const std::string tables = md_tables(primary);
  write_file_atomic(dir + "/comparison_table.md", "# longmix comparison table\n\n" + title + "\n" + tables + all_rows_md(rows));
  write_file_atomic(dir + "/table.tex", tex_table(primary));

  // --- report.md --------------------------------------------------------------------------------
  std::ostringstream md;
  md << "# FlashAttention vs Hyena: memory and time over sequence length\n\n"
     << "## What was run\n\n"
     << "- Device: " << title << " (backend " << env.get("backend") << ")\n";
  for (const char* k : {"gpu", "driver", "cuda_runtime", "cudnn", "cufft", "cublas", "cpu", "cpu_threads", "fftw", "openblas", "compiler", "build_type", "git_commit", "date"})
    if (env.j.contains(k)) md << "- " << k << ": `" << env.get(k) << "`\n";
  if (env.j.contains("git_dirty") && env.j["git_dirty"].get<bool>()) md << "- the source tree had uncommitted changes\n";
  if (!merged_from.empty()) {
    // A merged folder: the lines above are its first source's; each source's own build and date.
    md << "- merged from (the lines above are the first source's environment):";
    for (const auto& src : merged_from) {
      Env e;
      e.j = src.value("environment", json::object());
      const std::string commit = e.get("git_commit", "?");
      md << " `" << src.value("folder", std::string("?")) << "` (" << commit.substr(0, 7)
         << (e.j.value("git_dirty", false) ? " with uncommitted changes" : "") << ", " << e.get("gpu", e.get("cpu", "?"))
         << ", " << e.get("date", "?") << ")" << (&src == &merged_from.back() ? "" : ";");
    }
    md << "\n";
  }
  if (env.j.contains("memory_cap_bytes")) md << "- memory cap: " << fmt(env.j["memory_cap_bytes"].get<double>() / kGiB) << " GiB\n";
  md << "- command: `" << env.get("command_line") << "`\n";
  if (env.j.contains("protocol")) {
    auto p = env.j["protocol"];
    md << "- protocol: " << p.value("warmup", 0) << " warm-up calls, then repeats until ≥ " << p.value("min_reps", 0)
       << " calls and ≥ " << p.value("min_seconds", 0.0) << " s; median reported (min/max/count in the CSVs); timer: "
       << p.value("timer", std::string("?")) << "; L2 flushed between calls: " << (p.value("l2_flushed", false) ? "yes" : "no")
       << ".\n";
    if (p.contains("order")) md << "- order: " << p.value("order", std::string("?")) << ".\n";
    md << "- memory: " << p.value("memory", std::string("?")) << ".\n";
  }
  std::set<std::string> shapes;
  for (auto& c : curves) shapes.insert("B=" + std::to_string(c.B) + ", H=" + std::to_string(c.H) + ", d=" + std::to_string(c.d) + ", D=" + std::to_string(c.D) + ", " + c.scope + ", " + c.dtype);
  md << "- shapes:";
  for (auto& s : shapes) md << " [" << s << "]";
  md << "\n\n## Results\n";
  for (const auto& fc : choices) {
    if (fc.others.empty()) continue;
    md << "\n### Which FlashAttention (D = " << fc.D << ", " << fc.scope << ", " << fc.dtype << ")\n\n"
       << "\"FlashAttention\" in the tables, crossovers and recommendations below is **" << fc.fastest
       << "**, the fastest of the FlashAttention implementations measured (geometric mean over the lengths all ran):";
    for (auto& [label, r] : fc.others) md << " " << label << " took " << (std::isnan(r) ? "—" : fmt(r) + "×") << " its time;";
    md << " each length:\n\n| L |";
    std::vector<const Curve*> g;
    for (auto& c : curves)
      if (c.op == "flash" && c.D == fc.D && c.scope == fc.scope && c.dtype == fc.dtype) g.push_back(&c);
    const Curve* best = nullptr;
    for (auto* c : g) if (c->label() == fc.fastest) best = c;
    std::set<std::int64_t> Ls;
    for (auto* c : g) { md << " " << c->impl << " (ms) |"; for (auto& r : c->rows) Ls.insert(r.L); }
    for (auto* c : g) if (c != best) md << " " << c->impl << " / " << best->impl << " |";
    md << "\n|---|";
    for (std::size_t i = 0; i < 2 * g.size() - 1; ++i) md << "---|";
    md << "\n";
    for (auto L : Ls) {
      md << "| " << length_label(L) << " |";
      for (auto* c : g) md << " " << cell(at(*c, L), true, false) << " |";
      for (auto* c : g)
        if (c != best) {
          auto rt = ratio(at(*c, L), at(*best, L), true);
          md << " " << (rt ? fmt(*rt) + "×" : "—") << " |";
        }
      md << "\n";
    }
  }
  md << tables
     << "\n![Peak memory vs length](memory_vs_length.png)\n\n![Forward time vs length](time_vs_length.png)\n\n"
     << "Full rows: [comparison_table.md](comparison_table.md); LaTeX: [table.tex](table.tex); raw: `results_*.csv`, `results.json`.\n";

  md << "\n## Findings (computed from the rows above)\n\n### Growth exponents (log-log least squares, measured rows only)\n\n"
     << "| curve | quantity | exponent | range | points | R² |\n|---|---|---|---|---|---|\n";
  for (auto& e : f_all.exponents)
    md << "| " << e.curve << " | " << e.quantity << " | " << fmt(e.fit.exponent) << " | " << length_label(e.fit.L_lo)
       << "–" << length_label(e.fit.L_hi) << " | " << e.fit.points << " | " << fmt(e.fit.r2, 4) << " |\n";
  md << "\nExponents are fitted on the longest (up to 4) measured lengths of each curve, where fixed costs matter least.\n";

  md << "\n### Time: where Hyena becomes faster\n\n";
  if (f.crossovers.empty()) md << "- No FlashAttention and Hyena curves of the same width, scope and dtype in this folder.\n";
  for (auto& c : f.crossovers) {
    md << "- D = " << c.D << ", " << c.hyena << " vs " << c.flash << ": ";
    if (c.L_hi <= 0) md << "no length where both were measured.\n";
    else if (!c.at) md << "never crosses in range (" << length_label(c.L_lo) << "–" << length_label(c.L_hi) << "): Hyena stays slower.\n";
    else if (c.at->a_below_from_start) md << "Hyena is already faster (or equal) at the shortest common length, " << length_label(c.at->L) << ".\n";
    else md << "Hyena becomes faster from L ≈ " << std::to_string(std::llround(c.at->L)) << " (interpolated in log space between measured lengths).\n";
  }
  md << "\n### Memory\n\n";
  if (f.memory.empty()) md << "- No length where a FlashAttention and a Hyena curve of the same width both ran.\n";
  for (auto& m : f.memory) {
    const double r = m.hyena_GB / m.flash_GB;
    md << "- D = " << m.D << ": at L = " << length_label(m.L) << " (longest length where both ran), " << m.hyena << " held "
       << fmt(m.hyena_GB) << " GiB and " << m.flash << " " << fmt(m.flash_GB) << " GiB: Hyena holds "
       << fmt(r >= 1 ? r : 1 / r) << "× " << (r >= 1 ? "more" : "less") << ".\n";
  }
  md << "\n### Out of memory\n\n| curve | first OOM measured | memory model | predicted longest L on 16 / 24 / 40 / 80 GB |\n|---|---|---|---|\n";
  for (auto& o : f_all.oom) {
    md << "| " << o.curve << " | " << (o.measured_first_oom ? length_label(*o.measured_first_oom) : "none") << " | "
       << (o.model.empty() ? "—" : o.model) << " | ";
    bool firstp = true;
    for (int gb : {16, 24, 40, 80}) {
      md << (firstp ? "" : " / ");
      firstp = false;
      auto it = o.predicted_L.find(gb);
      md << (it == o.predicted_L.end() ? "—" : "≈" + length_estimate(it->second));
    }
    md << " |\n";
  }
  md << "\nPredictions solve the fitted memory model (fitted on measured rows) for the device size; they are "
        "extrapolations, not measurements, and count only the memory of this one layer.\n";

  md << "\n### Throughput at the longest measured length\n\n| curve | L | tokens/s | TFLOP/s (attention FLOPs) | % of the measured matmul ceiling |\n|---|---|---|---|---|\n";
  const double ceiling = env.j.contains("ceiling_matmul_tflops") ? env.j["ceiling_matmul_tflops"].get<double>() : 0;
  for (auto& c : curves) {
    auto t = c.measured_time();
    if (t.empty()) continue;
    const auto [L, ms] = t.back();
    const double tok = c.B * L / (ms / 1e3);
    md << "| " << c.label() << " | " << length_label(L) << " | " << fmt(tok) << " | ";
    if (c.op != "hyena") {
      const double fl = 4.0 * c.B * c.H * L * L * c.d / 2 / (ms / 1e3) / 1e12;  // causal forward
      md << fmt(fl) << " | " << (ceiling > 0 ? fmt(100 * fl / ceiling) + "%" : "—") << " |\n";
    } else {
      md << "— | — |\n";
    }
  }
  if (ceiling > 0) md << "\nMatmul ceiling measured at the start of the run: " << fmt(ceiling) << " TFLOP/s (" << (env.get("backend") == "cuda" ? "bf16 8192³ cuBLAS product" : "fp32 1024³ OpenBLAS sgemm") << ").\n";

  // --- recommendations and the seed's expectation ----------------------------------------------
  if (fs::exists(dir + "/peers.json")) md << peers_section(curves, read_peers(dir + "/peers.json"));
  md << "\n## Recommendations (derived from the findings above)\n\n";
  // A curve's measured time at length L, if it has one.
  auto time_at = [&](const std::string& label, double L) -> std::optional<double> {
    for (const auto& cv : curves)
      if (cv.label() == label)
        for (const auto& [l, ms] : cv.measured_time())
          if (l == L) return ms;
    return std::nullopt;
  };
  // The order of two medians closer than this is not settled by one run: the same build's time
  // moved ~3% between calls with identical kernels in this project's A/B runs (bench/NOTES.md,
  // hyena-fused v20, H100).
  constexpr double kLevel = 0.03;
  auto level_note = [&](const CrossoverFinding& c, double L, bool hyena_faster) -> std::string {
    const auto tf = time_at(c.flash, L), th = time_at(c.hyena, L);
    if (!tf || !th || *tf <= 0 || *th <= 0) return "";
    const double lead = hyena_faster ? *tf / *th - 1 : *th / *tf - 1;
    if (lead < 0 || lead >= kLevel) return "";
    return " At " + length_label(L) + " the two were level within " + fmt(100 * lead, 2) + "% (FlashAttention " +
           fmt(*tf) + " ms, Hyena " + fmt(*th) + " ms), less than the ~" + fmt(100 * kLevel) +
           "% one build's time moves between calls, so " +
           "that length does not settle the order.";
  };
  for (auto& c : f.crossovers) {
    if (c.L_hi <= 0) continue;
    md << "- **Time, D = " << c.D << " (" << c.flash << " vs " << c.hyena << ")**: ";
    if (!c.at) md << "keep FlashAttention at every measured length up to " << length_label(c.L_hi) << "; Hyena did not become faster.\n";
    else if (c.at->a_below_from_start)
      md << "Hyena is at least as fast from the shortest measured length (" << length_label(c.at->L) << ") on."
         << level_note(c, c.at->L, true) << "\n";
    else
      md << "switch to Hyena from L ≈ " << std::to_string(std::llround(c.at->L))
         << " on (the crossing interpolated between the measured " << length_label(c.at->L_before)
         << ", where FlashAttention was faster, and " << length_label(c.at->L_after)
         << ", where Hyena was); below it FlashAttention is faster."
         << level_note(c, c.at->L_before, false) << level_note(c, c.at->L_after, true) << "\n";
  }
  for (auto& m : f.memory) {
    const double r = m.hyena_GB / m.flash_GB;
    md << "- **Memory, D = " << m.D << " (" << m.flash << " vs " << m.hyena << ")**: " << (r >= 1 ? "FlashAttention is the smaller of the two" : "Hyena is the smaller of the two")
       << " (" << fmt(r >= 1 ? r : 1 / r) << "× at " << length_label(m.L) << "); ";
    md << (r >= 1 ? "memory is no reason to switch to Hyena.\n" : "switching saves memory at this length.\n");
  }
  // The seed expected FlashAttention O(N²) in memory and OOM at 128k.
  for (auto& e : f.exponents) {
    if (e.quantity != "memory" || e.curve.rfind("flash", 0) != 0) continue;
    const bool linear = e.fit.exponent < 1.5;
    md << "- **On the expectation that FlashAttention is O(N²) in memory** (" << e.curve << "): measured exponent "
       << fmt(e.fit.exponent) << " over " << length_label(e.fit.L_lo) << "–" << length_label(e.fit.L_hi) << ". ";
    if (linear) md << "The data shows linear growth: FlashAttention never materialises the L×L score matrix; it holds q, k, v, the output and an fp32 log-sum-exp per row, all O(L).\n";
    else md << "The data shows super-linear growth; see the rows for where memory goes.\n";
  }
  for (auto& o : f.oom) {
    if (o.curve.rfind("flash", 0) != 0) continue;
    std::int64_t longest = 0;
    for (auto& c : curves) if (c.label() == o.curve) for (auto& r : c.rows) if (r.status == "ok" && !r.extrapolated) longest = std::max(longest, r.L);
    md << "- " << o.curve << ": " << (o.measured_first_oom ? "ran out of memory from L = " + length_label(*o.measured_first_oom)
                                                       : "no out-of-memory in the measured range (longest measured: " + length_label(longest) + ")") << ".\n";
  }

  md << "\n## Limitations\n\n- Forward pass only (no backward), inference-style single call.\n";
  std::set<std::int64_t> bs;
  for (auto& c : curves) bs.insert(c.B);
  md << "- Batch size" << (bs.size() > 1 ? "s" : "") << ":";
  for (auto b : bs) md << " " << b;
  md << "; one layer, one device.\n- Hyena is the reference operator of order " << "2 (SPEC §3) unless the command line says otherwise; "
     << "filter recomputed every call unless a curve says `cached`.\n";
  std::size_t nx = 0;
  for (auto& r : rows) nx += r.extrapolated;
  if (nx) md << "- " << nx << " rows are extrapolated (marked † / hollow dashed markers), not measured.\n";
  const bool in_turns = env.j.contains("protocol") &&
                        env.j["protocol"].value("order", std::string()).find("in turns") != std::string::npos;
  md << (in_turns ? "- L2 cache not flushed between calls; the implementations of one op at one length were timed "
                    "in turns, so a call may find in L2 what the other implementation's call left there (its own "
                    "inputs only where one call's bytes fit L2 beside the other's).\n"
                  : "- L2 cache not flushed between calls; timings are of back-to-back calls on warm caches.\n");
  write_file_atomic(dir + "/report.md", md.str());
  log << "longmix report: wrote " << dir << "/{memory_vs_length,time_vs_length}.{png,svg}, comparison_table.md, table.tex, report.md\n";
  return rc;
}

}  // namespace longmix
