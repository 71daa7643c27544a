// See settings_hooks.hpp.
#include "settings_hooks.hpp"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>

#include "local_settings.hpp"
#include "sandbox_launcher.hpp"
#include "sandbox_limits.hpp"

namespace execmcp::plugins::local {

namespace {

std::string yes_no(bool on) {
  return on ? "yes" : "NO";
}

}  // namespace

sandbox::SandboxSupport cached_sandbox_support() {
  static std::mutex mutex;
  static std::optional<sandbox::SandboxSupport> good;
  static std::string good_for;  // EXECMCP_BWRAP when it was found (tests change it)
  const char* over = std::getenv("EXECMCP_BWRAP");
  const std::string bwrap = over == nullptr ? "" : over;
  {
    std::lock_guard lock(mutex);
    if (good && good_for == bwrap) return *good;
  }
  sandbox::SandboxSupport found = sandbox::check_sandbox_support();
  if (found.problem.empty()) {
    std::lock_guard lock(mutex);
    good = found;
    good_for = bwrap;
  }
  return found;
}

void check_local_settings(const std::string& settings_json,
                          std::vector<sdk::SettingsProblem>& problems) {
  LocalSettings settings;
  try {
    settings = parse_local_settings(settings_json);
  } catch (const std::exception& e) {
    problems.push_back({"", e.what()});
    return;
  }
  if (settings.isolation != Isolation::kSandbox) return;
  // Fail closed, and say so before anything starts: the agent would not start on this machine.
  if (const auto support = cached_sandbox_support(); !support.problem.empty())
    problems.push_back({"/isolation",
                        "isolation: sandbox: this machine cannot give a layer of the "
                        "sandbox, so the agent would not start: " +
                            support.problem});
  // A limit the config asks for that this machine cannot apply: the agent would not start either.
  if (const auto limits = plan_limits(settings.sandbox, sandbox::probe_cgroups());
      !limits.error.empty())
    problems.push_back(
        {"/sandbox", "isolation: sandbox, so the agent would not start: " + limits.error});
}

void describe_local_settings(const std::string& settings_json, std::vector<std::string>& lines) {
  LocalSettings settings;
  try {
    settings = parse_local_settings(settings_json);
  } catch (const std::exception&) {
    return;  // the check reports it
  }
  if (settings.isolation != Isolation::kSandbox) {
    lines.push_back(
        "isolation: none: commands run on the host as the server's user, with its files, network "
        "and processes in reach (no sandbox)");
    return;
  }
  const auto support = cached_sandbox_support();
  // A failed probe stops at the first missing layer: the ones after it are not known.
  std::string line =
      support.problem.empty()
          ? "isolation: sandbox: bubblewrap " + support.bwrap + ", user namespaces " +
                yes_no(support.user_namespaces) + ", seccomp " + yes_no(support.seccomp) +
                ", Landlock "
          : "isolation: sandbox: CANNOT START here (the error below names the layer and the fix); "
            "Landlock ";
  const int abi = settings.sandbox.landlock_max_abi > 0
                      ? std::min(settings.sandbox.landlock_max_abi, support.landlock_abi)
                      : support.landlock_abi;
  line += abi >= 2 ? "ABI " + std::to_string(abi) : std::string("not applied (kernel ABI < 2)");
  line += "; network ";
  switch (settings.sandbox.network) {
    case SandboxNetworkSetting::kNone:
      line += "none (its own loopback only)";
      break;
    case SandboxNetworkSetting::kHost:
      line += "host (no network boundary)";
      break;
    case SandboxNetworkSetting::kEgress:
      line += "egress (" + std::to_string(settings.sandbox.egress.allow.size()) +
              " allowed entries, through a proxy of its own)";
      break;
  }
  // The limits each sandbox's cgroup gets here, and the defaults this machine cannot give, said.
  const auto limits = plan_limits(settings.sandbox, sandbox::probe_cgroups());
  line += "; limits: " + (limits.error.empty() ? limits.summary : "CANNOT BE APPLIED (below)");
  if (!limits.warning.empty()) line += "; " + limits.warning;
  lines.push_back(line);
}

}  // namespace execmcp::plugins::local
