// What several benches share: nearest-rank percentiles, quiet child processes and the machine's
// load average, so each program's numbers are computed and labelled the same way.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace execmcp::bench {

// A bench's exit status when there is nothing to measure on this machine (no engine, no image):
// ctest reads it as a skip (SKIP_RETURN_CODE 77).
inline constexpr int kSkipped = 77;

// Nearest-rank percentiles of a sample of milliseconds (0 for an empty sample).
struct Percentiles {
  std::size_t n = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
};
Percentiles percentiles(std::vector<double> ms);

// The median (the mean of the two middle values of an even sample; 0 for an empty one).
double median(std::vector<double> v);

// Milliseconds since `t` on the steady clock.
double ms_since(std::chrono::steady_clock::time_point t);

// `bytes` random bytes as lower-case hex.
std::string random_hex(std::size_t bytes);

// Runs `argv` (PATH lookup) with stdout and stderr on /dev/null; its exit status, or -1.
int spawn_quiet(const std::vector<std::string>& argv);

// Everything a shell command prints on stdout (its stderr is dropped); its exit status in
// `status` (-1 when it did not exit).
std::string capture(const std::string& command, int* status = nullptr);

// The first line a shell command prints ("" on failure).
std::string output_of(const std::string& command);

// A fresh directory under the temporary directory (`prefix` and random characters), removed with
// everything in it at the end. Throws std::runtime_error when it cannot be made.
struct TempDir {
  std::filesystem::path root;
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// The 1, 5 and 15 minute load averages: numbers from a busy machine are several times an idle
// one's.
std::string load_average();

// A bench's command line, each option declared once with what it sets, read the same way by every
// bench: `--name VALUE` or a flag; -h/--help prints `usage` and exits 0; an unknown option, a
// missing value, a count that is not a number or is under its least throws std::invalid_argument
// naming the option.
class Args {
 public:
  explicit Args(void (*usage)()) : usage_(usage) {}
  Args& text(const std::string& name, std::string& out);
  Args& count(const std::string& name, int& out, int least = 1);
  // A flag: sets `out` to `value`.
  Args& flag(const std::string& name, bool& out, bool value = true);
  // An option whose value `take` reads (it may throw std::invalid_argument).
  Args& value(const std::string& name, std::function<void(const std::string&)> take);
  void parse(int argc, char** argv) const;

 private:
  void (*usage_)();
  std::map<std::string, std::function<void(const std::string&)>> values_;
  std::map<std::string, std::function<void()>> flags_;
};

// A bench's main: `run`'s exit status, or 1 with "<program>: <what>" on stderr when it throws.
int run_main(const char* program, const std::function<int()>& run);

}  // namespace execmcp::bench
