#include "report/records.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace longmix {

const std::vector<std::string> kCsvColumns = {
    "L",      "time_ms", "mem_GB", "work_GB", "time_min_ms", "time_max_ms", "reps",
    "status", "impl",    "scope",  "backend", "dtype",       "B",           "H",
    "d",      "D",       "filter", "extrapolated", "op",     "setup_ms",    "device_GB",
    "reserved_GB", "note"};

std::string Row::key() const {
  std::ostringstream os;
  os << curve() << '|' << L;
  return os.str();
}
std::string Row::curve() const {
  std::ostringstream os;
  os << impl << '|' << scope << '|' << dtype << '|' << B << '|' << H << '|' << d << '|' << filter;
  return os.str();
}

std::string csv_header() {
  std::string s;
  for (std::size_t i = 0; i < kCsvColumns.size(); ++i) s += (i ? "," : "") + kCsvColumns[i];
  return s + "\n";
}

namespace {
std::string num(const std::optional<double>& v) {
  if (!v) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", *v);
  return buf;
}
std::string quote(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += "\"\"";
    else if (c == '\n' || c == '\r') q += ' ';
    else q += c;
  }
  return q + "\"";
}

[[noreturn]] void fail(const std::string& path, std::size_t line, const std::string& what) {
  throw std::runtime_error(path + ":" + std::to_string(line) + ": " + what);
}

std::vector<std::string> split_csv_line(const std::string& line, const std::string& path,
                                        std::size_t lineno) {
  std::vector<std::string> out;
  std::string cur;
  bool inq = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (inq) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          cur += '"';
          ++i;
        } else {
          inq = false;
        }
      } else {
        cur += c;
      }
    } else if (c == '"') {
      if (!cur.empty()) fail(path, lineno, "quote inside an unquoted field");
      inq = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (inq) fail(path, lineno, "unterminated quoted field");
  out.push_back(cur);
  return out;
}

std::optional<double> parse_num(const std::string& s, const std::string& col,
                                const std::string& path, std::size_t lineno) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v))
    fail(path, lineno, "column " + col + ": not a finite number: '" + s + "'");
  return v;
}
std::int64_t parse_int(const std::string& s, const std::string& col, const std::string& path,
                       std::size_t lineno) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE)
    fail(path, lineno, "column " + col + ": not an integer: '" + s + "'");
  return v;
}
}  // namespace

std::string csv_line(const Row& r) {
  std::ostringstream os;
  os << r.L << ',' << num(r.time_ms) << ',';
  if (r.mem_GB) os << num(r.mem_GB);
  else if (r.status == "OOM") os << "OOM";
  os << ',' << num(r.work_GB) << ',' << num(r.time_min_ms) << ',' << num(r.time_max_ms) << ','
     << r.reps << ',' << r.status << ',' << quote(r.impl) << ',' << r.scope << ',' << r.backend
     << ',' << r.dtype << ',' << r.B << ',' << r.H << ',' << r.d << ',' << r.D << ',' << r.filter
     << ',' << (r.extrapolated ? 1 : 0) << ',' << r.op << ',' << num(r.setup_ms) << ','
     << num(r.device_GB) << ',' << num(r.reserved_GB) << ',' << quote(r.note) << '\n';
  return os.str();
}

std::vector<Row> parse_csv(const std::string& text, const std::string& path) {
  std::vector<Row> rows;
  std::istringstream in(text);
  std::string line;
  std::size_t lineno = 0;
  std::map<std::string, std::size_t> col;
  std::size_t ncols = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (lineno == 1) {
      const auto names = split_csv_line(line, path, lineno);
      ncols = names.size();
      for (std::size_t i = 0; i < names.size(); ++i)
        if (!col.emplace(names[i], i).second) fail(path, lineno, "column '" + names[i] + "' appears twice in the header");
      if (names.size() < 3 || names[0] != "L" || names[1] != "time_ms" || names[2] != "mem_GB")
        fail(path, lineno, "header must begin with L,time_ms,mem_GB");
      continue;
    }
    if (line.empty()) continue;
    const auto f = split_csv_line(line, path, lineno);
    if (f.size() != ncols)
      fail(path, lineno, "expected " + std::to_string(ncols) + " fields, found " +
                             std::to_string(f.size()));
    auto get = [&](const char* name) -> std::string {
      auto it = col.find(name);
      return it == col.end() ? std::string() : f[it->second];
    };
    Row r;
    r.L = parse_int(get("L"), "L", path, lineno);
    if (r.L <= 0) fail(path, lineno, "column L: must be positive, got " + get("L"));
    r.time_ms = parse_num(get("time_ms"), "time_ms", path, lineno);
    const std::string mem = get("mem_GB");
    r.status = get("status").empty() ? (mem == "OOM" ? "OOM" : "ok") : get("status");
    if (mem != "OOM") r.mem_GB = parse_num(mem, "mem_GB", path, lineno);
    else r.status = "OOM";
    r.work_GB = parse_num(get("work_GB"), "work_GB", path, lineno);
    r.time_min_ms = parse_num(get("time_min_ms"), "time_min_ms", path, lineno);
    r.time_max_ms = parse_num(get("time_max_ms"), "time_max_ms", path, lineno);
    if (!get("reps").empty()) r.reps = static_cast<int>(parse_int(get("reps"), "reps", path, lineno));
    r.impl = get("impl");
    r.scope = get("scope").empty() ? "layer" : get("scope");
    r.backend = get("backend");
    r.dtype = get("dtype");
    if (!get("B").empty()) r.B = parse_int(get("B"), "B", path, lineno);
    if (!get("H").empty()) r.H = parse_int(get("H"), "H", path, lineno);
    if (!get("d").empty()) r.d = parse_int(get("d"), "d", path, lineno);
    if (!get("D").empty()) r.D = parse_int(get("D"), "D", path, lineno);
    r.filter = get("filter").empty() ? "-" : get("filter");
    const std::string ex = get("extrapolated");
    if (!ex.empty() && ex != "0" && ex != "1")
      fail(path, lineno, "column extrapolated: expected 0 or 1, got '" + ex + "'");
    r.extrapolated = ex == "1";
    r.op = get("op");
    r.setup_ms = parse_num(get("setup_ms"), "setup_ms", path, lineno);
    r.device_GB = parse_num(get("device_GB"), "device_GB", path, lineno);
    r.reserved_GB = parse_num(get("reserved_GB"), "reserved_GB", path, lineno);
    r.note = get("note");
    if (r.status != "ok" && r.status != "OOM" && r.status != "error" && r.status != "skipped")
      fail(path, lineno, "column status: unknown value '" + r.status + "'");
    if (r.status == "ok" && !r.extrapolated && (!r.time_ms || !r.mem_GB))
      fail(path, lineno, "a measured ok row needs time_ms and mem_GB");
    rows.push_back(std::move(r));
  }
  if (lineno == 0) fail(path, 1, "empty file (no header)");
  return rows;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

std::vector<Row> read_csv(const std::string& path) { return parse_csv(read_file(path), path); }

void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error(tmp + ": cannot write: " + std::strerror(errno));
    f << text;
    f.flush();
    if (!f) throw std::runtime_error(tmp + ": write failed: " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": rename failed: " + std::strerror(errno));
  }
}

std::string csv_name_for_op(const std::string& op) { return "results_" + op + ".csv"; }

}  // namespace longmix
