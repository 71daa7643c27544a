// libFuzzer target: the secret bundle the injector reads from its control socket. Parsing any bytes
// either throws BundleError or gives a bundle that keeps the parser's promises and survives
// serialize -> parse unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "execmcp/egress_secrets/secret_bundle.hpp"

namespace es = execmcp::egress_secrets;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  es::SecretBundle bundle;
  try {
    bundle = es::parse_bundle(text);
  } catch (const es::BundleError&) {
    return 0;
  }
  if (bundle.secrets.size() > es::kMaxSecrets) std::abort();
  for (const auto& secret : bundle.secrets) {
    if (secret.value.empty() || secret.value.size() != secret.placeholder.size() ||
        secret.value == secret.placeholder || secret.hosts.empty() ||
        secret.hosts.size() > es::kMaxHostsPerSecret)
      std::abort();
    for (const auto& path : secret.paths)
      if (path.empty() || path[0] != '/') std::abort();
  }
  const auto once = es::serialize_bundle(bundle);
  es::SecretBundle again;
  try {
    again = es::parse_bundle(once);
  } catch (const es::BundleError&) {
    std::abort();  // what serialize writes from a parsed bundle must parse
  }
  if (es::serialize_bundle(again) != once) std::abort();
  return 0;
}
