// Tests for attach mode's checks of a container execmcp does not manage: its user and its mounts.
#include "docker_common/parts/attached_container.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace execmcp::plugins::docker_common {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(AttachedContainer, TheUserIsTheConfiguredOneElseTheContainersNonRootOne) {
  std::string error;
  EXPECT_EQ(attached_user("c", "1234", "", error), "1234");
  EXPECT_EQ(attached_user("c", "", "1000:1000", error), "1000:1000");
  EXPECT_EQ(attached_user("c", "", "massgen", error), "massgen");
  EXPECT_EQ(error, "");
  for (const char* root : {"", "root", "0", "0:0", "root:root"}) {
    error.clear();
    EXPECT_EQ(attached_user("c", "", root, error), "") << root;
    EXPECT_TRUE(has(error, "runs as root")) << error;
    EXPECT_TRUE(has(error, "'user'")) << error;
  }
}

TEST(AttachedContainer, NotRunningSaysToStartIt) {
  const auto text = attached_not_running("massgen-a");
  EXPECT_TRUE(has(text, "container massgen-a is not running; start it")) << text;
  EXPECT_TRUE(has(text, "does not manage attached containers")) << text;
}

TEST(AttachedContainer, EveryGrantMustBeVisibleAtItsPathWithItsAccess) {
  const std::vector<sdk::PathGrant> grants = {{"/srv/ws", true}, {"/data/ctx", false}};
  // Same paths, the workspace through a parent mount.
  const std::vector<ContainerMount> good = {{"bind", "/srv", "/srv", true},
                                            {"bind", "/data/ctx", "/data/ctx", false},
                                            {"tmpfs", "", "/tmp", true}};
  EXPECT_EQ(check_attached_mounts("c", grants, good, false), "");

  // Not mounted at all.
  auto e = check_attached_mounts("c", grants, {good[0]}, false);
  EXPECT_TRUE(has(e, "does not show '/data/ctx' at the same path")) << e;
  // Mounted at another path (the host's /other shows at /srv).
  e = check_attached_mounts("c", grants, {{"bind", "/other", "/srv", true}, good[1]}, false);
  EXPECT_TRUE(has(e, "'/srv/ws'")) << e;
  // A named volume at the path is not the host's directory.
  e = check_attached_mounts(
      "c", grants, {{"volume", "/var/lib/docker/volumes/v/_data", "/srv/ws", true}, good[1]},
      false);
  EXPECT_TRUE(has(e, "'/srv/ws'")) << e;
  // A deeper mount hides the parent's view: the deepest decides.
  e = check_attached_mounts("c", grants,
                            {good[0], {"bind", "/elsewhere", "/srv/ws", true}, good[1]}, false);
  EXPECT_TRUE(has(e, "'/srv/ws'")) << e;
  // "/srvx" does not cover "/srv/ws".
  e = check_attached_mounts("c", {{"/srv/ws", true}}, {{"bind", "/srvx", "/srvx", true}}, false);
  EXPECT_TRUE(has(e, "'/srv/ws'")) << e;

  // The workspace read-only: refused whatever the option says.
  e = check_attached_mounts("c", grants, {{"bind", "/srv", "/srv", false}, good[1]}, true);
  EXPECT_TRUE(has(e, "read-only, but '/srv/ws' is writable")) << e;
  // A read-only grant mounted writable: refused unless accepted.
  const std::vector<ContainerMount> rw_ctx = {good[0], {"bind", "/data", "/data", true}};
  e = check_attached_mounts("c", grants, rw_ctx, false);
  EXPECT_TRUE(has(e, "read-write, but '/data/ctx' is read-only")) << e;
  EXPECT_TRUE(has(e, "attach_accept_writable_context")) << e;
  EXPECT_EQ(check_attached_mounts("c", grants, rw_ctx, true), "");
}

TEST(AttachedContainer, AProtectedPathMustShowReadOnly) {
  const std::vector<sdk::PathGrant> grants = {{"/srv/ws", true, {"/srv/ws/.git"}}};
  const ContainerMount ws{"bind", "/srv/ws", "/srv/ws", true};
  auto e = check_attached_mounts("c", grants, {ws}, false);
  EXPECT_TRUE(has(e, "read-write, but '/srv/ws/.git' is read-only")) << e;
  EXPECT_EQ(check_attached_mounts("c", grants,
                                  {ws, {"bind", "/srv/ws/.git", "/srv/ws/.git", false}}, false),
            "");
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
