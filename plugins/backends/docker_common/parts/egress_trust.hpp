// The sandbox's trust files for an agent whose egress proxy intercepts TLS (issue 30): the image's
// own CA bundle plus the agent's CA, in an anonymous volume at kTrustDir that the commands' user
// can read but not change. The clients' variables (SSL_CERT_FILE, NODE_EXTRA_CA_CERTS, ...) point
// at these files; this part only makes them.
#pragma once

#include <functional>
#include <string>

#include "docker_common/lifecycle/container_part.hpp"

namespace execmcp::plugins::docker_common {

class ContainerLifecycle;

// Where the image's bundle is read (Debian's, Ubuntu's, Alpine's path; on Fedora a symlink that
// one hop resolves), and the two files the part writes into kTrustDir.
inline constexpr const char* kImageCaBundle = "/etc/ssl/certs/ca-certificates.crt";
inline constexpr const char* kTrustBundleName = "ca-bundle.pem";  // the image's roots + the CA
inline constexpr const char* kTrustCaName = "ca.pem";             // the agent's CA alone

// The bundle: the image's roots, then the CA (a newline between them when the first lacks one).
std::string trust_bundle(const std::string& image_bundle, const std::string& ca_pem);

// The tar archive copied into kTrustDir: both files root's and 0444, after a `./` entry root's
// and 0755 (Docker keeps the mode and owner a volume's root has, root's 0755, and never applies an
// archive's `./` to it; Podman would take the owner from it, as for the runner's volume).
std::string trust_tar(const std::string& bundle, const std::string& ca_pem);

class EgressTrustPart final : public ContainerPart {
 public:
  // `ca_pem` gives the agent's CA certificate (PEM) at each create; called on the lifecycle's
  // thread. An empty function (or an empty PEM) leaves the container as it is: no volume, no
  // files.
  EgressTrustPart(ContainerLifecycle& lifecycle, std::function<std::string()> ca_pem)
      : lifecycle_(lifecycle), ca_pem_(std::move(ca_pem)) {}

  // The anonymous volume at kTrustDir.
  std::string prepare_spec(ContainerSpec& spec) override;
  // Reads the image's bundle from the created container (Engine::copy_from, one symlink hop;
  // missing: the CA alone, with a warning in the log), adds the CA and copies both files into
  // the volume. Every create: a new container's volume is empty.
  std::string after_create() override;

 private:
  // The image's bundle into `out` ("" when the image has none: then `missing` says so).
  std::string read_image_bundle(std::string& out, bool& missing);

  ContainerLifecycle& lifecycle_;
  std::function<std::string()> ca_pem_;
};

}  // namespace execmcp::plugins::docker_common
