// An agent's egress policy (the `egress` setting of `network: egress`): parsed strictly from the
// settings, rendered as the configuration of its Squid proxy (docker/egress), and the proxy's
// access log read back as records.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "execmcp/sdk/settings_check.hpp"

namespace execmcp::plugins::docker_common {

// One allow-list entry, normalised: names lower-case, a CIDR's host bits cleared.
struct EgressEntry {
  enum class Kind {
    kHost,      // "pypi.org": that name only
    kWildcard,  // "*.npmjs.org": every name under npmjs.org, not npmjs.org itself
    kAddress,   // "10.0.0.1", "::1": that address (as a request's host or a name's address)
    kNetwork,   // "10.20.0.0/16", "fd00::/8": every address in it
  };
  Kind kind = Kind::kHost;
  // kHost: the name; kWildcard: the suffix without "*." ("npmjs.org"); kAddress: the address as
  // inet_ntop prints it; kNetwork: "address/prefix".
  std::string value;
  std::string text;  // as written in the settings

  bool operator==(const EgressEntry&) const = default;
};

// Where the server reads a secret's value at each agent start: `env:NAME` (its own environment)
// or `file:/absolute/path` (a file; a trailing newline is dropped).
struct EgressSecretSource {
  enum class Kind { kEnv, kFile };
  Kind kind = Kind::kEnv;
  std::string text;  // kEnv: the variable's name; kFile: the absolute path

  // As written in the settings: "env:GITHUB_TOKEN", "file:/run/secrets/token".
  [[nodiscard]] std::string describe() const {
    return (kind == Kind::kEnv ? "env:" : "file:") + text;
  }
  bool operator==(const EgressSecretSource&) const = default;
};

// One entry of `egress.secrets`: the sandbox's commands get `name` holding a placeholder, and the
// proxy puts the value in its place only in requests that match (docs/docker-backend.md).
struct EgressSecretSetting {
  std::string name;  // an environment variable's name, unique among the secrets
  EgressSecretSource from;
  std::vector<std::string> hosts;    // exact names, lower-case, each an `allow` host entry
  std::string header;                // one request header's name; "" = any header
  std::vector<std::string> methods;  // upper-case; empty = any
  std::vector<std::string> paths;    // prefixes starting with '/'; empty = any
  bool plain_http = false;           // also over plain HTTP (needs port 80 in `ports`)

  bool operator==(const EgressSecretSetting&) const = default;
};

struct EgressPolicy {
  std::vector<EgressEntry> allow;  // in the settings' order, duplicates dropped
  std::vector<std::uint16_t> ports = {80, 443};
  std::string upstream_network = "bridge";   // the Docker network the proxy reaches upstreams on
  std::vector<EgressSecretSetting> secrets;  // in the settings' order
  // Roots (PEM) the proxy trusts beyond the system's when it verifies an intercepted host's
  // upstream: an absolute path, read at each start; "" when none.
  std::string upstream_ca;
  // Not a setting: where the server reads execmcp-egress-injector from ("" = beside the plugin,
  // injector_host_path()). Tests point it at a file of their own.
  std::string injector_program;
};

// The variables execmcp itself sets in the sandbox (the proxy's, the trust files') or that a
// command's shell needs: no secret may be named so.
bool is_reserved_secret_name(std::string_view name);

// Reads the `egress` object ({allow, ports, upstream_network, secrets, upstream_ca}). Appends one
// problem per fault, each at its JSON pointer under `pointer` (the object's own pointer in the
// settings, "/egress"): "/egress/allow/3" for an entry that is not a host name, "*.suffix", IP
// address or CIDR; "/egress/secrets/0/hosts/1" for a secret's host that `allow` does not list by
// name. The returned policy is meaningful only when nothing was appended.
EgressPolicy parse_egress(const nlohmann::json& egress, std::vector<sdk::SettingsProblem>& problems,
                          const std::string& pointer = "/egress");

// Classifies one allow-list entry; std::nullopt (and `why` set) when it is none of the four forms.
std::optional<EgressEntry> parse_egress_entry(const std::string& text, std::string& why);

// The proxy listens on this port of every network it is on.
inline constexpr std::uint16_t kEgressProxyPort = 3128;

// Where the image's entrypoint (docker/egress/entrypoint.sh) takes the rendered configuration
// and the refusal page from.
inline constexpr const char* kEgressConfVariable = "EXECMCP_EGRESS_CONF";
inline constexpr const char* kEgressErrorPageVariable = "EXECMCP_EGRESS_ERROR_PAGE";

// squid.conf for one agent's proxy: the policy's allow list and ports and nothing more. Refusals
// get 403 with the page of render_egress_error_page(); every request is logged on stdout in the
// format parse_egress_log_line() reads. `client_networks` (CIDRs, e.g. the agent's internal
// network) are the only sources the proxy serves when not empty. `agent_label` names the agent
// in the log and the page; characters other than [A-Za-z0-9._-] become '_'.
// `http_port` is the listening line's value ("" = kEgressProxyPort; the local sandbox's proxy
// gives "127.0.0.1:<port>").
std::string render_squid_conf(const EgressPolicy& policy, const std::string& agent_label,
                              const std::vector<std::string>& client_networks = {},
                              const std::string& http_port = {});

// The refusal page's template (Squid expands %H, the host, %p, its port, %M, the method): it says
// the host is not in the agent's egress allow list and lists what is.
std::string render_egress_error_page(const EgressPolicy& policy, const std::string& agent_label);

// The proxy container's environment ("KEY=VALUE", as ContainerSpec::env holds it): the rendered
// configuration and refusal page, which the image's entrypoint writes where Squid reads them.
std::vector<std::string> egress_proxy_env(const EgressPolicy& policy,
                                          const std::string& agent_label,
                                          const std::vector<std::string>& client_networks = {});

// The variables an agent's commands get so that curl, pip, npm, git and Python's urllib use the
// proxy unasked ("KEY=VALUE"): HTTP_PROXY, HTTPS_PROXY, their lower-case forms, and NO_PROXY (and
// no_proxy) for loopback. `proxy_host` is the proxy container's name on the agent's network.
std::vector<std::string> egress_client_env(const std::string& proxy_host);

// One line of the proxy's access log.
struct EgressLogRecord {
  std::string agent;   // the label given to render_squid_conf
  std::string client;  // the agent container's address
  std::string method;  // GET, CONNECT, ...
  std::string host;    // the request's host or the CONNECT target's
  std::uint16_t port = 0;
  std::string squid_status;  // Squid's result code: TCP_MISS, TCP_TUNNEL, TCP_DENIED, ...
  int http_status = 0;       // what the agent got; 0 when nothing was sent
  bool refused = false;      // refused by the policy (403 with the egress page)
  std::string upstream;      // the address the proxy connected to; "" when none
};

// Reads a line the proxy logged; std::nullopt for anything else (Squid's own messages).
std::optional<EgressLogRecord> parse_egress_log_line(std::string_view line);

}  // namespace execmcp::plugins::docker_common
