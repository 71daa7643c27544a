// EgressTrustPart (parts/egress_trust.hpp) against FakeEngine: the volume, the image's bundle read
// from the created container (one symlink hop, missing, too many hops), the CA appended, both
// files copied in before the container starts, and again at each create.
#include "docker_common/parts/egress_trust.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "container_test_fixture.hpp"
#include "docker_common/engine/tar_archive.hpp"
#include "docker_common/lifecycle/container_create_args.hpp"
#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "fake_engine.hpp"
#include "lifecycle_test_support.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using test_support::has;

constexpr const char* kCa = "-----BEGIN CERTIFICATE-----\nTESTCA\n-----END CERTIFICATE-----\n";
constexpr const char* kRoots = "-----BEGIN CERTIFICATE-----\nROOT1\n-----END CERTIFICATE-----";

struct Lines final : sdk::LogSink {
  void log(sdk::LogLevel level, std::string_view message) noexcept override {
    std::lock_guard lock(mutex);
    if (level == sdk::LogLevel::Warn) warnings.emplace_back(message);
  }
  std::mutex mutex;
  std::vector<std::string> warnings;
};

// The archive of a symlink named `name` pointing at `target`, as the engine gives it.
std::string symlink_tar(const std::string& name, const std::string& target) {
  std::string tar = tar_archive({{name, "", 0777}});
  tar[156] = '2';
  std::memcpy(&tar[157], target.data(), target.size());
  std::memset(&tar[148], ' ', 8);
  unsigned long sum = 0;
  for (std::size_t i = 0; i < 512; ++i) sum += static_cast<unsigned char>(tar[i]);
  char field[8] = {};
  std::snprintf(field, sizeof field, "%06lo", sum);
  std::memcpy(&tar[148], field, 7);
  return tar;
}

// The files of a tar_archive() as path -> (data, mode).
std::map<std::string, std::pair<std::string, unsigned>> members(const std::string& tar) {
  std::map<std::string, std::pair<std::string, unsigned>> out;
  for (std::size_t at = 0; at + 512 <= tar.size();) {
    const std::string header = tar.substr(at, 512);
    if (header[0] == '\0') break;
    const std::string name = header.substr(0, header.find('\0'));
    const auto size = std::stoul(header.substr(124, 11), nullptr, 8);
    const auto mode = static_cast<unsigned>(std::stoul(header.substr(100, 7), nullptr, 8));
    EXPECT_EQ(header.substr(108, 7), "0000000") << name;  // root's
    EXPECT_EQ(header.substr(116, 7), "0000000") << name;
    out[name] = {tar.substr(at + 512, size), mode};
    at += 512 + (size + 511) / 512 * 512;
  }
  return out;
}

class EgressTrustTest : public test_support::ContainerTest {
 protected:
  void SetUp() override {
    test_support::ContainerTest::SetUp();
    if (HasFatalFailure()) return;
    init_.log = &lines_;
    lifecycle_ = make_lifecycle();
  }
  // The part with a CA provider that counts its calls.
  void add_part(std::string ca = kCa) {
    ca_ = std::move(ca);
    part_ = std::make_unique<EgressTrustPart>(*lifecycle_, [this] {
      ++asked_;
      return ca_;
    });
    lifecycle_->parts().add(*part_);
  }

  Lines lines_;
  std::unique_ptr<ContainerLifecycle> lifecycle_;
  std::unique_ptr<EgressTrustPart> part_;
  std::string ca_;
  int asked_ = 0;
};

TEST(TrustBundle, TheImagesRootsThenTheCa) {
  EXPECT_EQ(trust_bundle(kRoots, kCa), std::string(kRoots) + "\n" + kCa);
  EXPECT_EQ(trust_bundle("", kCa), kCa);
  EXPECT_EQ(trust_bundle("A\n", "B"), "A\nB\n");
}

TEST_F(EgressTrustTest, TheBundleIsCopiedIntoItsVolumeBeforeTheContainerStarts) {
  engine_.archives[kImageCaBundle] = single_file_tar("ca-certificates.crt", kRoots, 0644);
  add_part();
  ASSERT_EQ(lifecycle_->start(), "");
  const auto& volumes = engine_.last_spec.volumes;
  EXPECT_EQ(volumes, std::vector<std::string>{kTrustDir});
  EXPECT_EQ(container_create_body(engine_.last_spec)["HostConfig"]["Mounts"].back(),
            (nlohmann::json{{"Type", "volume"}, {"Target", kTrustDir}}));
  const auto args = container_create_args(engine_.last_spec, CliFlavor::kDocker).args;
  EXPECT_NE(std::find(args.begin(), args.end(), "--mount=type=volume,target=/.execmcp-trust"),
            args.end());
  EXPECT_EQ(engine_.copied_from,
            std::vector<std::string>{lifecycle_->name() + ":" + kImageCaBundle});
  ASSERT_EQ(engine_.copies.size(), 1u);
  const auto& copy = engine_.copies[0];
  EXPECT_EQ(copy.dir, kTrustDir);
  EXPECT_FALSE(copy.running);  // no command ever sees the container without it
  const auto files = members(copy.tar);
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files.at("./").second, 0755u);
  EXPECT_EQ(files.at(kTrustBundleName), std::make_pair(std::string(kRoots) + "\n" + kCa, 0444u));
  EXPECT_EQ(files.at(kTrustCaName), std::make_pair(std::string(kCa), 0444u));
  EXPECT_TRUE(lines_.warnings.empty());
  EXPECT_TRUE(engine_.containers.at(lifecycle_->name()).state.running);
}

TEST_F(EgressTrustTest, ASymlinkedBundleIsFollowedOneHop) {
  engine_.archives[kImageCaBundle] =
      symlink_tar("ca-certificates.crt", "../../pki/tls/certs/ca-bundle.crt");
  engine_.archives["/etc/pki/tls/certs/ca-bundle.crt"] =
      single_file_tar("ca-bundle.crt", kRoots, 0644);
  add_part();
  ASSERT_EQ(lifecycle_->start(), "");
  EXPECT_EQ(engine_.copied_from.back(), lifecycle_->name() + ":/etc/pki/tls/certs/ca-bundle.crt");
  ASSERT_EQ(engine_.copies.size(), 1u);
  EXPECT_EQ(members(engine_.copies[0].tar).at(kTrustBundleName).first,
            std::string(kRoots) + "\n" + kCa);
}

TEST_F(EgressTrustTest, ASymlinkToASymlinkIsAStartErrorAndTheContainerGoes) {
  engine_.archives[kImageCaBundle] = symlink_tar("ca-certificates.crt", "/etc/a.crt");
  engine_.archives["/etc/a.crt"] = symlink_tar("a.crt", "/etc/b.crt");
  add_part();
  const auto err = lifecycle_->start();
  EXPECT_TRUE(has(err, "symlink to a symlink")) << err;
  EXPECT_FALSE(engine_.containers.contains(lifecycle_->name()));
  EXPECT_EQ(engine_.count("start " + lifecycle_->name()), 0u);
}

TEST_F(EgressTrustTest, AnImageWithoutABundleGetsTheCaAloneAndAWarning) {
  add_part();
  ASSERT_EQ(lifecycle_->start(), "");
  ASSERT_EQ(engine_.copies.size(), 1u);
  EXPECT_EQ(members(engine_.copies[0].tar).at(kTrustBundleName).first, kCa);
  ASSERT_EQ(lines_.warnings.size(), 1u);
  EXPECT_TRUE(has(lines_.warnings[0], "no CA bundle at /etc/ssl/certs/ca-certificates.crt"))
      << lines_.warnings[0];
}

TEST_F(EgressTrustTest, ACopyThatFailsIsAStartErrorAndNothingStarts) {
  engine_.copy_into_error = EngineError::of(EngineError::Kind::kOther, "disk full");
  add_part();
  const auto err = lifecycle_->start();
  EXPECT_TRUE(has(err, "copying the CA bundle into /.execmcp-trust")) << err;
  EXPECT_TRUE(has(err, "disk full")) << err;
  EXPECT_FALSE(engine_.containers.contains(lifecycle_->name()));
  EXPECT_EQ(engine_.count("start " + lifecycle_->name()), 0u);
}

TEST_F(EgressTrustTest, AnArchiveThatIsNotOneFileIsAStartError) {
  engine_.archives[kImageCaBundle] = std::string(1024, 'x');
  add_part();
  const auto err = lifecycle_->start();
  EXPECT_TRUE(has(err, "reading the image's CA bundle")) << err;
  EXPECT_TRUE(has(err, "not a tar archive")) << err;
}

TEST_F(EgressTrustTest, EveryCreateCopiesAgainARestartDoesNot) {
  add_part();
  ASSERT_EQ(lifecycle_->start(), "");
  std::vector<std::string> notices;
  // Stopped and started again: its volume kept the files.
  engine_.containers[lifecycle_->name()].state.running = false;
  ASSERT_EQ(lifecycle_->recover(notices), "");
  EXPECT_EQ(engine_.copies.size(), 1u);
  // Gone: made anew, with a new (empty) volume.
  engine_.containers.erase(lifecycle_->name());
  ASSERT_EQ(lifecycle_->recover(notices), "");
  ASSERT_EQ(engine_.copies.size(), 2u);
  EXPECT_FALSE(engine_.copies[1].running);
  EXPECT_EQ(asked_, 2);
}

TEST_F(EgressTrustTest, WithoutACaProviderNothingChanges) {
  part_ = std::make_unique<EgressTrustPart>(*lifecycle_, std::function<std::string()>{});
  lifecycle_->parts().add(*part_);
  ASSERT_EQ(lifecycle_->start(), "");
  EXPECT_TRUE(engine_.last_spec.volumes.empty());
  EXPECT_TRUE(engine_.copied_from.empty());
  EXPECT_TRUE(engine_.copies.empty());
}

TEST_F(EgressTrustTest, AnEmptyCaIsAStartError) {
  add_part("");
  const auto err = lifecycle_->start();
  EXPECT_TRUE(has(err, "egress CA is not there")) << err;
}

// The volume is a reserved path: no workspace may be mounted over it.
TEST(TrustDir, IsReservedForTheWorkspaceMountPoint) {
  sdk::BackendInit init;
  init.cwd = "/home/u/ws";
  init.paths = {{"/home/u/ws", true, {}}};
  init.sandbox_cwd = "/.execmcp-trust/ws";
  const auto err = check_sandbox_cwd(init, DockerSettings{});
  EXPECT_TRUE(has(err, "clashes with /.execmcp-trust")) << err;
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
