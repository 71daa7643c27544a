// How log records reach stderr: the server's logger, whose sink bounds and escapes every message
// whatever logged it, and the sink that forwards a plugin's messages to it.
#pragma once

#include <memory>
#include <string>

#include <spdlog/logger.h>
#include <spdlog/sinks/sink.h>

#include "execmcp/sdk/types.hpp"

namespace execmcp::host {

// Hands every record to `inner` with its message made safe (log_safe_text: control bytes and
// invalid UTF-8 as \xNN, at most kLogRecordBytes): no code path, host or plugin, can write a raw
// CR, ESC or an unbounded string to the log. Thread-safe when `inner` is.
class SafeTextSink final : public spdlog::sinks::sink {
 public:
  explicit SafeTextSink(spdlog::sink_ptr inner) : inner_(std::move(inner)) {}
  void log(const spdlog::details::log_msg& msg) override;
  void flush() override { inner_->flush(); }
  void set_pattern(const std::string& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    inner_->set_formatter(std::move(formatter));
  }

 private:
  spdlog::sink_ptr inner_;
};

// Makes the server's logger ("execmcp": time, level, message) the default one, writing through a
// SafeTextSink to `sink` (the program: stderr, as stdout belongs to MCP), at `level`.
std::shared_ptr<spdlog::logger> install_server_logger(spdlog::sink_ptr sink,
                                                      spdlog::level::level_enum level);

// Forwards a plugin's log messages to spdlog, tagged with the plugin and agent names; each message
// is made safe here too, so it is bounded even under a logger without a SafeTextSink.
class SpdlogSink final : public sdk::LogSink {
 public:
  SpdlogSink(std::string plugin, std::string agent_id)
      : plugin_(std::move(plugin)), agent_id_(std::move(agent_id)) {}
  void log(sdk::LogLevel level, std::string_view message) noexcept override;

 private:
  std::string plugin_;
  std::string agent_id_;
};

}  // namespace execmcp::host
