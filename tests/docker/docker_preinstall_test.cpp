// `preinstall` on the real engine, offline: a wheel and a .deb made here install into an image
// cached by content; a second agent with the same lists starts from that image and creates no
// install container; a failing install fails start() with its step and exit code, or, with
// preinstall_on_failure: continue, starts from the base image and says so.
#include <time.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "docker_test_support.hpp"

namespace execmcp::docker_test {
namespace {

// A name unique to this run: the fixtures' bytes differ from every earlier run, so the first
// agent really builds (an image cached by an earlier run would hide the build).
std::string run_tag() {
  static const std::string tag =
      "t" + std::to_string(::getpid()) + "x" + std::to_string(::time(nullptr));
  return tag;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Writes a wheel (module + METADATA, WHEEL, RECORD) with Python's zipfile; returns its path.
std::string make_wheel(const std::string& dir, const std::string& module,
                       const std::string& value) {
  const std::string path = dir + "/" + module + "-1.0-py3-none-any.whl";
  const std::string script =
      "import sys, zipfile\n"
      "path, mod, value = sys.argv[1:4]\n"
      "di = mod + '-1.0.dist-info'\n"
      "files = {mod + '.py': 'VALUE = %r\\n' % value,\n"
      "         di + '/METADATA': 'Metadata-Version: 2.1\\nName: %s\\nVersion: 1.0\\n' % mod,\n"
      "         di + '/WHEEL': 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\n"
      "Tag: py3-none-any\\n'}\n"
      "record = ''.join(name + ',,\\n' for name in files) + di + '/RECORD,,\\n'\n"
      "with zipfile.ZipFile(path, 'w') as z:\n"
      "    for name, text in files.items(): z.writestr(name, text)\n"
      "    z.writestr(di + '/RECORD', record)\n";
  write_file(dir + "/make_wheel.py", script);
  int status = 0;
  sh("python3 " + dir + "/make_wheel.py " + path + " " + module + " " + value, &status);
  EXPECT_EQ(status, 0);
  return path;
}

// Builds a .deb (package `name`, one file /usr/share/<name>/marker holding `value`) with
// dpkg-deb; returns its path.
std::string make_deb(const std::string& dir, const std::string& name, const std::string& value) {
  const std::string root = dir + "/debroot";
  fs::create_directories(root + "/DEBIAN");
  fs::create_directories(root + "/usr/share/" + name);
  write_file(root + "/DEBIAN/control", "Package: " + name +
                                           "\nVersion: 1.0\nArchitecture: all\nMaintainer: test "
                                           "<test@example.invalid>\nDescription: fixture\n");
  write_file(root + "/usr/share/" + name + "/marker", value + "\n");
  // Its install script records what the install runs with (the root it runs as may do little).
  write_file(root + "/DEBIAN/postinst",
             "#!/bin/sh\ngrep -E '^(CapEff|CapBnd|NoNewPrivs)' "
             "/proc/self/status > /usr/share/" +
                 name + "/caps\n");
  fs::permissions(root + "/DEBIAN/postinst", fs::perms(0755));
  const std::string path = dir + "/" + name + "_1.0_all.deb";
  int status = 0;
  sh("dpkg-deb --root-owner-group --build " + root + " " + path, &status);
  EXPECT_EQ(status, 0);
  return path;
}

std::string container_of(const BackendInit& init) {
  return "execmcp-" + init.agent_id + "-" + instance_tag();
}

std::string image_of_container(const std::string& container) {
  return trim(sh(outside_cli() + " inspect -f '{{.Image}}' " + container));
}

std::string label_of_image(const std::string& image, const std::string& label) {
  return trim(sh(outside_cli() + " image inspect -f '{{index .Config.Labels \"" + label + "\"}}' " +
                 image));
}

// The install containers the engine created since `since` (unix seconds) whose name starts with
// `prefix`: counted from the engine's events, as they are removed once the image is committed.
int install_containers_created(long since, const std::string& prefix) {
  const std::string names =
      sh(outside_cli() + " events --since " + std::to_string(since) + " --until " +
         std::to_string(::time(nullptr) + 1) +
         " --filter type=container --filter event=create --format '{{.Actor.Attributes.name}}'");
  int count = 0;
  std::size_t pos = 0;
  while (pos < names.size()) {
    const auto end = std::min(names.find('\n', pos), names.size());
    if (names.compare(pos, prefix.size(), prefix) == 0) ++count;
    pos = end + 1;
  }
  return count;
}

BackendInit agent(const std::string& id, const TempDir& ws, const std::string& settings) {
  BackendInit init;
  init.agent_id = id;
  init.cwd = ws.path();
  init.paths = {{ws.path(), true}};
  init.settings_json = settings;
  return init;
}

TEST(DockerPreinstall, LocalWheelAndDebInstallOnceAndTheSecondAgentUsesTheCachedImage) {
  REQUIRE_ENGINE();
  TempDir fixtures("pre-fix");
  TempDir ws1("pre-a"), ws2("pre-b");
  const std::string module = "execmcp_fixture_" + run_tag();
  const std::string wheel = make_wheel(fixtures.path(), module, run_tag());
  std::string deb_name = "execmcp-fixture-" + run_tag();
  const std::string deb = make_deb(fixtures.path(), deb_name, run_tag());
  const std::string settings =
      R"({"preinstall": {"system": [")" + deb + R"("], "python": [")" + wheel + R"("]}})";
  const long since = ::time(nullptr) - 1;

  std::string error;
  auto first = make_backend(agent("prea", ws1, settings), &error);
  ASSERT_TRUE(first) << error;
  ASSERT_EQ(first->start(), "");
  auto r =
      run(*first, "python3 -c 'import " + module + " as m; print(m.VALUE)' && cat /usr/share/" +
                      deb_name + "/marker && id -u && ls -a / | grep -c preinstall || true");
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.stdout_data, run_tag() + "\n" + run_tag() + "\n1000\n0\n") << r.stderr_data;
  EXPECT_TRUE(r.notices.empty()) << notices_of(r);
  // Issue 17: the install ran as root with only CHOWN, DAC_OVERRIDE, FOWNER, FSETID, SETGID and
  // SETUID (bits 0 1 3 4 6 7: 0xdb), and with no-new-privileges.
  r = run(*first, "cat /usr/share/" + deb_name + "/caps");
  EXPECT_EQ(r.stdout_data,
            "CapEff:\t00000000000000db\nCapBnd:\t00000000000000db\nNoNewPrivs:\t1\n");

  // The image the agent runs on: the cache image, labelled with its key, from the base image.
  const std::string image = image_of_container(container_of(agent("prea", ws1, settings)));
  ASSERT_FALSE(image.empty());
  const std::string key = label_of_image(image, "execmcp.cache.key");
  ASSERT_EQ(key.size(), 64u) << image;
  EXPECT_EQ(label_of_image(image, "execmcp.cache.base"),
            trim(sh(outside_cli() + " image inspect -f '{{.Id}}' " + kImage)));
  EXPECT_EQ(
      trim(sh(outside_cli() + " image inspect -f '{{.Id}}' execmcp/cache:" + key.substr(0, 16))),
      image);
  // The base image's run config is back (the install ran as root with its own command).
  EXPECT_EQ(trim(sh(outside_cli() + " image inspect -f '{{.Config.User}} {{json .Config.Cmd}}' " +
                    image)),
            "execmcp [\"sleep\",\"infinity\"]");
  const std::string prefix = "execmcp-preinstall-" + key.substr(0, 16) + "-";
  EXPECT_EQ(install_containers_created(since, prefix), 1);

  // The second agent with the same lists: the same image, and no install container.
  auto second = make_backend(agent("preb", ws2, settings), &error);
  ASSERT_TRUE(second) << error;
  ASSERT_EQ(second->start(), "");
  r = run(*second, "python3 -c 'import " + module + " as m; print(m.VALUE)'");
  EXPECT_EQ(r.stdout_data, run_tag() + "\n") << r.stderr_data;
  EXPECT_EQ(image_of_container(container_of(agent("preb", ws2, settings))), image);
  EXPECT_EQ(install_containers_created(since, prefix), 1);
  EXPECT_EQ(trim(sh(outside_cli() + " ps -a --filter name=" + prefix + " --format '{{.Names}}'")),
            "");  // the install container is gone

  first->cleanup();
  second->cleanup();
  sh(outside_cli() + " image rm --force " + image);
}

// Issue 17: an install file where an agent can write is refused: this agent's own at once (a
// config error), another running agent's at start, before any install container exists.
TEST(DockerPreinstall, AFileAnAgentCanWriteIsNeverInstalled) {
  REQUIRE_ENGINE();
  TempDir ws("pre-own"), other("pre-other");
  const std::string own_wheel = make_wheel(ws.path(), "execmcp_own_" + run_tag(), "x");
  std::string error;
  auto refused = make_backend(
      agent("preown", ws, R"({"preinstall": {"python": [")" + own_wheel + R"("]}})"), &error);
  EXPECT_FALSE(refused);
  EXPECT_NE(error.find("preinstall.python[0] '" + own_wheel + "': it lies inside '" + ws.path() +
                       "', which this agent can write"),
            std::string::npos)
      << error;

  auto neighbour = make_backend(agent("preother", other, "{}"), &error);
  ASSERT_TRUE(neighbour) << error;
  ASSERT_EQ(neighbour->start(), "");
  const std::string their_wheel = make_wheel(other.path(), "execmcp_theirs_" + run_tag(), "x");
  auto backend = make_backend(
      agent("prethem", ws, R"({"preinstall": {"python": [")" + their_wheel + R"("]}})"), &error);
  ASSERT_TRUE(backend) << error;
  const std::string failure = backend->start();
  EXPECT_NE(failure.find("preinstall.python[0] '" + their_wheel + "': it lies inside '" +
                         other.path() + "', which agent 'preother'"),
            std::string::npos)
      << failure;
  EXPECT_FALSE(container_exists(container_of(agent("prethem", ws, "{}"))));
  backend->cleanup();
  neighbour->cleanup();
}

TEST(DockerPreinstall, ACachedImageRemovedWhileTheAgentRunsIsBuiltAgainOnRecovery) {
  REQUIRE_ENGINE();
  TempDir fixtures("pre-gone");
  TempDir ws("pre-f");
  const std::string module = "execmcp_gone_" + run_tag();
  const std::string wheel = make_wheel(fixtures.path(), module, "again");
  const std::string settings = R"({"preinstall": {"python": [")" + wheel + R"("]}})";
  std::string error;
  auto backend = make_backend(agent("pref", ws, settings), &error);
  ASSERT_TRUE(backend) << error;
  ASSERT_EQ(backend->start(), "");
  const std::string container = container_of(agent("pref", ws, settings));
  const std::string image = image_of_container(container);
  ASSERT_FALSE(image.empty());
  // Someone removes the container and prunes the image.
  sh(outside_cli() + " rm --force " + container);
  sh(outside_cli() + " image rm --force " + image);
  auto r = run(*backend, "python3 -c 'import " + module + " as m; print(m.VALUE)'");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.stdout_data, "again\n") << r.stderr_data;
  EXPECT_TRUE(has_notice(r, "container was recreated")) << notices_of(r);
  const std::string rebuilt = image_of_container(container);
  EXPECT_FALSE(rebuilt.empty());
  backend->cleanup();
  sh(outside_cli() + " image rm --force " + rebuilt);
}

// network: egress: the install container reaches out through the agent's proxy, under its policy.
// The wheel is served by a container on an internal test network as allowed.test and denied.test;
// pip fetches it by URL (its proxy variables come from the install script).
TEST(DockerPreinstall, WithEgressTheInstallGoesThroughTheAgentsProxyUnderItsPolicy) {
  REQUIRE_ENGINE();
  if (under_gvisor()) {
    // runsc as registered here (--network=none) has loopback only: egress is refused at start.
    TempDir ws("pre-e");
    std::string error;
    auto refused =
        make_backend(agent("preeg", ws,
                           R"({"network": "egress", "egress": {"allow": ["allowed.test"]},
                  "preinstall": {"python": ["requests"]}})"),
                     &error);
    ASSERT_TRUE(refused) << error;
    const auto why = refused->start();
    EXPECT_NE(why.find("'network: egress' cannot apply"), std::string::npos) << why;
    refused->cleanup();
    return;
  }
  int status = 0;
  sh(outside_cli() + " image inspect execmcp/egress:latest", &status);
  if (status != 0)
    GTEST_SKIP() << "image execmcp/egress:latest is missing: SKIPPING (docker/build.sh --egress)";
  TempDir fixtures("pre-egress");
  TempDir ws("pre-e");
  fs::permissions(fixtures.path(), fs::perms(0755));
  const std::string module = "execmcp_egress_" + run_tag();
  const std::string wheel = make_wheel(fixtures.path(), module, run_tag());
  const std::string file = fs::path(wheel).filename().string();
  const std::string net = "execmcp-pretest-" + run_tag() + "-up";
  const std::string server = "execmcp-pretest-" + run_tag() + "-srv";
  sh(outside_cli() + " network create --internal " + net);
  sh(outside_cli() + " run -d --name " + server + " --network " + net +
     " --network-alias allowed.test --network-alias denied.test -u 0 -v " + fixtures.path() +
     ":/srv:ro " + kImage + " python3 -m http.server 80 --directory /srv");
  const auto settings = [&](const std::string& host) {
    return R"({"network": "egress", "egress": {"allow": ["allowed.test"], "upstream_network": ")" +
           net + R"("}, "preinstall": {"python": ["http://)" + host + "/" + file + R"("]}})";
  };

  std::string error;
  auto allowed = make_backend(agent("preeg", ws, settings("allowed.test")), &error);
  ASSERT_TRUE(allowed) << error;
  EXPECT_EQ(allowed->start(), "");
  auto r = run(*allowed, "python3 -c 'import " + module +
                             " as m; print(m.VALUE)'; env | grep -c "
                             "'^HTTP_PROXY=' ");
  EXPECT_EQ(r.stdout_data, run_tag() + "\n1\n") << r.stderr_data;
  const std::string image = image_of_container(container_of(agent("preeg", ws, "")));
  // The image keeps none of the install's proxy variables (the agent's own come from its spec).
  EXPECT_EQ(
      trim(sh(outside_cli() + " image inspect -f '{{json .Config.Env}}' " + image)).find("PROXY"),
      std::string::npos);
  allowed->cleanup();

  auto denied = make_backend(agent("preeg", ws, settings("denied.test")), &error);
  ASSERT_TRUE(denied) << error;
  const std::string failure = denied->start();
  EXPECT_NE(failure.find("preinstall failed at step python"), std::string::npos) << failure;
  EXPECT_NE(failure.find("403"), std::string::npos) << failure;  // pip names the proxy's answer
  denied->cleanup();
  // Nothing of either agent is left: no container, proxy or network. By this run's own names:
  // the suite's run through the other backend may have its own "preeg" agent up at the same time.
  const std::string name = container_of(agent("preeg", ws, ""));
  const auto left = [&](const std::string& listing) {
    std::string found;
    std::istringstream names(sh(outside_cli() + " " + listing + " --filter name=" + name));
    for (std::string line; std::getline(names, line);)
      if (line == name || line == name + "-egress" || line == name + "-egress-net")
        found += line + " ";
    return found;
  };
  EXPECT_EQ(left("ps -a --format '{{.Names}}'"), "");
  EXPECT_EQ(left("network ls --format '{{.Name}}'"), "");

  sh(outside_cli() + " rm -f " + server);
  sh(outside_cli() + " network rm " + net);
  if (!image.empty()) sh(outside_cli() + " image rm --force " + image);
}

TEST(DockerPreinstall, AFailingInstallFailsStartWithItsStepAndExitCode) {
  REQUIRE_ENGINE();
  TempDir fixtures("pre-bad");
  TempDir ws("pre-c");
  const std::string broken = fixtures.path() + "/broken_" + run_tag() + "-1.0-py3-none-any.whl";
  write_file(broken, "this is not a zip file");
  std::string error;
  auto backend = make_backend(
      agent("prec", ws, R"({"preinstall": {"python": [")" + broken + R"("]}})"), &error);
  ASSERT_TRUE(backend) << error;
  const std::string failure = backend->start();
  EXPECT_NE(failure.find("preinstall failed at step python (exit code 1)"), std::string::npos)
      << failure;
  EXPECT_NE(failure.find("broken_"), std::string::npos) << failure;  // pip's words, from the log
  backend->cleanup();
}

TEST(DockerPreinstall, WithContinueTheAgentStartsFromTheBaseImageAndIsTold) {
  REQUIRE_ENGINE();
  TempDir fixtures("pre-cont");
  TempDir ws("pre-d");
  const std::string broken = fixtures.path() + "/broken_" + run_tag() + "-1.0-py3-none-any.whl";
  write_file(broken, "this is not a zip file");
  const std::string settings = R"({"preinstall_on_failure": "continue",
      "preinstall": {"python": [")" +
                               broken + R"("]}})";
  std::string error;
  auto backend = make_backend(agent("pred", ws, settings), &error);
  ASSERT_TRUE(backend) << error;
  ASSERT_EQ(backend->start(), "");
  auto r = run(*backend, "echo ran");
  EXPECT_EQ(r.stdout_data, "ran\n");
  EXPECT_TRUE(has_notice(r, "preinstall failed at step python (exit code 1)")) << notices_of(r);
  EXPECT_TRUE(has_notice(r, "without these packages")) << notices_of(r);
  EXPECT_EQ(image_of_container(container_of(agent("pred", ws, settings))),
            trim(sh(outside_cli() + " image inspect -f '{{.Id}}' " + kImage)));
  r = run(*backend, "echo again");  // told once
  EXPECT_TRUE(r.notices.empty()) << notices_of(r);
  backend->cleanup();
}

TEST(DockerPreinstall, NpmWithoutNpmInTheImageSaysWhatToAdd) {
  REQUIRE_ENGINE();
  if (trim(sh(outside_cli() + " run --rm --network=none --entrypoint=/bin/sh " + kImage +
              " -c 'command -v npm'")) != "")
    GTEST_SKIP() << kImage << " has npm";
  TempDir ws("pre-e");
  std::string error;
  auto backend = make_backend(
      agent("pree", ws, R"({"preinstall": {"npm": ["left-pad-)" + run_tag() + R"("]}})"), &error);
  ASSERT_TRUE(backend) << error;
  const std::string failure = backend->start();
  EXPECT_NE(failure.find("preinstall failed at step npm (exit code 127)"), std::string::npos)
      << failure;
  EXPECT_NE(failure.find("npm is not in the image; add nodejs and npm to system"),
            std::string::npos)
      << failure;
  backend->cleanup();
}

}  // namespace
}  // namespace execmcp::docker_test
