// The sandbox's trust files (parts/egress_trust.hpp) on the REAL engine, through both engines and
// under runc and runsc (gVisor): Engine::copy_from() on a created, never started container (a
// file, a symlink, a missing path, an archive past the bound), and EgressTrustPart putting the
// image's bundle plus a test CA into the anonymous volume at /.execmcp-trust before the container
// starts: the container's user reads both files (openssl verifies a leaf of the CA against the
// bundle) and can change neither; a container made anew gets them again.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "docker_api_engine.hpp"
#include "docker_cli/docker_cli_engine.hpp"
#include "docker_common/engine/tar_archive.hpp"
#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "docker_common/parts/egress_trust.hpp"
#include "egress/secret_upstream.hpp"

namespace execmcp::docker_test {
namespace {

namespace dc = plugins::docker_common;
using Kind = dc::EngineError::Kind;

struct Column {
  std::string engine;   // api | cli
  std::string runtime;  // "" (the engine's default) | runsc
};

std::string column_name(const ::testing::TestParamInfo<Column>& info) {
  return info.param.engine + (info.param.runtime.empty() ? "_runc" : "_" + info.param.runtime);
}

class TrustFiles : public ::testing::TestWithParam<Column> {
 protected:
  void SetUp() override {
    REQUIRE_ENGINE();
    nlohmann::json settings = {{"exec_mode", "exec"}};
    if (!GetParam().runtime.empty()) settings["runtime"] = GetParam().runtime;
    const auto kind = GetParam().engine == "api" ? dc::EngineKind::kApi : dc::EngineKind::kCli;
    settings_ = dc::parse_docker_settings(settings.dump(), kind);
    if (GetParam().engine == "api")
      engine_ = std::make_unique<plugins::docker_api::DockerApiEngine>(settings_.docker_host);
    else
      engine_ = std::make_unique<plugins::docker_cli::DockerCliEngine>(settings_);
    ASSERT_TRUE(engine_->connect().ok());
    if (!engine_->check_image(settings_.image).ok())
      GTEST_SKIP() << settings_.image << " is missing (docker/build.sh)";
    if (!GetParam().runtime.empty()) {
      dc::RuntimeList runtimes;
      if (!engine_->runtimes(runtimes).ok() || !runtimes.contains(GetParam().runtime))
        GTEST_SKIP() << "the engine has no runtime " << GetParam().runtime
                     << " (scripts/docker-engine.sh registers runsc)";
    }
    tag_ = "t" + std::to_string(::getpid()) + "-" +
           column_name(::testing::TestParamInfo<Column>(GetParam(), 0));
    std::replace(tag_.begin(), tag_.end(), '_', '-');
  }

  // Whatever an assertion left behind.
  void TearDown() override {
    if (engine_ && !tag_.empty()) engine_->remove(copy_container());
  }
  [[nodiscard]] std::string copy_container() const { return "execmcp-trustcopy-" + tag_; }

  dc::DockerSettings settings_;
  std::unique_ptr<dc::Engine> engine_;
  std::string tag_;
};

TEST_P(TrustFiles, CopyFromReadsACreatedContainersFilesWithinItsBound) {
  dc::ContainerSpec spec;
  spec.name = copy_container();
  spec.image = settings_.image;
  spec.user = "1000:1000";
  spec.runtime = GetParam().runtime;
  spec.cmd = {"sleep", "infinity"};
  spec.labels = {{"execmcp.test", "trust-files"}};
  ASSERT_TRUE(engine_->create(spec).ok());  // never started

  std::string tar;
  auto err = engine_->copy_from(spec.name, dc::kImageCaBundle, tar);
  ASSERT_TRUE(err.ok()) << err.message;
  dc::TarEntry entry;
  ASSERT_EQ(dc::read_tar_entry(tar, entry), "");
  EXPECT_EQ(entry.type, dc::TarEntry::Type::kFile);
  EXPECT_EQ(entry.name, "ca-certificates.crt");
  EXPECT_TRUE(entry.data.starts_with("-----BEGIN CERTIFICATE-----")) << entry.data.substr(0, 64);
  EXPECT_GT(entry.data.size(), 100000u);

  // Debian 12's /bin is a symlink (merged /usr): given as the link, not followed.
  err = engine_->copy_from(spec.name, "/bin", tar);
  ASSERT_TRUE(err.ok()) << err.message;
  ASSERT_EQ(dc::read_tar_entry(tar, entry), "");
  EXPECT_EQ(entry.type, dc::TarEntry::Type::kSymlink);
  EXPECT_EQ(entry.link_target, "usr/bin");

  EXPECT_EQ(engine_->copy_from(spec.name, "/no/such/file", tar).kind, Kind::kNotFound);
  EXPECT_EQ(engine_->copy_from(spec.name + "-none", dc::kImageCaBundle, tar).kind, Kind::kNotFound);
  err = engine_->copy_from(spec.name, "/usr/lib", tar);
  EXPECT_EQ(err.kind, Kind::kOther);
  EXPECT_NE(err.message.find("larger than 8 MiB"), std::string::npos) << err.message;
  EXPECT_TRUE(tar.empty());
  EXPECT_TRUE(engine_->remove(spec.name).ok());
}

TEST_P(TrustFiles, TheSandboxReadsTheBundleButCannotChangeIt) {
  TempDir certs("trustca"), ws("trustws");
  ASSERT_EQ(make_test_certs(certs.path(), {"trust.test"}), "");
  const std::string ca = read_host_file(certs.path() + "/ca.pem");
  ASSERT_EQ(::chown(ws.path().c_str(), 1000, 1000), 0);  // the commands' user owns it
  BackendInit init;
  init.agent_id = "trust";
  init.instance_id = tag_;
  init.cwd = ws.path();
  init.paths = {{ws.path(), true}};
  init.log = &g_log;
  dc::ContainerLifecycle lifecycle(init, "docker-" + GetParam().engine, settings_, *engine_);
  int asked = 0;
  dc::EgressTrustPart part(lifecycle, [&] {
    ++asked;
    return ca;
  });
  lifecycle.parts().add(part);
  struct Removal {
    dc::ContainerLifecycle& lifecycle;
    ~Removal() { lifecycle.remove_container(); }
  } removal{lifecycle};
  ASSERT_EQ(lifecycle.start(), "");
  const std::string name = lifecycle.name();
  const std::string exec = outside_cli() + " exec " + name + " ";

  EXPECT_EQ(trim(sh(exec + "id -u")), "1000");
  // Owner and mode through Python: gVisor's statx refuses coreutils' `stat` (EINVAL).
  EXPECT_EQ(sh(exec + "python3 -c 'import os, sys; [print(os.stat(p).st_uid, "
                      "format(os.stat(p).st_mode & 0o7777, \"o\")) for p in sys.argv[1:]]' "
                      "/.execmcp-trust /.execmcp-trust/ca.pem /.execmcp-trust/ca-bundle.pem"),
            "0 755\n0 444\n0 444\n");
  EXPECT_EQ(sh(exec + "cat /.execmcp-trust/ca.pem"), ca);
  const std::string image_bundle = sh(exec + "cat " + dc::kImageCaBundle);
  ASSERT_FALSE(image_bundle.empty());
  EXPECT_EQ(sh(exec + "cat /.execmcp-trust/ca-bundle.pem"), dc::trust_bundle(image_bundle, ca));
  // A leaf of the CA verifies against the bundle, as a client of an intercepted host would.
  EXPECT_EQ(trim(sh(outside_cli() + " exec -i " + name +
                    " openssl verify -CAfile /.execmcp-trust/ca-bundle.pem < " + certs.path() +
                    "/server.pem")),
            "stdin: OK");

  // Neither the files nor the directory can be changed by the container's user.
  EXPECT_EQ(sh(exec + "sh -c 'echo x >> /.execmcp-trust/ca.pem || echo no-append; "
                      "echo x > /.execmcp-trust/ca-bundle.pem || echo no-write; "
                      "touch /.execmcp-trust/new || echo no-create; "
                      "rm -f /.execmcp-trust/ca.pem || echo no-remove; "
                      "chmod 666 /.execmcp-trust/ca.pem || echo no-chmod; "
                      "mv /.execmcp-trust/ca.pem /tmp/ || echo no-move'"),
            "no-append\nno-write\nno-create\nno-remove\nno-chmod\nno-move\n");
  EXPECT_EQ(sh(exec + "cat /.execmcp-trust/ca.pem"), ca);

  // Removed from outside: the container made anew has the files again (its volume is new).
  sh(outside_cli() + " rm -f " + name);
  std::vector<std::string> notices;
  ASSERT_EQ(lifecycle.recover(notices), "");
  EXPECT_EQ(sh(exec + "cat /.execmcp-trust/ca.pem"), ca);
  EXPECT_EQ(asked, 2);

  lifecycle.remove_container();
  EXPECT_FALSE(container_exists(name));
}

INSTANTIATE_TEST_SUITE_P(EnginesAndRuntimes, TrustFiles,
                         ::testing::Values(Column{"api", ""}, Column{"cli", ""},
                                           Column{"api", "runsc"}, Column{"cli", "runsc"}),
                         column_name);

}  // namespace
}  // namespace execmcp::docker_test
