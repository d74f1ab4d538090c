// Result rows and their files: the CSVs of SPEC §5 (first columns L,time_ms,mem_GB) and
// results.json. Writers flush each row; readers treat the files as untrusted input and name
// the file and line of anything malformed.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace longmix {

struct Row {
  std::int64_t L = 0;
  std::optional<double> time_ms;  // median; empty when not measured (OOM, error, skipped)
  std::optional<double> mem_GB;   // peak GiB during one call; empty -> "OOM" / not known
  std::optional<double> work_GB;  // peak minus what was held before the call
  std::optional<double> time_min_ms, time_max_ms;
  int reps = 0;
  std::string status = "ok";  // ok | OOM | error | skipped
  std::string impl, scope = "layer", backend, dtype;
  std::int64_t B = 1, H = 0, d = 0, D = 0;
  std::string filter = "-";     // recompute | cached | - (attention)
  bool extrapolated = false;
  std::string op;               // flash | attention | hyena
  std::optional<double> setup_ms;
  std::optional<double> device_GB;  // device-level use seen by the driver (cudaMemGetInfo), GPU only
  std::optional<double> reserved_GB;  // bytes the caching allocator took from the device
  std::string note;

  // Rows measuring the same thing (used by --resume and the report).
  std::string key() const;
  // The curve a row belongs to: impl, scope, dtype, B, H, d, filter.
  std::string curve() const;
};

extern const std::vector<std::string> kCsvColumns;

std::string csv_header();
std::string csv_line(const Row& r);
// Reads a results CSV. Throws std::runtime_error "FILE:LINE: what" on malformed input.
std::vector<Row> read_csv(const std::string& path);
// Parses CSV text (path is only used in messages).
std::vector<Row> parse_csv(const std::string& text, const std::string& path);

// Writes text to path through a temporary name and a rename: never half-written.
void write_file_atomic(const std::string& path, const std::string& text);
std::string read_file(const std::string& path);

// "results_flash.csv" etc. for an op name.
std::string csv_name_for_op(const std::string& op);

}  // namespace longmix
