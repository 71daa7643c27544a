// How log records reach stderr (see spdlog_sink.hpp).
#include "agent/spdlog_sink.hpp"

#include <spdlog/spdlog.h>

#include "agent/bounded_text.hpp"

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

void SafeTextSink::log(const spdlog::details::log_msg& msg) {
  if (!inner_->should_log(msg.level)) return;
  const std::string safe = log_safe_text(std::string_view(msg.payload.data(), msg.payload.size()));
  spdlog::details::log_msg copy = msg;
  copy.payload = spdlog::string_view_t(safe.data(), safe.size());
  inner_->log(copy);
}

std::shared_ptr<spdlog::logger> install_server_logger(spdlog::sink_ptr sink,
                                                      spdlog::level::level_enum level) {
  auto logger =
      std::make_shared<spdlog::logger>("execmcp", std::make_shared<SafeTextSink>(std::move(sink)));
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(level);
  return logger;
}

void SpdlogSink::log(sdk::LogLevel level, std::string_view message) noexcept {
  try {
    spdlog::log(to_spdlog(level), "[{} agent={}] {}", plugin_, agent_id_, log_safe_text(message));
  } catch (...) {  // logging must never fail a request
  }
}

}  // namespace execmcp::host
