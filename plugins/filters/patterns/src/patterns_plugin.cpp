// The "patterns" filter plugin: allow/deny lists of regular expressions from the agent's config.
#include <exception>
#include <string>

#include "execmcp/plugins/patterns/pattern_rules.hpp"
#include "execmcp/sdk/plugin.hpp"
#include "execmcp/sdk/settings_check.hpp"

namespace execmcp::plugins::patterns {

class PatternsFilter final : public sdk::CommandFilter {
 public:
  explicit PatternsFilter(const sdk::FilterInit& init)
      : settings_(parse_settings(init.settings_json)) {
    if (init.log != nullptr) {
      init.log->log(sdk::LogLevel::Debug, "patterns for agent '" + init.agent_id + "': " +
                                              std::to_string(settings_.allow.size()) + " allow, " +
                                              std::to_string(settings_.deny.size()) + " deny");
    }
  }

  [[nodiscard]] sdk::FilterVerdict check(
      const sdk::FilterRequest& request) const noexcept override {
    try {
      return judge(request.command, settings_);
    } catch (const std::exception& e) {
      // Fail closed: a command we could not judge does not run.
      return sdk::FilterVerdict::deny("patterns-error",
                                      std::string("the command could not be checked: ") + e.what());
    } catch (...) {
      return sdk::FilterVerdict::deny("patterns-error", "the command could not be checked");
    }
  }

 private:
  Settings settings_;
};

}  // namespace execmcp::plugins::patterns

EXECMCP_FILTER_PLUGIN(::execmcp::plugins::patterns::PatternsFilter, "patterns", "1.0.0",
                      "Allow and deny lists of regular expressions, judged per simple command")
EXECMCP_SETTINGS_CHECK(::execmcp::plugins::patterns::check_settings)
