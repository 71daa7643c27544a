// How the egress proxy of an agent with `egress.secrets` gets its injector and its secrets:
// execmcp-egress-injector (built beside the plugin, programs/egress_injector) is copied into the
// created proxy container's anonymous volume at /.execmcp and runs as its entrypoint, with Squid
// as its child; the secrets reach it on an exec's stdin, never through a file, the container's
// environment, its command line or its labels (docker inspect shows none of them).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "docker_common/engine/engine.hpp"
#include "execmcp/egress_secrets/secret_rule.hpp"

namespace execmcp::plugins::docker_common {

inline constexpr const char* kInjectorProgram = "execmcp-egress-injector";
// Where it runs in the proxy container (the volume also used for the runner elsewhere).
inline constexpr const char* kInjectorPath = "/.execmcp/execmcp-egress-injector";
// The image's own entrypoint (docker/egress/entrypoint.sh), which the injector starts.
inline constexpr const char* kEgressImageEntrypoint = "/usr/local/bin/execmcp-egress";
// The user the proxy runs as in the image, who alone may reach the injector's control socket.
inline constexpr const char* kEgressProxyUser = "proxy";
// How long the bundle's delivery may take, retries included (the injector starts with the
// container and opens its control socket a moment later).
inline constexpr std::chrono::seconds kBundleDeliveryTimeout{15};

// The proxy container's entrypoint when it injects secrets.
[[nodiscard]] std::vector<std::string> injector_entrypoint();

// Where the server finds the program: beside the plugin's directory, as execmcp-runner.
[[nodiscard]] std::string injector_host_path();

// Copies the program (read from `program`, "" = injector_host_path()) into the created (not yet
// started) proxy container.
EngineError copy_injector(Engine& engine, const std::string& proxy, const std::string& program);

// Hands the started proxy's injector `bundle` (on stdin of `execmcp-egress-injector --receive`,
// run as kEgressProxyUser). "" or why not; the sentence never holds a value.
std::string deliver_bundle(Engine& engine, const std::string& proxy,
                           const egress_secrets::SecretBundle& bundle);

}  // namespace execmcp::plugins::docker_common
