// A backend plugin loaded the way the host loads it (Boost.DLL), for the benches that drive a
// backend directly (docker_bench, egress_bench); its warnings and errors go to stderr.
#pragma once

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <boost/dll/shared_library.hpp>

#include "execmcp/sdk/plugin.hpp"

namespace execmcp::bench {

// The docker-api plugin built with the bench ("" when its build does not say).
#ifdef EXECMCP_DOCKER_API_PLUGIN
inline constexpr const char* kDockerApiPlugin = EXECMCP_DOCKER_API_PLUGIN;
#else
inline constexpr const char* kDockerApiPlugin = "";
#endif

struct LogToStderr : sdk::LogSink {
  void log(sdk::LogLevel level, std::string_view message) noexcept override {
    if (level < sdk::LogLevel::Warn) return;  // warnings and errors only
    std::fprintf(stderr, "  [plugin] %.*s\n", static_cast<int>(message.size()), message.data());
  }
};

class Plugin {
 public:
  explicit Plugin(const std::string& path)
      : lib_(path, boost::dll::load_mode::rtld_now),
        factory_(lib_.get_alias<sdk::BackendFactory>(sdk::kBackendFactorySymbol)) {}

  // Throws with the plugin's message when it refuses the settings.
  std::unique_ptr<sdk::ExecutorBackend> create(sdk::BackendInit init) {
    init.log = &log_;
    std::string error;
    std::unique_ptr<sdk::ExecutorBackend> backend(factory_(init, error));
    if (!backend) throw std::runtime_error("the plugin refused the backend: " + error);
    return backend;
  }

 private:
  boost::dll::shared_library lib_;
  sdk::BackendFactory& factory_;
  LogToStderr log_;
};

}  // namespace execmcp::bench
