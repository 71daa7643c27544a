// See egress_trust.hpp.
#include "docker_common/parts/egress_trust.hpp"

#include <filesystem>

#include "docker_common/engine/tar_archive.hpp"
#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "docker_common/log_text.hpp"

namespace execmcp::plugins::docker_common {

namespace {

using Kind = EngineError::Kind;

// Where a symlink at `path` points, as an absolute path in the container.
std::string link_destination(const std::string& path, const std::string& target) {
  std::filesystem::path to(target);
  if (to.is_relative()) to = std::filesystem::path(path).parent_path() / to;
  return to.lexically_normal().string();
}

}  // namespace

std::string trust_bundle(const std::string& image_bundle, const std::string& ca_pem) {
  std::string out = image_bundle;
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += ca_pem;
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

std::string trust_tar(const std::string& bundle, const std::string& ca_pem) {
  return tar_archive(
      {{"./", {}, 0755}, {kTrustBundleName, bundle, 0444}, {kTrustCaName, ca_pem, 0444}});
}

std::string EgressTrustPart::prepare_spec(ContainerSpec& spec) {
  if (ca_pem_) spec.volumes.push_back(kTrustDir);
  return {};
}

std::string EgressTrustPart::read_image_bundle(std::string& out, bool& missing) {
  out.clear();
  missing = false;
  auto& engine = lifecycle_.engine();
  const std::string& name = lifecycle_.name();
  std::string path = kImageCaBundle;
  for (int hop = 0; hop < 2; ++hop) {
    std::string tar;
    const auto err = engine.copy_from(name, path, tar);
    if (err.kind == Kind::kNotFound) {
      missing = true;
      return {};
    }
    if (!err.ok())
      return describe_failure(err,
                              "reading the image's CA bundle " + path + " from container " + name);
    TarEntry entry;
    if (auto bad = read_tar_entry(tar, entry); !bad.empty())
      return "reading the image's CA bundle " + path + " from container " + name + ": " +
             log_text(bad);
    if (entry.type == TarEntry::Type::kFile) {
      out = std::move(entry.data);
      return {};
    }
    path = link_destination(path, entry.link_target);
  }
  return "the image's CA bundle " + std::string(kImageCaBundle) +
         " is a symlink to a symlink (execmcp follows one): point it at the file itself";
}

std::string EgressTrustPart::after_create() {
  if (!ca_pem_) return {};
  const std::string ca = ca_pem_();
  if (ca.empty()) return "the agent's egress CA is not there to put into " + std::string(kTrustDir);
  std::string image_bundle;
  bool missing = false;
  if (auto err = read_image_bundle(image_bundle, missing); !err.empty()) return err;
  if (missing)
    lifecycle_.log(sdk::LogLevel::Warn,
                   "the image has no CA bundle at " + std::string(kImageCaBundle) + ": " +
                       kTrustDir + "/" + kTrustBundleName +
                       " holds the agent's egress CA alone, so only the intercepted hosts verify");
  const auto err = lifecycle_.engine().copy_into(lifecycle_.name(), kTrustDir,
                                                 trust_tar(trust_bundle(image_bundle, ca), ca));
  if (!err.ok())
    return describe_failure(err, "copying the CA bundle into " + std::string(kTrustDir) +
                                     " of container " + lifecycle_.name());
  return {};
}

}  // namespace execmcp::plugins::docker_common
