#include "harness/sweep.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "git_commit.h"
#include "report/fit.h"

#ifndef LONGMIX_SOURCE_DIR
#define LONGMIX_SOURCE_DIR "."
#endif
#ifndef LONGMIX_BUILD_TYPE
#define LONGMIX_BUILD_TYPE "unknown"
#endif

namespace fs = std::filesystem;
using nlohmann::json;

namespace longmix {

volatile std::sig_atomic_t g_stop_requested = 0;

std::optional<std::size_t> available_memory_bytes() {
  std::ifstream mi("/proc/meminfo");
  std::string line;
  while (std::getline(mi, line)) {  // "MemAvailable:   23456789 kB"
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream ls(line.substr(13));
    std::size_t kb = 0;
    if (ls >> kb && kb > 0) return kb * 1024;
  }
  return std::nullopt;
}

std::vector<std::int64_t> parse_lengths(const std::string& text) {
  auto one = [&](std::string s) -> std::int64_t {
    LONGMIX_REQUIRE(!s.empty(), "--lengths: empty entry in '", text, "'");
    std::int64_t mult = 1;
    const char u = static_cast<char>(std::tolower(static_cast<unsigned char>(s.back())));
    if (u == 'k') mult = 1024;
    else if (u == 'm') mult = 1024 * 1024;
    if (mult != 1) s.pop_back();
    LONGMIX_REQUIRE(!s.empty() && std::all_of(s.begin(), s.end(), ::isdigit),
                    "--lengths: '", s, "' in '", text,
                    "' is not a length (use 4096, 4k, 1M or ranges like 4k..1M)");
    LONGMIX_REQUIRE(s.size() < 12, "--lengths: '", s, "' is too large");
    const std::int64_t v = std::stoll(s) * mult;
    LONGMIX_REQUIRE(v > 0, "--lengths: lengths must be positive, got ", v, " in '", text, "'");
    return v;
  };
  std::vector<std::int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(std::remove_if(item.begin(), item.end(), ::isspace), item.end());
    const auto dots = item.find("..");
    if (dots != std::string::npos) {
      const std::int64_t lo = one(item.substr(0, dots)), hi = one(item.substr(dots + 2));
      LONGMIX_REQUIRE(lo <= hi, "--lengths: range '", item, "' runs backwards");
      for (std::int64_t L = lo; L <= hi; L *= 2) out.push_back(L);
    } else {
      out.push_back(one(item));
    }
  }
  LONGMIX_REQUIRE(!out.empty(), "--lengths: no lengths in '", text, "'");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

std::string now_utc(const char* fmt = "%Y-%m-%dT%H:%M:%SZ") {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, fmt, std::gmtime(&t));
  return buf;
}

std::string run_command(const std::string& cmd) {
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    ::pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string hms(double s) {
  const long t = static_cast<long>(s + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  return buf;
}

Model time_model(const std::string& op) { return op == "hyena" ? Model::kNLogN : Model::kQuadratic; }
Model memory_model(const std::string& op) {
  return op == "attention" ? Model::kQuadratic : Model::kLinear;
}

json row_json(const Row& r) {
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  return json{{"L", r.L},           {"time_ms", opt(r.time_ms)},   {"mem_GB", opt(r.mem_GB)},
              {"work_GB", opt(r.work_GB)}, {"time_min_ms", opt(r.time_min_ms)},
              {"time_max_ms", opt(r.time_max_ms)}, {"reps", r.reps}, {"status", r.status},
              {"impl", r.impl},     {"op", r.op},                  {"scope", r.scope},
              {"backend", r.backend}, {"dtype", r.dtype},          {"B", r.B},
              {"H", r.H},           {"d", r.d},                    {"D", r.D},
              {"filter", r.filter}, {"extrapolated", r.extrapolated},
              {"setup_ms", opt(r.setup_ms)}, {"device_GB", opt(r.device_GB)},
              {"reserved_GB", opt(r.reserved_GB)}, {"note", r.note}};
}

}  // namespace

std::string row_to_json(const Row& r) { return row_json(r).dump(); }

Row row_from_json(const std::string& text) {
  const json j = json::parse(text);
  auto opt = [&](const char* k) -> std::optional<double> {
    return j.contains(k) && !j[k].is_null() ? std::optional<double>(j[k].get<double>()) : std::nullopt;
  };
  Row r;
  r.L = j.at("L").get<std::int64_t>();
  r.time_ms = opt("time_ms");
  r.mem_GB = opt("mem_GB");
  r.work_GB = opt("work_GB");
  r.time_min_ms = opt("time_min_ms");
  r.time_max_ms = opt("time_max_ms");
  r.reps = j.value("reps", 0);
  r.status = j.value("status", std::string("error"));
  r.impl = j.value("impl", std::string());
  r.op = j.value("op", std::string());
  r.scope = j.value("scope", std::string("layer"));
  r.backend = j.value("backend", std::string());
  r.dtype = j.value("dtype", std::string());
  r.B = j.value("B", 1);
  r.H = j.value("H", 0);
  r.d = j.value("d", 0);
  r.D = j.value("D", 0);
  r.filter = j.value("filter", std::string("-"));
  r.extrapolated = j.value("extrapolated", false);
  r.setup_ms = opt("setup_ms");
  r.device_GB = opt("device_GB");
  r.reserved_GB = opt("reserved_GB");
  r.note = j.value("note", std::string());
  return r;
}

namespace {

// One row in a child process (`longmix row ...`): a crash, a device fault or a hang there
// becomes this row's status=error and the next row starts in a fresh process.
Row measure_row_isolated(const SweepOptions& opt, const std::string& backend, const std::string& impl,
                         const Workload& w, std::optional<std::size_t> cap) {
  Row fallback = row_of(backend, impl, w);
  fallback.status = "error";
  std::vector<std::string> args = {"/proc/self/exe", "row", "--backend", backend, "--impl", impl, "--op", w.op,
                                   "--scope", w.scope, "--batch", std::to_string(w.B), "--length", std::to_string(w.L),
                                   "--heads", std::to_string(w.H), "--head-dim", std::to_string(w.d), "--dtype", w.dtype,
                                   "--order", std::to_string(w.order), "--l-max", std::to_string(w.l_max),
                                   "--seed", std::to_string(w.seed), "--warmup", std::to_string(opt.policy.warmup),
                                   "--min-reps", std::to_string(opt.policy.min_reps),
                                   "--min-seconds", std::to_string(opt.policy.min_seconds)};
  if (!w.causal) args.push_back("--non-causal");
  if (w.filter_cached) args.push_back("--cached");
  if (cap) { args.push_back("--cap-bytes"); args.push_back(std::to_string(*cap)); }
  char err_path[] = "/tmp/longmix-row-XXXXXX";
  const int err_fd = ::mkstemp(err_path);
  int out_pipe[2];
  if (err_fd < 0 || ::pipe(out_pipe) != 0) {
    fallback.note = "could not start the row process";
    return fallback;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_pipe[1], 1);
    ::dup2(err_fd, 2);
    ::close(out_pipe[0]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::signal(SIGINT, SIG_IGN);  // the parent decides when to stop; the row finishes
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  std::string out;
  const auto t0 = std::chrono::steady_clock::now();
  bool timed_out = false;
  int st = 0;
  ::fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  for (;;) {
    char buf[4096];
    const ssize_t n = ::read(out_pipe[0], buf, sizeof buf);
    if (n > 0) { out.append(buf, n); continue; }
    const pid_t done = ::waitpid(pid, &st, WNOHANG);
    if (done == pid) {
      ssize_t m;
      while ((m = ::read(out_pipe[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(m));
      break;
    }
    if (opt.row_timeout_s > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > opt.row_timeout_s) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &st, 0);
      timed_out = true;
      break;
    }
    ::usleep(2000);
  }
  ::close(out_pipe[0]);
  std::string err;
  {
    std::ifstream ef(err_path);
    std::stringstream ss;
    ss << ef.rdbuf();
    err = ss.str();
  }
  ::close(err_fd);
  ::unlink(err_path);
  const auto nl = out.rfind('{');
  if (!timed_out && WIFEXITED(st) && WEXITSTATUS(st) == 0 && nl != std::string::npos) {
    try {
      return row_from_json(out.substr(nl));
    } catch (const std::exception& e) {
      fallback.note = std::string("row process printed no valid row: ") + e.what();
      return fallback;
    }
  }
  std::string tail = err.size() > 300 ? err.substr(err.size() - 300) : err;
  for (auto& c : tail) if (c == '\n') c = ' ';
  if (timed_out) fallback.note = "row process killed after --row-timeout " + std::to_string(opt.row_timeout_s) + " s";
  else if (WIFSIGNALED(st)) fallback.note = std::string("row process died of signal ") + std::to_string(WTERMSIG(st)) + " (" + strsignal(WTERMSIG(st)) + ")";
  else fallback.note = "row process exited with status " + std::to_string(WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  if (!tail.empty()) fallback.note += ": " + tail;
  return fallback;
}

class ResultStore {
 public:
  ResultStore(std::string dir, json env) : dir_(std::move(dir)), env_(std::move(env)) {}
  void add(const Row& r) {
    rows_.push_back(r);
    flush_op(r.op);
  }
  void set_checks(json checks) { checks_ = std::move(checks); }
  void flush_op(const std::string& op) {
    std::string text = csv_header();
    for (const auto& r : rows_)
      if (r.op == op) text += csv_line(r);
    write_file_atomic(dir_ + "/" + csv_name_for_op(op), text);
    flush_json();
  }
  void flush_json() {
    json rows = json::array();
    for (const auto& r : rows_) rows.push_back(row_json(r));
    json j{{"environment", env_}, {"checks", checks_}, {"rows", rows}};
    write_file_atomic(dir_ + "/results.json", j.dump(2) + "\n");
  }
  std::vector<Row>& rows() { return rows_; }

 private:
  std::string dir_;
  json env_;
  json checks_ = json::array();
  std::vector<Row> rows_;
};

void check_writable_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  LONGMIX_REQUIRE(!ec && fs::is_directory(dir), "--out: cannot create directory '", dir,
                  "': ", ec ? ec.message() : "not a directory");
  const std::string probe = dir + "/.longmix-write-probe";
  std::ofstream f(probe);
  LONGMIX_REQUIRE(f.good(), "--out: directory '", dir, "' is not writable");
  f.close();
  std::remove(probe.c_str());
}

}  // namespace

std::string environment_json(Backend& be, const SweepOptions& opt) {
  json env;
  env["date"] = now_utc();
  env["longmix_version"] = "0.1.0";
  env["backend"] = be.name();
  for (auto& [k, v] : be.environment()) env[k] = v;
  // The commit the binary was built from: a binary carried to another machine may find there a
  // different checkout at its source path (seen on the GPU machine: a stale copy), so the tree
  // at run time is only recorded beside it when it differs.
  env["git_commit"] = LONGMIX_BUILD_COMMIT;
  env["git_dirty"] = LONGMIX_BUILD_DIRTY;
  env["git_commit_from"] = "build time";
  const std::string src = LONGMIX_SOURCE_DIR;
  const std::string tree = run_command("git -C '" + src + "' rev-parse HEAD 2>/dev/null");
  if (tree.size() == 40 && tree != LONGMIX_BUILD_COMMIT) env["source_tree_commit_at_run_time"] = tree;
  env["compiler"] = std::string(
#if defined(__clang__)
      "clang "
#elif defined(__GNUC__)
      "g++ "
#endif
      __VERSION__);
  env["build_type"] = LONGMIX_BUILD_TYPE;
  env["command_line"] = opt.command_line;
  env["hostname"] = run_command("hostname 2>/dev/null");
  env["protocol"] = {{"warmup", opt.policy.warmup},
                     {"min_reps", opt.policy.min_reps},
                     {"min_seconds", opt.policy.min_seconds},
                     {"timer", be.name() == "cuda" ? "CUDA events around each call"
                                                   : "steady_clock around each call"},
                     {"l2_flushed", false},
                     {"order", opt.interleave && !opt.isolate
                                   ? "the implementations of one op at one length timed in turns "
                                     "(each a turn a round, a turn about as long as the slowest's "
                                     "call, a fresh order each round); each one's memory "
                                     "taken alone"
                                   : "one row after another, each timed back to back"},
                     {"memory", "peak bytes held through the project's allocator during one "
                                "call, inputs and weights included (mem_GB); minus bytes held "
                                "before the call (work_GB)"}};
  if (const auto cap = be.allocator().cap()) env["memory_cap_bytes"] = *cap;
  env["device_total_bytes"] = be.device_total_bytes();
  for (const auto& [k, v] : opt.ceilings) env[k] = v;
  return env.dump();
}

RowChoice choose_next_row(const std::vector<RowCandidate>& candidates, double time_left_s,
                          bool budgeted) {
  RowChoice out;
  // On a budget: the mandatory rows first, then the cheapest; then (and without a budget: only)
  // the shortest length, then curve order.
  std::tuple<int, double, std::int64_t, std::size_t> best{};
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    const RowCandidate& c = candidates[k];
    const bool mandatory = c.measured < 2;
    if (!mandatory && budgeted && c.cost_s > time_left_s) {
      out.defer.push_back(k);
      continue;
    }
    const std::tuple<int, double, std::int64_t, std::size_t> key{
        budgeted && !mandatory ? 1 : 0, budgeted && !mandatory ? c.cost_s : 0.0, c.L, c.curve};
    if (!out.pick || key < best) {
      out.pick = k;
      best = key;
    }
  }
  return out;
}

std::vector<std::size_t> rows_timed_together(const std::vector<RowCandidate>& candidates,
                                             const RowChoice& choice,
                                             const std::vector<std::string>& curve_op,
                                             double time_left_s, bool budgeted) {
  std::vector<std::size_t> out;
  if (!choice.pick) return out;
  const RowCandidate& pick = candidates[*choice.pick];
  out.push_back(*choice.pick);
  double cost = pick.cost_s;
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    const RowCandidate& o = candidates[k];
    if (k == *choice.pick || curve_op[o.curve] != curve_op[pick.curve] || o.L != pick.L) continue;
    if (std::count(choice.defer.begin(), choice.defer.end(), k)) continue;
    if (budgeted && o.measured >= 2 && cost + o.cost_s > time_left_s) continue;
    cost += o.cost_s;
    out.push_back(k);
  }
  return out;
}

int run_sweep(const SweepOptions& opt) {
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // --- validate everything before touching the output folder --------------------------------
  LONGMIX_REQUIRE(!opt.lengths.empty(), "--lengths: no lengths given");
  LONGMIX_REQUIRE(opt.B > 0, "--batch must be positive, got ", opt.B);
  LONGMIX_REQUIRE(opt.H > 0, "--heads must be positive, got ", opt.H);
  LONGMIX_REQUIRE(opt.d > 0, "--head-dim must be positive, got ", opt.d);
  LONGMIX_REQUIRE(opt.scope == "layer" || opt.scope == "core", "--scope must be layer or core, got '",
                  opt.scope, "'");
  for (const auto& op : opt.ops)
    LONGMIX_REQUIRE(op == "flash" || op == "attention" || op == "hyena", "--ops: unknown op '", op,
                    "' (expected flash, attention, hyena)");
  LONGMIX_REQUIRE(opt.dtype == "auto" || opt.dtype == "fp32" || opt.dtype == "fp16" ||
                      opt.dtype == "bf16",
                  "--dtype must be auto, fp32, fp16 or bf16, got '", opt.dtype, "'");
  LONGMIX_REQUIRE(!opt.memory_fraction || (*opt.memory_fraction > 0 && *opt.memory_fraction <= 1),
                  "--memory-fraction must be in (0, 1], got ", opt.memory_fraction.value_or(0));
  LONGMIX_REQUIRE(!opt.time_budget_s || *opt.time_budget_s > 0, "--time-budget must be positive");

  std::unique_ptr<Backend> be;
  std::string why_not_gpu;
  if (opt.backend == "cuda" || opt.backend == "auto") {
    be = make_cuda_backend(&why_not_gpu);
    if (!be && opt.backend == "cuda") {
      std::cerr << "longmix: --backend cuda: no usable GPU: " << why_not_gpu << "\n";
      return 3;
    }
  }
  LONGMIX_REQUIRE(be || opt.backend == "auto" || opt.backend == "cpu",
                  "--backend must be auto, cpu or cuda, got '", opt.backend, "'");
  if (!be) be = make_cpu_backend();
  const std::string dtype = opt.dtype == "auto" ? be->default_dtype() : opt.dtype;
  std::cerr << "longmix: backend " << be->name();
  if (be->name() == "cpu" && opt.backend == "auto") std::cerr << " (no usable GPU: " << why_not_gpu << ")";
  std::cerr << ", dtype " << dtype << "\n";

  check_writable_dir(opt.out);
  std::set<std::string> done_keys;
  std::vector<Row> resumed;
  const std::vector<std::string> all_ops = {"flash", "hyena", "attention"};
  if (opt.resume) {
    for (const auto& op : all_ops) {
      const std::string path = opt.out + "/" + csv_name_for_op(op);
      if (!fs::exists(path)) continue;
      for (auto& r : read_csv(path))
        if (!r.extrapolated) {
          done_keys.insert(r.key());
          resumed.push_back(r);
        }
    }
    if (!opt.quiet) std::cerr << "longmix: --resume: " << resumed.size() << " rows already on disk\n";
  } else {
    // Keep earlier results: move them aside rather than overwrite.
    std::vector<std::string> old;
    for (const auto& name : {"results_flash.csv", "results_hyena.csv", "results_attention.csv",
                             "results.json"})
      if (fs::exists(opt.out + "/" + name)) old.push_back(name);
    if (!old.empty()) {
      const std::string dest = opt.out + "/previous-" + now_utc("%Y%m%dT%H%M%SZ");
      fs::create_directories(dest);
      for (const auto& n : old) fs::rename(opt.out + "/" + n, dest + "/" + n);
      std::cerr << "longmix: earlier results moved to " << dest << "\n";
    }
  }

  // --- memory cap -------------------------------------------------------------------------------
  Allocator& alloc = be->allocator();
  if (opt.memory_limit) alloc.set_cap(*opt.memory_limit);
  else if (opt.memory_fraction)
    alloc.set_cap(static_cast<std::size_t>(*opt.memory_fraction * be->device_total_bytes()));
  else if (be->name() == "cpu") {
    // Without a cap the CPU would swap or be killed; take what the system says is available.
    if (const auto avail = available_memory_bytes()) alloc.set_cap(*avail / 10 * 9);
  }
  if (const auto cap = alloc.cap())
    std::cerr << "longmix: memory cap " << format_bytes(*cap) << " on " << be->name() << "\n";

  const std::int64_t l_max = opt.l_max ? opt.l_max : opt.lengths.back();
  auto workload = [&](const std::string& op, std::int64_t L) {
    Workload w;
    w.op = op;
    w.scope = opt.scope;
    w.B = opt.B;
    w.L = L;
    w.H = opt.H;
    w.d = opt.d;
    w.dtype = dtype;
    w.causal = opt.causal;
    w.filter_cached = opt.filter_cached;
    w.l_max = std::max(l_max, L);
    w.order = opt.order;
    w.seed = opt.seed;
    return w;
  };
  std::vector<std::pair<std::string, std::string>> plan;  // (op, impl)
  for (const auto& op : opt.ops)
    for (const auto& impl : be->impls(op))
      if (opt.impls.empty() || std::count(opt.impls.begin(), opt.impls.end(), impl))
        plan.emplace_back(op, impl);
  LONGMIX_REQUIRE(!plan.empty(), "no implementation on backend ", be->name(),
                  " matches --ops/--impls");

  SweepOptions with_ceilings = opt;
  with_ceilings.ceilings = be->measure_ceilings();
  for (const auto& [k, v] : with_ceilings.ceilings)
    std::cerr << "longmix: measured " << k << " = " << v << "\n";
  ResultStore store(opt.out, json::parse(environment_json(*be, with_ceilings)));
  for (auto& r : resumed) store.rows().push_back(r);

  // --- correctness at a small shape ---------------------------------------------------------------
  int status = 0;
  if (opt.check) {
    json checks = json::array();
    for (const auto& [op, impl] : plan) {
      Workload w = workload(op, op == "hyena" ? 300 : 200);
      w.l_max = 300;
      const auto c = check_impl(*be, impl, w);
      checks.push_back({{"impl", c.impl}, {"op", c.op}, {"scope", c.scope}, {"dtype", c.dtype},
                        {"shape", c.shape}, {"rel_l2", c.rel_l2}, {"tolerance", c.tolerance},
                        {"max_abs", c.max_abs}, {"nonfinite", c.nonfinite},
                        {"passed", c.passed}, {"skipped", c.skipped}, {"message", c.message}});
      if (!opt.quiet || (!c.passed && !c.skipped)) {
        std::cerr << "check " << impl << " (" << c.shape << "): ";
        if (c.skipped) std::cerr << "skipped: " << c.message << "\n";
        else std::cerr << (c.passed ? "pass" : "FAIL") << " rel_l2=" << c.rel_l2
                       << " (tolerance " << c.tolerance << ")" << (c.passed ? "" : " " + c.message) << "\n";
      }
      if (!c.passed && !c.skipped) status = 4;
    }
    store.set_checks(checks);
  }
  store.flush_json();

  // --- rows ---------------------------------------------------------------------------------------
  if (opt.isolate) be->release_cached();  // the row processes get the device's memory
  // seconds for the whole sweep; none on the GPU unless --time-budget gives one
  const std::optional<double> budget = opt.time_budget_s ? opt.time_budget_s
                                       : be->name() == "cpu" ? std::optional<double>(kCpuDefaultBudgetS)
                                                             : std::nullopt;
  auto time_left = [&] { return budget ? *budget - elapsed() : 0.0; };
  std::map<std::string, std::vector<std::pair<double, double>>> measured_time;  // impl -> (L, s)
  for (const auto& r : store.rows())
    if (r.status == "ok" && r.time_ms) measured_time[r.impl].push_back({double(r.L), *r.time_ms / 1e3});
  std::set<std::string> deferred;  // implementations whose remaining lengths are extrapolated
  const std::size_t total = opt.lengths.size() * plan.size();
  std::size_t done = 0;
  // The predicted cost (s) of measuring impl at L: warm-up and repeats at the time the fit of
  // its measured rows predicts; 0 while nothing predicts it.
  auto predict_cost = [&](const std::string& op, const std::string& impl, std::int64_t L) {
    const auto& pts = measured_time[impl];
    if (pts.empty()) return 0.0;
    std::vector<double> Ls, ts;
    for (auto& [l, t] : pts) { Ls.push_back(l); ts.push_back(t); }
    const auto f = fit_model(time_model(op), Ls, ts);
    const double t = std::max(1e-6, f->predict(L));
    const double reps = std::max<double>(opt.policy.min_reps, std::ceil(opt.policy.min_seconds / t));
    return t * (opt.policy.warmup + reps);
  };
  const bool budgeted = opt.extrapolate && budget.has_value();
  std::vector<std::size_t> next(plan.size(), 0);  // each curve's next index into opt.lengths
  std::vector<std::string> curve_op;                // each curve's op
  for (const auto& pc : plan) curve_op.push_back(pc.first);
  while (!g_stop_requested) {
    std::vector<RowCandidate> cands;
    for (std::size_t c = 0; c < plan.size(); ++c) {
      const auto& [op, impl] = plan[c];
      // a deferred curve's next[c] is at the end; rows already on disk (--resume) count as done
      while (next[c] < opt.lengths.size() &&
             done_keys.count(row_of(be->name(), impl, workload(op, opt.lengths[next[c]])).key())) {
        ++next[c];
        ++done;
      }
      if (next[c] == opt.lengths.size()) continue;
      const std::int64_t L = opt.lengths[next[c]];
      cands.push_back({c, L, measured_time[impl].size(), predict_cost(op, impl, L)});
    }
    const RowChoice choice = choose_next_row(cands, time_left(), budgeted);
    for (std::size_t k : choice.defer) {
      const std::size_t c = cands[k].curve;
      const auto& [op, impl] = plan[c];
      deferred.insert(impl);
      for (; next[c] < opt.lengths.size(); ++next[c]) {
        ++done;
        if (!opt.quiet)
          std::cerr << "[" << done << "/" << total << "] " << impl << " L=" << opt.lengths[next[c]]
                    << ": not measured (predicted " << hms(predict_cost(op, impl, opt.lengths[next[c]]))
                    << " > time left " << hms(std::max(0.0, time_left()))
                    << "), will be extrapolated\n";
      }
    }
    if (!choice.pick) break;
    const std::size_t c = cands[*choice.pick].curve;
    const std::string op = plan[c].first;
    const std::int64_t L = opt.lengths[next[c]];
    const Workload w = workload(op, L);
    std::vector<std::size_t> group;  // the curves measured now
    if (opt.interleave && !opt.isolate)
      for (std::size_t k : rows_timed_together(cands, choice, curve_op, time_left(), budgeted))
        group.push_back(cands[k].curve);
    else
      group.push_back(c);
    std::vector<std::string> impls;
    for (std::size_t g : group) impls.push_back(plan[g].second);
    // measure_rows of one implementation is measure_row
    const std::vector<Row> rows = opt.isolate
                                      ? std::vector<Row>{measure_row_isolated(opt, be->name(), impls[0], w, alloc.cap())}
                                      : measure_rows(*be, impls, w, opt.policy);
    for (std::size_t g = 0; g < group.size(); ++g) {
      const std::string& impl = plan[group[g]].second;
      ++next[group[g]];
      ++done;
      const Row& r = rows[g];
      if (r.status == "ok") measured_time[impl].push_back({double(L), *r.time_ms / 1e3});
      store.add(r);
      if (!opt.quiet) {
        char buf[512];
        if (r.status == "ok")
          std::snprintf(buf, sizeof buf, "%.4g ms (min %.4g, max %.4g, %d reps), peak %.4f GiB, work %.4f GiB",
                        *r.time_ms, *r.time_min_ms, *r.time_max_ms, r.reps, *r.mem_GB, *r.work_GB);
        else
          std::snprintf(buf, sizeof buf, "%s: %s", r.status.c_str(), r.note.c_str());
        const double el = elapsed();
        const double eta = done ? el / done * (total - done) : 0;
        const int width = 24, fill = static_cast<int>(width * done / std::max<std::size_t>(1, total));
        std::cerr << "[" << done << "/" << total << "] " << impl << " L=" << L << ": " << buf << "\n"
                  << "  [" << std::string(fill, '#') << std::string(width - fill, '.') << "] "
                  << 100 * done / std::max<std::size_t>(1, total) << "%  elapsed " << hms(el)
                  << "  ETA " << hms(eta) << "\n";
      }
    }
  }
  if (g_stop_requested) {
    std::cerr << "longmix: stopped by signal; every finished row is on disk in " << opt.out
              << " (continue with --resume)\n";
    for (const auto& op : opt.ops) store.flush_op(op);
    return 130;
  }

  // --- extrapolation of deferred rows -------------------------------------------------------------
  if (opt.extrapolate && !deferred.empty()) {
    const auto cap = alloc.cap();
    for (const auto& [op, impl] : plan) {
      if (!deferred.count(impl)) continue;
      std::vector<double> Lt, t, Lm, m;
      for (const auto& r : store.rows())
        if (r.impl == impl && r.status == "ok" && !r.extrapolated && r.time_ms) {
          Lt.push_back(r.L); t.push_back(*r.time_ms);
          Lm.push_back(r.L); m.push_back(*r.mem_GB);
        }
      const auto ft = fit_model(time_model(op), Lt, t);
      const auto fm = fit_model(memory_model(op), Lm, m);
      for (std::int64_t L : opt.lengths) {
        const bool have = std::any_of(store.rows().begin(), store.rows().end(), [&](const Row& r) {
          return r.impl == impl && r.L == L;
        });
        if (have) continue;
        const Workload w = workload(op, L);
        Row r = row_of(be->name(), impl, w);
        r.extrapolated = true;
        if (!ft || !fm) {
          r.status = "skipped";
          r.note = "not measured and no measured row to extrapolate from";
        } else {
          std::ostringstream note;
          note << "extrapolated: time " << model_name(ft->model) << " and memory "
               << model_name(fm->model) << " fitted on " << ft->points << " measured lengths";
          const double mem = fm->predict(L);
          r.time_ms = ft->predict(L);
          if (cap && mem * 1024.0 * 1024 * 1024 > *cap) {
            r.status = "OOM";
            note << "; predicted time " << *r.time_ms << " ms";
            r.time_ms.reset();
            note << "; predicted peak " << mem << " GiB exceeds the cap " << format_bytes(*cap);
          } else {
            r.status = "ok";
            r.mem_GB = mem;
          }
          r.note = note.str();
        }
        store.add(r);
      }
    }
  }
  for (const auto& op : opt.ops) store.flush_op(op);
  if (!opt.quiet) std::cerr << "longmix: sweep finished in " << hms(elapsed()) << "; results in " << opt.out << "\n";
  return status;
}

}  // namespace longmix
