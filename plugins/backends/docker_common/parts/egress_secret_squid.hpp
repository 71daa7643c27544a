// The lines an agent's squid.conf gains when its `egress.secrets` name hosts: Squid sends those
// hosts' requests (CONNECT and plain HTTP) to execmcp-egress-injector, its parent on
// 127.0.0.1:3130, and lets the injector reach them again through a port of its own (3129) that
// only loopback can use, that goes direct, and that stays out of the access log the backend's log
// follower reads (so each agent request is one line there).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace execmcp::plugins::docker_common {

inline constexpr std::uint16_t kEgressInjectorPort = 3130;    // the injector, Squid's parent
inline constexpr std::uint16_t kEgressInjectorUpPort = 3129;  // Squid, for the injector's leg

// The block for render_squid_conf, `secret_hosts` being exact lower-case names (each also in the
// allow list). Self-contained (it defines every acl it uses) and order-sensitive: it goes after
// the `logformat execmcp` line and BEFORE the `access_log ... logformat=execmcp` line (its
// `access_log none` must come first) and so before every `http_access` line (its rules must
// precede `deny !egress_clients`, which loopback does not pass). Empty when there are no hosts.
std::string render_secret_squid_lines(const std::vector<std::string>& secret_hosts);

}  // namespace execmcp::plugins::docker_common
