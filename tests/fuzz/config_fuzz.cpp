// libFuzzer target: the YAML config loader (native and MassGen schemas) on any text, then the
// patterns plugin's settings check on every patterns filter it yields (the regular expressions a
// config carries reach libstdc++'s std::regex there). A bad config must end in a ConfigError or
// settings problems (or another exception the CLI reports), never a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "config/config.hpp"
#include "execmcp/plugins/patterns/pattern_rules.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool quiet = [] {
    spdlog::set_level(spdlog::level::off);
    return true;
  }();
  (void)quiet;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto config = execmcp::host::load_config_text(text, "/fuzz/agents.yaml");
    std::vector<execmcp::sdk::SettingsProblem> problems;
    for (const auto& agent : config->agents)
      for (const auto& filter : agent.filters)
        if (filter.plugin == "patterns")
          execmcp::plugins::patterns::check_settings(filter.settings.dump(), problems);
  } catch (const std::exception&) {
    // Refused with a message: what the CLI shows the operator.
  }
  return 0;
}
