// Tests for `preinstall` without an engine: local files, the cache key, the install script, the
// failure message and the commit's config in both renderings.
#include "docker_common/parts/preinstall.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace execmcp::plugins::docker_common {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "execmcp-preinstall-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  // Writes `text` at `name` under the directory and returns its absolute path.
  std::string file(const std::string& name, const std::string& text) const {
    const fs::path p = fs::path(path_) / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

PreinstallSettings lists(std::vector<std::string> system, std::vector<std::string> python,
                         std::vector<std::string> npm = {}) {
  PreinstallSettings s;
  s.system = std::move(system);
  s.python = std::move(python);
  s.npm = std::move(npm);
  return s;
}

std::string key_of(const std::string& base, const PreinstallSettings& s) {
  const auto plan = plan_preinstall(s);
  EXPECT_EQ(plan.error, "");
  return preinstall_key(base, plan);
}

TEST(PreinstallKey, IsSha256OfBaseAndListsInOrder) {
  const auto k = key_of("sha256:base", lists({"curl"}, {"requests"}));
  EXPECT_EQ(k.size(), 64u);
  EXPECT_EQ(k.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(k, key_of("sha256:base", lists({"curl"}, {"requests"})));
  EXPECT_NE(k, key_of("sha256:other", lists({"curl"}, {"requests"})));  // a rebuilt base
  EXPECT_NE(k, key_of("sha256:base", lists({"curl"}, {"requests", "x"})));
  EXPECT_NE(k, key_of("sha256:base", lists({}, {"curl", "requests"})));  // lists stay apart
  EXPECT_NE(key_of("b", lists({}, {"a", "b"})), key_of("b", lists({}, {"b", "a"})));  // order
  EXPECT_NE(key_of("b", lists({}, {"ab"})), key_of("b", lists({}, {"a", "b"})));
  EXPECT_EQ(cache_tag(k), "execmcp/cache:" + k.substr(0, 16));
}

TEST(PreinstallKey, ALocalFileCountsByItsContentAndNameNotWhereItLies) {
  TempDir a, b;
  const auto in_a = a.file("pkg-1.0-py3-none-any.whl", "wheel bytes");
  const auto in_b = b.file("sub/pkg-1.0-py3-none-any.whl", "wheel bytes");
  EXPECT_EQ(key_of("base", lists({}, {in_a})), key_of("base", lists({}, {in_b})));
  const auto changed = b.file("pkg-1.0-py3-none-any.whl", "other bytes");
  EXPECT_NE(key_of("base", lists({}, {in_a})), key_of("base", lists({}, {changed})));
  const auto renamed = b.file("pkg-2.0-py3-none-any.whl", "wheel bytes");
  EXPECT_NE(key_of("base", lists({}, {in_a})), key_of("base", lists({}, {renamed})));
}

TEST(PreinstallPlan, ReadsLocalFilesAndNamesThemByTheirContainerPath) {
  TempDir d;
  const auto deb = d.file("hello_1.0_all.deb", "deb");
  const auto whl = d.file("w-1-py3-none-any.whl", "whl");
  const auto plan = plan_preinstall(lists({"curl", deb}, {whl, "requests"}));
  ASSERT_EQ(plan.error, "");
  ASSERT_EQ(plan.files.size(), 2u);
  EXPECT_EQ(plan.files[0].data, "deb");
  EXPECT_EQ(plan.files[0].sha256, sha256_hex("deb"));
  EXPECT_EQ(plan.system,
            (std::vector<std::string>{"curl", "/.execmcp-preinstall/0/hello_1.0_all.deb"}));
  EXPECT_EQ(plan.python,
            (std::vector<std::string>{"/.execmcp-preinstall/1/w-1-py3-none-any.whl", "requests"}));
  // The archive holds both files at those paths (ustar: name at 0, prefix at 345).
  const auto tar = preinstall_tar(plan);
  EXPECT_EQ(tar.size() % 512, 0u);
  EXPECT_NE(tar.find(".execmcp-preinstall/1/w-1-py3-none-any.whl"), std::string::npos);
}

TEST(PreinstallPlan, ALongFileNameGoesIntoUstarsPrefixAndName) {
  TempDir d;
  // 95 bytes: with ".execmcp-preinstall/0/" in front, more than ustar's 100-byte name.
  const std::string name = std::string(74, 'n') + "-1.0-py3-none-any.whl";
  const auto plan = plan_preinstall(lists({}, {d.file(name, "whl")}));
  ASSERT_EQ(plan.error, "");
  const auto tar = preinstall_tar(plan);
  // Members: the two directories, then the file's header at block 2.
  const std::string header = tar.substr(2 * 512, 512);
  // A reader joins prefix "/" name (the split is at a '/' where both parts fit).
  EXPECT_EQ(std::string(header.c_str() + 345) + "/" + std::string(header.c_str()),
            ".execmcp-preinstall/0/" + name);
  EXPECT_LE(std::string(header.c_str()).size(), 100u);
  // A name too long for any split is refused when the plan is made.
  const std::string huge(101, 'h');
  EXPECT_NE(plan_preinstall(lists({}, {d.file(huge, "x")})).error.find("1 to 100 bytes"),
            std::string::npos);
}

TEST(PreinstallPlan, AMissingFileOrADirectoryIsAnErrorNamingTheEntry) {
  TempDir d;
  auto plan = plan_preinstall(lists({}, {d.path() + "/nope.whl"}));
  EXPECT_EQ(plan.error,
            "preinstall.python[0] '" + d.path() + "/nope.whl': No such file or directory");
  plan = plan_preinstall(lists({}, {}, {"left-pad", d.path()}));
  EXPECT_EQ(plan.error, "preinstall.npm[1] '" + d.path() + "': not a regular file");
  // The same, before any read (what the backend's constructor says).
  EXPECT_EQ(check_preinstall_files(lists({}, {d.path() + "/nope.whl"})),
            "preinstall.python[0] '" + d.path() + "/nope.whl': No such file or directory");
  EXPECT_EQ(check_preinstall_files(lists({}, {}, {"left-pad", d.path()})),
            "preinstall.npm[1] '" + d.path() + "': not a regular file");
  EXPECT_EQ(check_preinstall_files(lists({"jq"}, {d.file("ok.whl", "x")})), "");
}

// Issue 17: the install runs its local files as root, so none may lie where an agent can write
// (this one's grants, another agent's mounts), nor be reached through a symlink.
TEST(PreinstallInputs, AFileAnAgentCanWriteIsRefusedNamingTheEntryAndWho) {
  TempDir d;
  const std::string deb = d.file("ws/pkg.deb", "x");
  const std::string outside = d.file("debs/ok.deb", "x");
  const std::vector<WritableRoot> roots = {{d.path() + "/ws", "this agent"},
                                           {d.path() + "/other", "agent 'b' (container c)"}};
  EXPECT_EQ(check_preinstall_inputs(lists({"jq", outside}, {}), roots), "");
  EXPECT_EQ(check_preinstall_inputs(lists({"jq", deb}, {}), roots),
            "preinstall.system[1] '" + deb + "': it lies inside '" + d.path() +
                "/ws', which this agent can write: that agent could replace it at any moment, "
                "and the install runs it as root. Keep install files outside every path an agent "
                "can write");
  const std::string theirs = d.file("other/deep/w.whl", "x");
  const auto err = check_preinstall_inputs(lists({}, {"requests", theirs}), roots);
  EXPECT_EQ(err.rfind("preinstall.python[1] '" + theirs + "': it lies inside '" + d.path() +
                          "/other', which agent 'b' (container c) can write",
                      0),
            0u)
      << err;
  fs::create_directory_symlink(d.path() + "/debs", d.path() + "/link");
  EXPECT_NE(check_preinstall_inputs(lists({}, {}, {d.path() + "/link/ok.deb"}), roots)
                .find("'" + d.path() + "/link' is a symlink; a local file is never reached"),
            std::string::npos);
  EXPECT_NE(check_preinstall_inputs(lists({d.path() + "/debs/../ws/pkg.deb"}, {}), roots)
                .find("absolute path without '.', '..'"),
            std::string::npos);
}

TEST(PreinstallScript, FollowsMassGensOrderWithEveryEntryQuoted) {
  TempDir d;
  const auto deb = d.file("x_1_all.deb", "d");
  const auto plan = plan_preinstall(lists({"curl", deb}, {"it's"}, {"left-pad"}));
  const auto s = preinstall_script(plan);
  const auto update = s.find("apt-get update\n");
  const auto apt = s.find(
      "apt-get install -y --no-install-recommends 'curl' '/.execmcp-preinstall/0/x_1_all.deb'\n");
  const auto pip =
      s.find("PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir 'it'\\''s'\n");
  const auto npm = s.find("npm install -g 'left-pad'\n");
  ASSERT_NE(update, std::string::npos) << s;
  ASSERT_NE(apt, std::string::npos) << s;
  ASSERT_NE(pip, std::string::npos) << s;
  ASSERT_NE(npm, std::string::npos) << s;
  EXPECT_LT(update, apt);
  EXPECT_LT(apt, pip);
  EXPECT_LT(pip, npm);
  EXPECT_NE(s.find("npm is not in the image; add nodejs and npm to system"), std::string::npos);
  // The copied files do not stay in the image.
  EXPECT_NE(s.find("rm -rf /.execmcp-preinstall"), std::string::npos);
}

TEST(PreinstallScript, OnlyLocalDebsNeedNoAptUpdateAndEmptyListsNoStep) {
  TempDir d;
  const auto deb = d.file("x_1_all.deb", "d");
  const auto s = preinstall_script(plan_preinstall(lists({deb}, {})));
  EXPECT_EQ(s.find("apt-get update"), std::string::npos) << s;
  EXPECT_NE(s.find("apt-get install"), std::string::npos) << s;
  EXPECT_EQ(s.find("pip install"), std::string::npos) << s;
  EXPECT_EQ(s.find("npm install"), std::string::npos) << s;
  const auto p = preinstall_script(plan_preinstall(lists({}, {"x"})));
  EXPECT_EQ(p.find("apt-get"), std::string::npos) << p;
}

TEST(PreinstallFailure, NamesTheStepTheExitCodeAndTheLastLines) {
  std::string log = "execmcp-preinstall: step system\n";
  for (int i = 0; i < 50; ++i) log += "line " + std::to_string(i) + "\n";
  log += "execmcp-preinstall: step python\nERROR: broken wheel\n";
  const auto m = preinstall_failure(log, 1);
  EXPECT_EQ(
      m.rfind("preinstall failed at step python (exit code 1); the last lines of its log:", 0), 0u)
      << m;
  EXPECT_NE(m.find("ERROR: broken wheel"), std::string::npos);
  EXPECT_NE(m.find("line 49"), std::string::npos);
  EXPECT_EQ(m.find("line 20\n"), std::string::npos);  // only the last 30 lines
  EXPECT_EQ(std::count(m.begin(), m.end(), '\n'), 30);
  EXPECT_EQ(failed_step("no marker"), "setup");
}

TEST(PreinstallCommit, RestoresTheBaseConfigInBothRenderings) {
  CommitOptions c;
  c.user = "execmcp";
  c.cmd = {"sleep", "infinity"};
  c.entrypoint = {"/usr/bin/tini", "--"};
  c.labels = {{"execmcp.cache.lists", R"({"python":["a$B\"c"]})"}};
  const auto body = commit_config(c);
  EXPECT_EQ(body["User"], "execmcp");
  EXPECT_EQ(body["Cmd"], (nlohmann::json{"sleep", "infinity"}));
  EXPECT_EQ(body["Entrypoint"], (nlohmann::json{"/usr/bin/tini", "--"}));
  EXPECT_EQ(body["Labels"]["execmcp.cache.lists"], R"({"python":["a$B\"c"]})");
  EXPECT_EQ(commit_changes(c), (std::vector<std::string>{
                                   "USER execmcp", R"(CMD ["sleep","infinity"])",
                                   R"(ENTRYPOINT ["/usr/bin/tini","--"])",
                                   R"(LABEL execmcp.cache.lists="{\"python\":[\"a\$B\\\"c\"]}")"}));
  // An image whose user is root keeps an empty user: nothing to restore.
  EXPECT_FALSE(commit_config(CommitOptions{}).contains("User"));
}

TEST(PreinstallContainer, RunsOnlyTheScriptAsRootWithNoEnvironment) {
  InstallSpec spec;
  spec.name = "execmcp-preinstall-x";
  spec.image = "sha256:base";
  spec.user = "0:0";
  spec.cmd = {"/bin/sh", "-eu", "-c", "true"};
  spec.network = "bridge";
  const auto body = install_create_body(spec);
  EXPECT_EQ(body["User"], "0:0");
  EXPECT_EQ(body["Cmd"], (nlohmann::json{"/bin/sh", "-eu", "-c", "true"}));
  EXPECT_FALSE(body.contains("Env"));
  EXPECT_FALSE(body.contains("Labels"));  // a label would be committed into the image
  EXPECT_EQ(body["HostConfig"]["NetworkMode"], "bridge");
  EXPECT_EQ(body["HostConfig"]["SecurityOpt"], (nlohmann::json{"no-new-privileges"}));
  // Root without Docker's default capabilities: only what dpkg and apt need.
  EXPECT_EQ(body["HostConfig"]["CapDrop"], (nlohmann::json{"ALL"}));
  EXPECT_EQ(body["HostConfig"]["CapAdd"],
            (nlohmann::json{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID",
                            "CAP_SETGID", "CAP_SETUID"}));
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
