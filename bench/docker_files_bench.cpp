// See docker_files_bench.hpp. The files to read are written once through the backend itself (so
// they belong to the container's user); each write row writes its own file over and over.
#include "docker_files_bench.hpp"

#include <chrono>
#include <cstdio>
#include <functional>
#include <stdexcept>

#include "bench_util.hpp"

namespace execmcp::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct FileRow {
  std::string name;
  std::function<void(sdk::ExecutorBackend&, const std::string& key)> call;
};

std::string bytes_of(std::size_t n) {
  std::string data(n, '\0');
  for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<char>((i * 131) & 0xff);
  return data;
}

void read_one(sdk::ExecutorBackend& b, const std::string& path, std::size_t size) {
  const auto r = b.read_file({path});
  if (!r.error.empty()) throw std::runtime_error("read_file " + path + ": " + r.error);
  if (r.data.size() != size)
    throw std::runtime_error("read_file " + path + ": " + std::to_string(r.data.size()) +
                             " bytes, not " + std::to_string(size));
}

void write_one(sdk::ExecutorBackend& b, const std::string& path, const std::string& data) {
  const auto w = b.write_file({path, data});
  if (!w.error.empty()) throw std::runtime_error("write_file " + path + ": " + w.error);
}

}  // namespace

void measure_file_tools(const std::vector<FileBenchBackend>& backends, const std::string& workspace,
                        int calls, int rounds) {
  static const std::string kSmall = bytes_of(1024);
  static const std::string kLarge = bytes_of(1024 * 1024);
  const std::vector<FileRow> rows = {
      {"execute(\"true\")",
       [](sdk::ExecutorBackend& b, const std::string&) {
         sdk::ExecRequest req;
         req.command = "true";
         req.timeout = std::chrono::seconds(60);
         const auto r = b.execute(req);
         if (!r.error.empty() || r.exit_code != 0)
           throw std::runtime_error("execute: " + r.error + " exit " + std::to_string(r.exit_code));
       }},
      {"read_file 1 KiB",
       [](sdk::ExecutorBackend& b, const std::string& key) {
         read_one(b, "bench-files-" + key + "-1k.bin", kSmall.size());
       }},
      {"read_file 1 MiB",
       [](sdk::ExecutorBackend& b, const std::string& key) {
         read_one(b, "bench-files-" + key + "-1m.bin", kLarge.size());
       }},
      {"write_file 1 KiB",
       [](sdk::ExecutorBackend& b, const std::string& key) {
         write_one(b, "bench-files-" + key + "-w1k.bin", kSmall);
       }},
      {"write_file 1 MiB",
       [](sdk::ExecutorBackend& b, const std::string& key) {
         write_one(b, "bench-files-" + key + "-w1m.bin", kLarge);
       }},
  };
  for (const auto& b : backends) {
    write_one(*b.backend, "bench-files-" + b.key + "-1k.bin", kSmall);
    write_one(*b.backend, "bench-files-" + b.key + "-1m.bin", kLarge);
    for (const auto& row : rows) row.call(*b.backend, b.key);  // warm-up
  }
  // [backend][row] latencies; the rows and backends alternate in rounds, as the command rows do.
  std::vector<std::vector<std::vector<double>>> ms(backends.size(),
                                                   std::vector<std::vector<double>>(rows.size()));
  for (int round = 0; round < rounds; ++round) {
    const int n = calls / rounds + (round < calls % rounds ? 1 : 0);
    std::fprintf(stderr, "  file tools, round %d of %d\n", round + 1, rounds);
    for (std::size_t k = 0; k < backends.size() * rows.size(); ++k) {
      const std::size_t at =
          (k + static_cast<std::size_t>(round)) % (backends.size() * rows.size());
      const auto& b = backends[at / rows.size()];
      const auto& row = rows[at % rows.size()];
      auto& sample = ms[at / rows.size()][at % rows.size()];
      for (int i = 0; i < n; ++i) {
        const auto start = Clock::now();
        row.call(*b.backend, b.key);
        sample.push_back(ms_since(start));
      }
    }
  }
  std::printf("\nFile tools in %s, 1 in flight:\n\n", workspace.c_str());
  std::printf(
      "| backend | call | calls | p50 ms | p90 ms | p50 / execute(\"true\") p50 |\n"
      "|---|---|---|---|---|---|\n");
  for (std::size_t b = 0; b < backends.size(); ++b) {
    const double base = percentiles(ms[b][0]).p50;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const Percentiles p = percentiles(ms[b][r]);
      std::printf("| %s | %s | %zu | %.2f | %.2f | %.2fx |\n", backends[b].label.c_str(),
                  rows[r].name.c_str(), p.n, p.p50, p.p90, base > 0 ? p.p50 / base : 0.0);
    }
  }
}

}  // namespace execmcp::bench
