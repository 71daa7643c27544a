// The background-shell surface of an Agent (MassGen's five tools), reached through one accessor
// the way a plugin's optional interfaces are reached through query_interface.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "agent/background_types.hpp"

namespace execmcp::host {

struct BackgroundStartArgs {
  std::string command;
  std::string work_dir;   // empty: the agent's cwd
  std::string principal;  // who asked, for the audit trail
};

inline constexpr const char* kNoBackgroundShells =
    "background shells are not available for this agent (its backend does not offer them)";

// Thread-safe like the Agent that hands it out, and lives as long as that agent. The command
// passes the agent's filters like any command; every call writes one audit record.
class BackgroundShellControl {
 public:
  virtual ~BackgroundShellControl() = default;

  virtual BackgroundStartResult start(const BackgroundStartArgs& args) = 0;
  virtual BackgroundOutput output(const std::string& shell_id,
                                  const std::optional<std::string>& cursor,
                                  std::optional<std::size_t> max_lines,
                                  const std::string& principal) = 0;
  virtual std::optional<BackgroundShellStatus> status(const std::string& shell_id,
                                                      const std::string& principal) = 0;
  // Returns once the process tree is gone.
  virtual BackgroundKillResult kill(const std::string& shell_id, const std::string& principal) = 0;
  virtual std::vector<BackgroundShellStatus> list(const std::string& principal) = 0;
};

// What an agent without background shells answers (a client may call the tools even when
// tools/list did not offer them).
class UnavailableBackgroundShells final : public BackgroundShellControl {
 public:
  BackgroundStartResult start(const BackgroundStartArgs& /*args*/) override {
    BackgroundStartResult result;
    result.error = kNoBackgroundShells;
    return result;
  }
  BackgroundOutput output(const std::string& /*shell_id*/,
                          const std::optional<std::string>& /*cursor*/,
                          std::optional<std::size_t> /*max_lines*/,
                          const std::string& /*principal*/) override {
    BackgroundOutput result;
    result.error = kNoBackgroundShells;
    return result;
  }
  std::optional<BackgroundShellStatus> status(const std::string& /*shell_id*/,
                                              const std::string& /*principal*/) override {
    return std::nullopt;
  }
  BackgroundKillResult kill(const std::string& /*shell_id*/,
                            const std::string& /*principal*/) override {
    BackgroundKillResult result;
    result.error = kNoBackgroundShells;
    return result;
  }
  std::vector<BackgroundShellStatus> list(const std::string& /*principal*/) override { return {}; }
};

}  // namespace execmcp::host
