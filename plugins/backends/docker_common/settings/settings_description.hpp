// The Docker backends' description of their settings for `execmcp check-config` (SDK 2.4,
// sdk::SettingsDescription): the runtime and the network policy, as written, with the defaults
// the backends apply.
#pragma once

#include <string>
#include <vector>

namespace execmcp::plugins::docker_common {

// "runtime: runsc" (when set), then "network: none (no network)", "network: bridge" or "network:
// egress, only through the agent's own proxy, to: <allow>; ports <ports>; upstream network
// <network>", then a line for each of egress.secrets ("egress secret NAME (from env:X): ... to
// <hosts> (<limits>) only ...") and for egress.upstream_ca. Nothing for an attached container
// (`container`), whose network is its own, or for settings that are not a JSON object.
void describe_docker_settings(const std::string& settings_json, std::vector<std::string>& lines);

}  // namespace execmcp::plugins::docker_common
