// libFuzzer target: the YAML config loader (native and MassGen schemas) on any text. A bad config
// must end in a ConfigError (or another exception the CLI reports), never a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include <spdlog/spdlog.h>

#include "config/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool quiet = [] {
    spdlog::set_level(spdlog::level::off);
    return true;
  }();
  (void)quiet;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto config = execmcp::host::load_config_text(text, "/fuzz/agents.yaml");
    (void)config;
  } catch (const std::exception&) {
    // Refused with a message: what the CLI shows the operator.
  }
  return 0;
}
