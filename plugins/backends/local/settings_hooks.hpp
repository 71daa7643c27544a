// The local plugin's settings hooks (SDK 2.1 check, 2.4 description), run by the host without
// creating the plugin: `execmcp check-config` shows, for `isolation: sandbox`, what this machine
// gives of each layer of the sandbox, and a layer it cannot give is a problem of the `isolation`
// setting that names the layer and the fix (the agent would not start).
#pragma once

#include <string>
#include <vector>

#include "execmcp/sdk/settings_check.hpp"
#include "sandbox_launcher.hpp"

namespace execmcp::plugins::local {

// check_sandbox_support(), but a probe that found every layer is kept for the process (for the
// same EXECMCP_BWRAP): a per-user agent's settings are checked, and its sandbox started, again for
// each user, whose sandbox must be made in milliseconds. One that did not is made again the next
// time (the operator may fix it). A layer lost after a good probe still fails closed: bubblewrap
// then refuses to make the sandbox, and the start says so.
sandbox::SandboxSupport cached_sandbox_support();

// Settings that do not parse, then (with isolation: sandbox) a missing layer, at "/isolation",
// and a limit given in the config that this machine cannot apply, at "/sandbox".
void check_local_settings(const std::string& settings_json,
                          std::vector<sdk::SettingsProblem>& problems);

// "isolation: none ..." or "isolation: sandbox: bubblewrap ..., user namespaces ..., seccomp ...,
// Landlock ABI N" (and the network, and the limits each sandbox's cgroup gets or why the defaults
// cannot be had), as check_sandbox_support() and probe_cgroups() find them.
void describe_local_settings(const std::string& settings_json, std::vector<std::string>& lines);

}  // namespace execmcp::plugins::local
