// Squid's part in routing the secret hosts through execmcp-egress-injector.
#include "docker_common/parts/egress_secret_squid.hpp"

#include <sstream>

namespace execmcp::plugins::docker_common {

std::string render_secret_squid_lines(const std::vector<std::string>& secret_hosts) {
  if (secret_hosts.empty()) return "";
  std::ostringstream conf;
  conf << "# Hosts named by egress.secrets go through execmcp-egress-injector ("
       << kEgressInjectorPort << "), which reaches them again through " << kEgressInjectorUpPort
       << ".\n"
       << "http_port 127.0.0.1:" << kEgressInjectorUpPort << " name=injector_up\n"
       << "acl egress_injector_up myportname injector_up\n"
       << "acl egress_injector_src src 127.0.0.1/32\n"
       << "acl egress_secret_linklocal dst 169.254.0.0/16 fe80::/10\n";
  // Exact names (no leading dot: not the subdomains), never looked up backwards (-n).
  for (const auto& host : secret_hosts)
    conf << "acl egress_secret_hosts dstdomain -n " << host << '\n';
  // The injector's own leg is not an agent request: the log follower must not count it twice.
  conf << "access_log none egress_injector_up\n"
       << "cache_peer 127.0.0.1 parent " << kEgressInjectorPort
       << " 0 no-query no-digest no-netdb-exchange name=injector\n"
       << "cache_peer_access injector allow egress_secret_hosts !egress_injector_up\n"
       << "cache_peer_access injector deny all\n"
       // always_direct is asked first: the injector's leg goes out, never back to the injector.
       << "always_direct allow egress_injector_up\n"
       << "never_direct allow egress_secret_hosts\n"
       // Loopback on the injector's port reaches the secret hosts only, and still not the
       // proxy's own loopback or link-local (cloud metadata) addresses; nothing else uses it.
       << "http_access allow egress_injector_up egress_injector_src egress_secret_hosts"
          " !to_localhost !egress_secret_linklocal\n"
       << "http_access deny egress_injector_up\n";
  return conf.str();
}

}  // namespace execmcp::plugins::docker_common
