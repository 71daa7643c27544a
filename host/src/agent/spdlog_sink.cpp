// Forwards a plugin's log messages to spdlog, tagged with the plugin and agent names.
#include "agent/spdlog_sink.hpp"

#include <spdlog/spdlog.h>

namespace execmcp::host {

namespace {
spdlog::level::level_enum to_spdlog(sdk::LogLevel level) {
  switch (level) {
    case sdk::LogLevel::Trace:
      return spdlog::level::trace;
    case sdk::LogLevel::Debug:
      return spdlog::level::debug;
    case sdk::LogLevel::Info:
      return spdlog::level::info;
    case sdk::LogLevel::Warn:
      return spdlog::level::warn;
    case sdk::LogLevel::Error:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}
}  // namespace

void SpdlogSink::log(sdk::LogLevel level, std::string_view message) noexcept {
  try {
    spdlog::log(to_spdlog(level), "[{} agent={}] {}", plugin_, agent_id_, message);
  } catch (...) {  // logging must never fail a request
  }
}

}  // namespace execmcp::host
