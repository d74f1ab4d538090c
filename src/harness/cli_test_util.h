// Test helper: runs the longmix binary (LONGMIX_BIN, set by CMake) and returns its exit
// status and combined output. Shared by the CLI tests.
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace longmix::cli_test {

struct CliRun {
  int code;
  std::string out;
};

// `env` is prepended as shell assignments, e.g. "LONGMIX_INJECT_FAULT=flash-cpu:128".
inline CliRun run_longmix(const std::string& args, const std::string& env = "") {
  const std::string cmd = env + (env.empty() ? "" : " ") + std::string(LONGMIX_BIN) + " " + args + " 2>&1";
  CliRun r{0, ""};
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) r.out += buf;
  const int st = ::pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

}  // namespace longmix::cli_test
