// Forwards a plugin's log messages to spdlog, tagged with the plugin and agent names.
#pragma once

#include <string>

#include "execmcp/sdk/types.hpp"

namespace execmcp::host {

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
