// Counters for GET /metrics in the Prometheus text format: calls by agent, principal, tool and
// outcome, a duration histogram, calls in flight, and gauges the server adds (containers owned).
// Bounded whatever clients send: a call is labelled by the tool it resolved to, the label sets are
// capped, and label values are escaped (and stripped of control characters).
#pragma once

#include <array>
#include <cstddef>
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
  // Label sets of execmcp_tool_calls_total kept; past it calls count in agent="_other",
  // principal="_other" (and in execmcp_metrics_overflow_total).
  static constexpr std::size_t kDefaultMaxSeries = 1000;
  static constexpr const char* kOther = "_other";

  explicit Metrics(std::size_t max_series = kDefaultMaxSeries);

  void call_started();
  // tool: the tool the call resolved to ("unknown" when none), never the client's raw name.
  // outcome: "ok", "error" (the tool reported an error), "rpc_error", "cancelled", "busy".
  void call_finished(const std::string& agent, const std::string& principal,
                     const std::string& tool, const std::string& outcome, double seconds);
  void http_request(int status);

  // A gauge read when /metrics is served (e.g. containers owned per agent). It must not wait on
  // a backend: it is read on an HTTP I/O thread. A gauge whose label is "agent" is per agent and
  // shown only with credentials for that agent (see render()).
  using Gauge = std::function<std::vector<std::pair<std::string, double>>()>;
  void add_gauge(std::string name, std::string help, std::string label, Gauge gauge);
  // The same for a count that only grows while the server runs (TYPE counter; the name should end
  // in _total).
  void add_counter(std::string name, std::string help, std::string label, Gauge count);

  // Which agents' series a reader may see.
  using AgentFilter = std::function<bool(const std::string& agent)>;
  // Everything (no filter).
  [[nodiscard]] std::string render() const;
  // The agents `visible` accepts, with their principals, and everything render_public() shows.
  [[nodiscard]] std::string render(const AgentFilter& visible) const;
  // For a reader without credentials: a fixed vocabulary only (calls by tool and outcome, the
  // duration histogram, calls in flight, HTTP responses by status, gauges not labelled by agent):
  // no agent id, no principal.
  [[nodiscard]] std::string render_public() const;

 private:
  struct Histogram {
    std::array<std::uint64_t, kBuckets.size()> buckets{};
    std::uint64_t count = 0;
    double sum = 0;
  };
  struct GaugeEntry {
    std::string name, help, label;
    Gauge read;
    const char* type = "gauge";  // or "counter"
  };

  [[nodiscard]] std::string render_view(const AgentFilter* visible) const;

  const std::size_t max_series_;
  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::uint64_t> calls_;
  std::uint64_t overflow_ = 0;                  // calls counted in the _other label set
  std::map<std::string, Histogram> durations_;  // by tool
  std::map<int, std::uint64_t> http_;           // by status
  std::int64_t in_flight_ = 0;
  std::vector<GaugeEntry> gauges_;
};

}  // namespace execmcp::host::mcp
