// The Prometheus text exposition of the server's counters (see metrics.hpp).
#include "mcp/metrics.hpp"

#include <cstdio>
#include <sstream>

namespace execmcp::host::mcp {
namespace {

// A label value: backslash, double quote and newline escaped, as the text format requires.
std::string label_value(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string number(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

}  // namespace

void Metrics::call_started() {
  std::lock_guard lock(mutex_);
  ++in_flight_;
}

void Metrics::call_finished(const std::string& agent, const std::string& principal,
                            const std::string& tool, const std::string& outcome, double seconds) {
  std::lock_guard lock(mutex_);
  --in_flight_;
  ++calls_[{agent, principal, tool, outcome}];
  Histogram& histogram = durations_[tool];
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++histogram.buckets[i];
  }
  ++histogram.count;
  histogram.sum += seconds;
}

void Metrics::http_request(int status) {
  std::lock_guard lock(mutex_);
  ++http_[status];
}

void Metrics::add_gauge(std::string name, std::string help, std::string label, Gauge gauge) {
  std::lock_guard lock(mutex_);
  gauges_.push_back({std::move(name), std::move(help), std::move(label), std::move(gauge)});
}

std::string Metrics::render() const {
  std::ostringstream out;
  std::vector<GaugeEntry> gauges;
  {
    std::lock_guard lock(mutex_);
    out << "# HELP execmcp_tool_calls_total Tool calls answered, by agent, principal, tool and "
           "outcome.\n# TYPE execmcp_tool_calls_total counter\n";
    for (const auto& [key, count] : calls_) {
      const auto& [agent, principal, tool, outcome] = key;
      out << "execmcp_tool_calls_total{agent=\"" << label_value(agent) << "\",principal=\""
          << label_value(principal) << "\",tool=\"" << label_value(tool) << "\",outcome=\""
          << label_value(outcome) << "\"} " << count << "\n";
    }
    out << "# HELP execmcp_tool_call_duration_seconds How long tool calls took, by tool.\n"
           "# TYPE execmcp_tool_call_duration_seconds histogram\n";
    for (const auto& [tool, histogram] : durations_) {
      const std::string label = "tool=\"" + label_value(tool) + "\"";
      for (std::size_t i = 0; i < kBuckets.size(); ++i) {
        char le[32];
        std::snprintf(le, sizeof le, "%g", kBuckets[i]);
        out << "execmcp_tool_call_duration_seconds_bucket{" << label << ",le=\"" << le << "\"} "
            << histogram.buckets[i] << "\n";
      }
      out << "execmcp_tool_call_duration_seconds_bucket{" << label << ",le=\"+Inf\"} "
          << histogram.count << "\n";
      out << "execmcp_tool_call_duration_seconds_sum{" << label << "} " << number(histogram.sum)
          << "\n";
      out << "execmcp_tool_call_duration_seconds_count{" << label << "} " << histogram.count
          << "\n";
    }
    out << "# HELP execmcp_tool_calls_in_flight Tool calls running or waiting.\n"
           "# TYPE execmcp_tool_calls_in_flight gauge\n"
        << "execmcp_tool_calls_in_flight " << in_flight_ << "\n";
    out << "# HELP execmcp_http_responses_total HTTP responses, by status.\n"
           "# TYPE execmcp_http_responses_total counter\n";
    for (const auto& [status, count] : http_) {
      out << "execmcp_http_responses_total{status=\"" << status << "\"} " << count << "\n";
    }
    gauges = gauges_;
  }
  // Read outside the lock: a gauge may take its own locks.
  for (const auto& gauge : gauges) {
    out << "# HELP " << gauge.name << " " << gauge.help << "\n# TYPE " << gauge.name << " gauge\n";
    for (const auto& [label, value] : gauge.read()) {
      out << gauge.name << "{" << gauge.label << "=\"" << label_value(label) << "\"} "
          << number(value) << "\n";
    }
  }
  return out.str();
}

}  // namespace execmcp::host::mcp
