// The "sanitize" filter plugin: blocks destructive and privilege-changing shell commands.
#include <exception>
#include <string>

#include "execmcp/plugins/sanitize/sanitize_rules.hpp"
#include "execmcp/sdk/plugin.hpp"

namespace execmcp::plugins::sanitize {

class SanitizeFilter final : public sdk::CommandFilter {
 public:
  explicit SanitizeFilter(const sdk::FilterInit& init)
      : settings_(parse_settings(init.settings_json)) {
    if (init.log != nullptr && !settings_.allowed.empty()) {
      std::string allowed;
      for (const auto& id : settings_.allowed) allowed += (allowed.empty() ? "" : ", ") + id;
      init.log->log(sdk::LogLevel::Debug,
                    "sanitize for agent '" + init.agent_id + "': rules switched off: " + allowed);
    }
  }

  [[nodiscard]] sdk::FilterVerdict check(
      const sdk::FilterRequest& request) const noexcept override {
    try {
      return judge(request.command, settings_, request.work_dir);
    } catch (const std::exception& e) {
      // Fail closed: a command we could not judge does not run.
      return sdk::FilterVerdict::deny("sanitize-error",
                                      std::string("the command could not be checked: ") + e.what());
    } catch (...) {
      return sdk::FilterVerdict::deny("sanitize-error", "the command could not be checked");
    }
  }

 private:
  Settings settings_;
};

}  // namespace execmcp::plugins::sanitize

EXECMCP_FILTER_PLUGIN(::execmcp::plugins::sanitize::SanitizeFilter, "sanitize", "1.0.0",
                      "Blocks destructive and privilege-changing shell commands (rm -rf /, dd to "
                      "disks, fork bombs, sudo ...)")
