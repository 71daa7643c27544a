// Counters for GET /metrics in the Prometheus text format: calls by agent, principal, tool and
// outcome, a duration histogram, calls in flight, and gauges the server adds (containers owned).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace execmcp::host::mcp {

class Metrics {
 public:
  // Upper bounds of the duration histogram's buckets, in seconds (+Inf is implied).
  static constexpr std::array<double, 11> kBuckets{0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                   0.5,   1.0,  2.5,   10,   60};

  void call_started();
  // outcome: "ok", "error" (the tool reported an error), "rpc_error", "cancelled", "busy".
  void call_finished(const std::string& agent, const std::string& principal,
                     const std::string& tool, const std::string& outcome, double seconds);
  void http_request(int status);

  // A gauge read when /metrics is served (e.g. containers owned per agent).
  using Gauge = std::function<std::vector<std::pair<std::string, double>>()>;
  void add_gauge(std::string name, std::string help, std::string label, Gauge gauge);

  [[nodiscard]] std::string render() const;

 private:
  struct Histogram {
    std::array<std::uint64_t, kBuckets.size()> buckets{};
    std::uint64_t count = 0;
    double sum = 0;
  };
  struct GaugeEntry {
    std::string name, help, label;
    Gauge read;
  };

  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::uint64_t> calls_;
  std::map<std::string, Histogram> durations_;  // by tool
  std::map<int, std::uint64_t> http_;           // by status
  std::int64_t in_flight_ = 0;
  std::vector<GaugeEntry> gauges_;
};

}  // namespace execmcp::host::mcp
