// The Prometheus text exposition of the server's counters (see metrics.hpp).
#include "mcp/metrics.hpp"

#include <cstdio>
#include <sstream>

#include "common/utf8.hpp"

namespace execmcp::host::mcp {
namespace {

// Tools with their own duration histogram; a resolved tool name is one of a handful anyway.
constexpr std::size_t kMaxTools = 64;

// A label value: valid UTF-8 with backslash, double quote and line feed escaped, as the text
// format requires. Other control characters (CR, ESC, C1) are allowed by the format but reach
// terminals and log pipelines: each becomes U+FFFD.
std::string label_value(const std::string& raw) {
  const std::string value = sanitize_utf8(raw);
  std::string out;
  out.reserve(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c == '\\' || c == '"') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7F) {
      out += kReplacementCharacter;
    } else if (c == 0xC2 && i + 1 < value.size() &&
               static_cast<unsigned char>(value[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(value[i + 1]) <= 0x9F) {
      out += kReplacementCharacter;  // U+0080..U+009F, the C1 controls (0x9B is a CSI)
      ++i;
    } else {
      out += static_cast<char>(c);
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

Metrics::Metrics(std::size_t max_series) : max_series_(max_series) {}

void Metrics::call_started() {
  std::lock_guard lock(mutex_);
  ++in_flight_;
}

void Metrics::call_finished(const std::string& agent, const std::string& principal,
                            const std::string& tool, const std::string& outcome, double seconds) {
  std::lock_guard lock(mutex_);
  --in_flight_;
  auto key = std::make_tuple(agent, principal, tool, outcome);
  if (calls_.size() >= max_series_ && !calls_.contains(key)) {
    key = std::make_tuple(std::string(kOther), std::string(kOther), tool, outcome);
    ++overflow_;
  }
  ++calls_[key];
  const std::string& tool_key =
      durations_.size() >= kMaxTools && !durations_.contains(tool) ? std::string(kOther) : tool;
  Histogram& histogram = durations_[tool_key];
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
  gauges_.push_back(
      {std::move(name), std::move(help), std::move(label), std::move(gauge), "gauge"});
}

void Metrics::add_counter(std::string name, std::string help, std::string label, Gauge count) {
  std::lock_guard lock(mutex_);
  gauges_.push_back(
      {std::move(name), std::move(help), std::move(label), std::move(count), "counter"});
}

std::string Metrics::render() const {
  const AgentFilter all = [](const std::string&) { return true; };
  return render_view(&all);
}

std::string Metrics::render(const AgentFilter& visible) const {
  return render_view(&visible);
}

std::string Metrics::render_public() const {
  return render_view(nullptr);
}

std::string Metrics::render_view(const AgentFilter* visible) const {
  std::ostringstream out;
  std::vector<GaugeEntry> gauges;
  {
    std::lock_guard lock(mutex_);
    std::map<std::pair<std::string, std::string>, std::uint64_t> by_tool;
    for (const auto& [key, count] : calls_) {
      const auto& [agent, principal, tool, outcome] = key;
      by_tool[{tool, outcome}] += count;
    }
    out << "# HELP execmcp_tool_calls_by_tool_total Tool calls answered, by tool and outcome.\n"
           "# TYPE execmcp_tool_calls_by_tool_total counter\n";
    for (const auto& [key, count] : by_tool) {
      out << "execmcp_tool_calls_by_tool_total{tool=\"" << label_value(key.first) << "\",outcome=\""
          << label_value(key.second) << "\"} " << count << "\n";
    }
    if (visible != nullptr) {
      out << "# HELP execmcp_tool_calls_total Tool calls answered, by agent, principal, tool and "
             "outcome.\n# TYPE execmcp_tool_calls_total counter\n";
      for (const auto& [key, count] : calls_) {
        const auto& [agent, principal, tool, outcome] = key;
        if (!(*visible)(agent)) continue;
        out << "execmcp_tool_calls_total{agent=\"" << label_value(agent) << "\",principal=\""
            << label_value(principal) << "\",tool=\"" << label_value(tool) << "\",outcome=\""
            << label_value(outcome) << "\"} " << count << "\n";
      }
    }
    out << "# HELP execmcp_metrics_overflow_total Tool calls counted under agent and principal "
           "\"_other\" because execmcp_tool_calls_total had "
        << max_series_ << " label sets.\n# TYPE execmcp_metrics_overflow_total counter\n"
        << "execmcp_metrics_overflow_total " << overflow_ << "\n";
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
    const bool per_agent = gauge.label == "agent";
    if (per_agent && visible == nullptr) continue;
    out << "# HELP " << gauge.name << " " << gauge.help << "\n# TYPE " << gauge.name << " "
        << gauge.type << "\n";
    for (const auto& [label, value] : gauge.read()) {
      if (per_agent && !(*visible)(label)) continue;
      out << gauge.name << "{" << gauge.label << "=\"" << label_value(label) << "\"} "
          << number(value) << "\n";
    }
  }
  return out.str();
}

}  // namespace execmcp::host::mcp
