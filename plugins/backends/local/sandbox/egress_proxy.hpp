// The host side of a local sandbox's `network: egress`: a Squid of its own (Debian's `squid`,
// run as the sandbox's uid, its configuration rendered by the Docker backends' render_squid_conf
// from the same `egress.allow`), listening on an ephemeral port of the host's 127.0.0.1 that
// accepts only 127.0.0.1, and a relay from a unix socket (in a 0700 directory of the sandbox uid)
// to that port. The sandbox gets the socket bound in (SandboxSpec::egress_socket) and nothing
// else of the network. Squid's access log is read back as EgressLogRecords.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "docker_common/parts/egress_policy.hpp"

namespace execmcp::plugins::local::sandbox {

struct EgressProxySpec {
  docker_common::EgressPolicy policy;
  std::string agent_label;  // names the agent in the access log and the refusal page
  // Squid runs as this uid (never 0); its files are in a 0700 directory of it.
  uid_t uid = 0;
  gid_t gid = 0;
  std::string base_dir = "/tmp";  // where that directory is made (the uid must search it)
  std::string squid;              // "" = EXECMCP_SQUID or /usr/sbin/squid
  std::string hosts_file;         // "" = /etc/hosts (the tests name their local hosts here)
  // The sandbox's cgroup (SandboxCgroup::procs_fds(), owned by the caller): Squid joins it before
  // it runs, so its memory and CPU count toward the sandbox's limits. Empty: none.
  std::vector<int> cgroup_procs;
  // Called on the proxy's reader thread for each access-log record (refusals included).
  std::function<void(const docker_common::EgressLogRecord&)> on_record;
};

class EgressProxy {
 public:
  // Starts Squid and waits until it accepts connections (a few hundred ms); null and `error`
  // ("egress proxy: ...", with Squid's last words) on failure, nothing left behind.
  static std::unique_ptr<EgressProxy> start(const EgressProxySpec& spec, std::string& error);
  virtual ~EgressProxy() = default;

  // The unix socket the sandbox is given (SandboxSpec::egress_socket).
  [[nodiscard]] virtual const std::string& socket_path() const = 0;
  [[nodiscard]] virtual pid_t squid_pid() const = 0;
  [[nodiscard]] virtual std::uint16_t squid_port() const = 0;
  // How many connections the sandbox has opened to the proxy so far.
  [[nodiscard]] virtual std::uint64_t connections() const = 0;
  // Returns once Squid's access log has been quiet for `quiet` (at most 8 x `quiet`): Squid logs
  // a request as it ends, so a command's last requests are read by then. Returns at once when
  // stopped.
  virtual void settle(std::chrono::milliseconds quiet) = 0;
  // Ends Squid and the relay, removes the directory. Idempotent.
  virtual void stop() noexcept = 0;
};

// Where the proxy is, as the sandbox's commands are told ("KEY=VALUE"): HTTP(S)_PROXY and their
// lower-case forms at http://127.0.0.1:3128 (the runner's relay), NO_PROXY for loopback.
std::vector<std::string> egress_client_env();

// The Squid program: EXECMCP_SQUID (tests) or /usr/sbin/squid; "" when it is not there.
std::string find_squid();

}  // namespace execmcp::plugins::local::sandbox
