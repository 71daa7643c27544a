// Tests of Metrics: what a reader without credentials sees, the cap on label sets, and label
// values a Prometheus parser (and a terminal) can take whatever bytes they came from.
#include "mcp/metrics.hpp"

#include <gtest/gtest.h>

namespace execmcp::host::mcp {
namespace {

TEST(Metrics, LabelSetsAreCappedAndTheRestCountsAsOther) {
  Metrics metrics(10);
  for (int i = 0; i < 2000; ++i) {
    metrics.call_started();
    metrics.call_finished("agent_a", "jwt:user" + std::to_string(i), "execute_command", "ok", 0.1);
  }
  const std::string text = metrics.render();
  EXPECT_LT(text.size(), 8000u) << text;
  EXPECT_NE(text.find("execmcp_tool_calls_total{agent=\"_other\",principal=\"_other\","
                      "tool=\"execute_command\",outcome=\"ok\"} 1990"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("execmcp_metrics_overflow_total 1990"), std::string::npos) << text;
  EXPECT_NE(text.find("execmcp_tool_calls_by_tool_total{tool=\"execute_command\",outcome=\"ok\"} "
                      "2000"),
            std::string::npos)
      << text;
}

TEST(Metrics, LabelValuesAreEscapedAndControlCharactersReplaced) {
  Metrics metrics;
  metrics.call_started();
  metrics.call_finished("a\"b\\c\nd", "e\rf\x1b[31mg\x7f\xc2\x9bh\xff", "t", "ok", 0.1);
  const std::string text = metrics.render();
  EXPECT_NE(text.find("agent=\"a\\\"b\\\\c\\nd\""), std::string::npos) << text;
  EXPECT_NE(text.find("principal=\"e\xEF\xBF\xBD"
                      "f\xEF\xBF\xBD[31mg\xEF\xBF\xBD\xEF\xBF\xBDh\xEF\xBF\xBD\""),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find_first_of("\r\x1b\x7f"), std::string::npos);
}

TEST(Metrics, APublicReaderSeesNoAgentAndNoPrincipal) {
  Metrics metrics;
  metrics.call_started();
  metrics.call_finished("agent_secret", "tenant-name", "read_file", "error", 0.2);
  metrics.http_request(200);
  metrics.add_gauge("execmcp_agent_started", "1 when started.", "agent", [] {
    return std::vector<std::pair<std::string, double>>{{"agent_secret", 1}};
  });
  metrics.add_gauge("execmcp_agents", "Agents by state.", "state", [] {
    return std::vector<std::pair<std::string, double>>{{"started", 1}};
  });
  const std::string text = metrics.render_public();
  EXPECT_EQ(text.find("agent_secret"), std::string::npos) << text;
  EXPECT_EQ(text.find("tenant-name"), std::string::npos) << text;
  EXPECT_NE(text.find("execmcp_tool_calls_by_tool_total{tool=\"read_file\",outcome=\"error\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("execmcp_agents{state=\"started\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("execmcp_http_responses_total{status=\"200\"} 1"), std::string::npos);

  const std::string other = metrics.render([](const std::string& agent) { return agent == "x"; });
  EXPECT_EQ(other.find("agent_secret"), std::string::npos) << other;
  const std::string mine =
      metrics.render([](const std::string& agent) { return agent == "agent_secret"; });
  EXPECT_NE(mine.find("execmcp_agent_started{agent=\"agent_secret\"} 1"), std::string::npos);
  EXPECT_NE(mine.find("principal=\"tenant-name\""), std::string::npos) << mine;
}

// A count that only grows is typed a counter, and like a gauge labelled by agent it is shown only
// to those who may see that agent.
TEST(Metrics, ACounterIsTypedAsOneAndHiddenByAgentLikeAGauge) {
  Metrics metrics;
  metrics.add_counter("execmcp_sandbox_claims_total", "Warm sandboxes claimed.", "agent", [] {
    return std::vector<std::pair<std::string, double>>{{"py", 3}};
  });
  const std::string mine = metrics.render([](const std::string& agent) { return agent == "py"; });
  EXPECT_NE(mine.find("# TYPE execmcp_sandbox_claims_total counter\n"
                      "execmcp_sandbox_claims_total{agent=\"py\"} 3\n"),
            std::string::npos)
      << mine;
  EXPECT_EQ(metrics.render_public().find("execmcp_sandbox_claims_total"), std::string::npos);
}

}  // namespace
}  // namespace execmcp::host::mcp
