// A per-user agent's sandbox template and its names (see sandbox_template.hpp).
#include "agent/sandbox_template.hpp"

namespace execmcp::host {

SandboxTemplate::SandboxTemplate(std::string agent_id, PerUserConfig config, SandboxBuilder build,
                                 AgentCapabilities capabilities, sdk::BackendTraits traits)
    : agent_id_(std::move(agent_id)),
      config_(std::move(config)),
      build_(std::move(build)),
      capabilities_(capabilities),
      traits_(std::move(traits)) {}

std::string SandboxTemplate::user_sandbox_name(const std::string& key) {
  std::string out = "u-";
  for (char c : key) {
    switch (c) {
      case '_':
        out += "__";
        break;
      case '-':
        out += "_d";
        break;
      case '.':
        out += "_p";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string SandboxTemplate::warm_sandbox_name(std::uint64_t n) {
  return "w-" + std::to_string(n);
}

std::string SandboxTemplate::longest_sandbox_name() {
  return user_sandbox_name(std::string(kMaxUserKey, '_'));
}

bool SandboxTemplate::valid_user_key(const std::string& key) {
  if (key.empty() || key.size() > kMaxUserKey || key.front() == '.' || key.front() == '-')
    return false;
  for (char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace execmcp::host
