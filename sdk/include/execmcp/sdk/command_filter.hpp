// The interface every command filter implements (sanitize, patterns, third-party ...).
#pragma once

#include <string>
#include <string_view>

#include "execmcp/sdk/types.hpp"

namespace execmcp::sdk {

struct FilterInit {
  std::string agent_id;
  std::string settings_json;  // the plugin's own settings, a JSON object as text
  LogSink* log = nullptr;
};

struct FilterRequest {
  std::string_view agent_id;
  std::string_view command;
  std::string_view work_dir;
};

// The chain runs filters in config order; the first Deny stops it and nothing is executed.
struct FilterVerdict {
  enum class Action { Continue, Deny };
  Action action = Action::Continue;
  std::string rule;    // which rule matched, e.g. "rm-root" or the deny pattern
  std::string reason;  // one sentence for the agent, e.g. "deleting / is blocked"

  static FilterVerdict allow() { return {}; }
  static FilterVerdict deny(std::string rule, std::string reason) {
    return {Action::Deny, std::move(rule), std::move(reason)};
  }
  [[nodiscard]] bool denied() const { return action == Action::Deny; }
};

// Created once per agent from validated settings; check() is const, thread-safe and must not throw.
class CommandFilter {
 public:
  virtual ~CommandFilter() = default;
  [[nodiscard]] virtual FilterVerdict check(const FilterRequest& request) const noexcept = 0;

  // Optional capabilities (since ABI 2.0), as ExecutorBackend::query_interface(). None is defined
  // for filters yet; the slot exists so that one can be added without another ABI break.
  [[nodiscard]] virtual void* query_interface(std::string_view id) noexcept {
    (void)id;
    return nullptr;
  }
};

}  // namespace execmcp::sdk
