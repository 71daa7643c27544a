// The Docker options of issue 11 on the real engine, for each backend and exec_mode: credentials
// (every mount kind and every env source reach the container; no secret value shows in `docker
// inspect`, the plugin's log or any host process's argv), `sudo` (works only when enabled) and
// protected paths (read-only inside the writable workspace).
#include <dirent.h>
#include <stdlib.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "docker_test_support.hpp"

namespace execmcp::docker_test {
namespace {

constexpr const char* kSudoImage = "execmcp/runtime-sudo:latest";

// Keeps every log line of the plugin, to look for secrets in them.
struct CapturingLog : execmcp::sdk::LogSink {
  void log(execmcp::sdk::LogLevel, std::string_view message) noexcept override {
    std::lock_guard lock(mutex);
    text.append(message).append("\n");
    std::fprintf(stderr, "  [plugin] %.*s\n", static_cast<int>(message.size()), message.data());
  }
  std::string all() {
    std::lock_guard lock(mutex);
    return text;
  }
  std::mutex mutex;
  std::string text;
};

std::unique_ptr<ExecutorBackend> create(BackendInit init, CapturingLog& log, std::string& error) {
  auto& factory = plugin().get_alias<execmcp::sdk::BackendFactory>("execmcp_create_backend");
  if (init.instance_id.empty()) init.instance_id = instance_tag();
  init.log = &log;
  init.settings_json = with_test_settings(init.settings_json);
  return std::unique_ptr<ExecutorBackend>(factory(init, error));
}

std::string container_of(const BackendInit& init) {
  return "execmcp-" + init.agent_id + "-" +
         (init.instance_id.empty() ? instance_tag() : init.instance_id);
}

// Every host process's argv, joined (what `ps` shows to any user).
std::string all_argv() {
  std::string out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* e = ::readdir(proc)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    out += read_host_file(std::string("/proc/") + e->d_name + "/cmdline") + "\n";
  }
  ::closedir(proc);
  return out;
}

void write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Sets a variable of this process for one test (the backend reads the server's environment).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(DockerCredentials, EachKindReachesTheContainerAndNoSecretShowsOutside) {
  REQUIRE_ENGINE();
  TempDir ws("cred");
  TempDir home("credhome");
  const std::string tag = instance_tag();
  // A canary per kind: files in $HOME, a variable in the env file, one by name, one by pass_all.
  const std::map<std::string, std::string> files = {{".ssh/config", "canary-ssh-" + tag},
                                                    {".gitconfig", "canary-git-" + tag},
                                                    {".config/gh/hosts.yml", "canary-gh-" + tag},
                                                    {".npmrc", "canary-npm-" + tag},
                                                    {".pypirc", "canary-pypi-" + tag}};
  for (const auto& [path, text] : files) write(home.path() + "/" + path, text + "\n");
  // Writable for anyone on the host: only the read-only mount stops the write below.
  ::chmod((home.path() + "/.gitconfig").c_str(), 0666);
  const std::string file_secret = "canary-envfile-" + tag;
  const std::string named_secret = "canary-envvar-" + tag;
  const std::string all_secret = "canary-passall-" + tag;
  write(home.path() + "/agent.env",
        "# secrets\nexport FILE_SECRET='" + file_secret + "'\nOTHER=x\n");
  ScopedEnv home_env("HOME", home.path());
  ScopedEnv named("EXECMCP_TEST_NAMED_SECRET", named_secret);  // EXECMCP_*: pass_all skips it
  ScopedEnv passed("TEST_PASSALL_SECRET", all_secret);

  BackendInit init;
  init.agent_id = "cred";
  init.cwd = ws.path();
  init.paths = {{ws.path(), true}};
  init.settings_json = R"({"credentials": {
      "mount": ["ssh_keys", "git_config", "gh_config", "npm_config", "pypi_config"],
      "env_file": ")" + home.path() +
                       R"(/agent.env", "env_vars_from_file": ["FILE_SECRET"],
      "env_vars": ["EXECMCP_TEST_NAMED_SECRET"], "pass_all_env": true}})";
  CapturingLog log;
  std::string error;
  auto backend = create(init, log, error);
  ASSERT_TRUE(backend) << error;
  ASSERT_EQ(backend->start(), "");

  // The files, at the same places under the image user's home (inside its tmpfs, which stays
  // writable), read-only.
  auto r = run(*backend,
               "cat ~/.ssh/config ~/.gitconfig ~/.config/gh/hosts.yml ~/.npmrc ~/.pypirc && "
               "touch ~/scratch && echo home-writable && "
               "if echo x >> ~/.gitconfig; then echo WROTE; fi; "
               "printf '%s|%s|%s|%s\\n' \"$FILE_SECRET\" \"$EXECMCP_TEST_NAMED_SECRET\" "
               "\"$TEST_PASSALL_SECRET\" \"${OTHER-unset}\"");
  ASSERT_EQ(r.error, "");
  for (const auto& [path, text] : files)
    EXPECT_NE(r.stdout_data.find(text), std::string::npos) << path << ": " << r.stdout_data;
  EXPECT_NE(r.stdout_data.find("home-writable"), std::string::npos) << r.stderr_data;
  EXPECT_EQ(r.stdout_data.find("WROTE"), std::string::npos);
  EXPECT_NE(r.stderr_data.find("Read-only file system"), std::string::npos) << r.stderr_data;
  // env_vars_from_file took FILE_SECRET only.
  EXPECT_NE(r.stdout_data.find(file_secret + "|" + named_secret + "|" + all_secret + "|unset"),
            std::string::npos)
      << r.stdout_data;

  // While a call that carries them runs, no host process shows a value in its argv (docker-cli's
  // exec child included).
  std::atomic<bool> done{false};
  std::string seen;
  std::thread call([&] {
    run(*backend, "sleep 2; echo \"$FILE_SECRET\"");
    done = true;
  });
  while (!done) {
    const std::string argv = all_argv();
    for (const auto& secret : {file_secret, named_secret, all_secret})
      if (argv.find(secret) != std::string::npos) seen = secret;
    ::usleep(20 * 1000);
  }
  call.join();
  EXPECT_EQ(seen, "") << "a secret was in a host process's argv";

  // Neither the container's config nor the plugin's log holds a value; the log names them.
  const std::string inspect = sh(outside_cli() + " inspect " + container_of(init));
  ASSERT_NE(inspect.find("execmcp.managed"), std::string::npos);
  for (const auto& secret : {file_secret, named_secret, all_secret}) {
    EXPECT_EQ(inspect.find(secret), std::string::npos) << secret;
    EXPECT_EQ(log.all().find(secret), std::string::npos) << secret;
  }
  EXPECT_NE(log.all().find("FILE_SECRET"), std::string::npos) << log.all();
  backend->cleanup();
}

TEST(DockerCredentials, AMissingFileOrVariableFailsBeforeAnyContainer) {
  REQUIRE_ENGINE();
  TempDir ws("credmissing");
  TempDir home("credmissinghome");
  ScopedEnv home_env("HOME", home.path());
  BackendInit init;
  init.agent_id = "credmissing";
  init.cwd = ws.path();
  init.paths = {{ws.path(), true}};
  CapturingLog log;
  for (const auto& [settings, says] : std::vector<std::pair<std::string, std::string>>{
           {R"({"credentials": {"mount": ["git_config"]}})",
            "git_config needs '" + home.path() + "/.gitconfig'"},
           {R"({"credentials": {"env_file": ")" + home.path() + R"(/none.env"}})",
            home.path() + "/none.env' cannot be read"},
           {R"({"credentials": {"env_vars": ["EXECMCP_TEST_NOT_SET_ANYWHERE"]}})",
            "EXECMCP_TEST_NOT_SET_ANYWHERE is not set"}}) {
    init.settings_json = settings;
    std::string error;
    auto backend = create(init, log, error);
    EXPECT_FALSE(backend);
    EXPECT_NE(error.find(says), std::string::npos) << error;
  }
  EXPECT_FALSE(container_exists(container_of(init)));
}

// MassGen's protected_paths: read-only binds over the writable workspace, so neither a command
// (whatever path it writes by, a symlink included) nor write_file changes them, nor moves or
// removes them, while the rest of the workspace stays writable.
TEST(DockerProtectedPaths, StayReadOnlyForCommandsAndWriteFile) {
  REQUIRE_ENGINE();
  TempDir ws("protected");
  write(ws.path() + "/keep/deep/a.txt", "original");
  write(ws.path() + "/settings.json", "{}");
  CapturingLog log;
  BackendInit init;
  init.agent_id = "protected";
  init.cwd = ws.path();
  init.paths = {
      {ws.path(), true, {ws.path() + "/keep", ws.path() + "/settings.json", ws.path() + "/a/b/c"}}};
  write(ws.path() + "/a/b/c", "deep");
  ws.give_contents_to_image_user();
  std::string error;
  auto backend = create(init, log, error);
  ASSERT_TRUE(backend) << error;
  ASSERT_EQ(backend->start(), "");
  const auto r = run(*backend,
                     "ln -s keep alias; for c in 'echo x > keep/deep/a.txt' 'touch keep/new' "
                     "'echo x > alias/deep/a.txt' 'echo x > settings.json' 'rm -rf keep' "
                     "'mv keep moved' 'mv settings.json s2' 'mv a a2' 'mv a/b a/b2' 'rm -rf a' "
                     "'echo x > a/b/c'; do "
                     "if sh -c \"$c\" 2>/dev/null; then echo \"wrote: $c\"; fi; done; "
                     "echo ok > free.txt && echo ok > a/b/free.txt && echo fine");
  EXPECT_EQ(r.stdout_data, "fine\n") << r.stderr_data;
  for (const std::string& path : std::vector<std::string>{
           "keep/deep/a.txt", "keep/x.txt", "alias/deep/a.txt", ws.path() + "/settings.json"}) {
    const auto written = backend->write_file({path, "changed"});
    EXPECT_NE(written.error, "") << path;
    EXPECT_EQ(written.bytes_written, 0u) << path;
  }
  EXPECT_NE(backend->write_file({"keep/x.txt", "changed"}).error.find("protected"),
            std::string::npos);
  EXPECT_EQ(read_host_file(ws.path() + "/keep/deep/a.txt"), "original");
  EXPECT_EQ(read_host_file(ws.path() + "/settings.json"), "{}");
  EXPECT_FALSE(fs::exists(ws.path() + "/keep/new"));
  EXPECT_EQ(read_host_file(ws.path() + "/free.txt"), "ok\n");
  EXPECT_EQ(read_host_file(ws.path() + "/a/b/c"), "deep");
  EXPECT_EQ(read_host_file(ws.path() + "/a/b/free.txt"), "ok\n");  // the way there stays writable
  EXPECT_EQ(backend->write_file({"free.txt", "again"}).error, "");
  backend->cleanup();
}

// Issue 17: a protection never lapses because the agent moved something. The agent renames the
// protected file's directory and kills PID 1, so that the next start would no longer find the
// protected path; then it writes the file under the new name and moves it back. The directories
// on the way are mount points in the container, so the rename itself fails (EBUSY).
TEST(DockerProtectedPaths, ARenameAndARestartDoNotLiftTheProtection) {
  REQUIRE_ENGINE();
  TempDir ws("protrename");
  TempDir ctx("protrenamectx");
  write(ctx.path() + "/sub/secret.txt", "original");
  CapturingLog log;
  BackendInit init;
  init.agent_id = "protrename";
  init.cwd = ws.path();
  init.paths = {{ws.path(), true}, {ctx.path(), true, {ctx.path() + "/sub/secret.txt"}}};
  std::string error;
  auto backend = create(init, log, error);
  ASSERT_TRUE(backend) << error;
  ASSERT_EQ(backend->start(), "");
  const std::string c = ctx.path();
  auto r = run(*backend, "cd " + c +
                             " && mv sub sub2; mv sub/secret.txt sub/s2; rm -rf sub; "
                             "kill -TERM 1");
  wait_until_stopped(container_of(init));
  r = run(*backend, "cd " + c +
                        " && { [ -d sub2 ] && echo changed > sub2/secret.txt && "
                        "mv sub2 sub; }; cat sub/secret.txt");
  EXPECT_EQ(read_host_file(c + "/sub/secret.txt"), "original") << r.stdout_data << r.stderr_data;
  EXPECT_FALSE(fs::exists(c + "/sub2"));
  backend->cleanup();

  // The next serve: MassGen starts one per session, so a rename that persisted on the host needs
  // no kill at all. One backend renames, a fresh one on the same workspace writes.
  write(c + "/sub/secret.txt", "original");
  for (const char* step : {"mv sub sub2",
                           "[ -d sub2 ] && echo changed > sub2/secret.txt && "
                           "mv sub2 sub; cat sub/secret.txt"}) {
    init.instance_id = instance_tag() + (step[0] == 'm' ? "b" : "c");
    auto next = create(init, log, error);
    ASSERT_TRUE(next) << error;
    ASSERT_EQ(next->start(), "");
    r = run(*next, "cd " + c + " && " + step);
    EXPECT_EQ(read_host_file(c + "/sub/secret.txt"), "original")
        << step << ": " << r.stdout_data << r.stderr_data;
    next->cleanup();
  }
  EXPECT_FALSE(fs::exists(c + "/sub2"));
}

// What was moved on the host (by an earlier agent, before this fix, or by anyone): a protected
// path that is missing, or that names another file than at this process's first start, stops the
// start with an error that names it, never a start without the protection.
TEST(DockerProtectedPaths, AMissingOrReplacedProtectedPathStopsTheStart) {
  REQUIRE_ENGINE();
  TempDir ws("protgone");
  write(ws.path() + "/ctx/sub/secret.txt", "original");
  const std::string secret = ws.path() + "/ctx/sub/secret.txt";
  CapturingLog log;
  BackendInit init;
  init.agent_id = "protgone";
  init.cwd = ws.path();
  init.paths = {{ws.path(), true}, {ws.path() + "/ctx", true, {secret}}};
  std::string error;
  auto backend = create(init, log, error);
  ASSERT_TRUE(backend) << error;
  ASSERT_EQ(backend->start(), "");
  EXPECT_EQ(run(*backend, "cat " + secret).stdout_data, "original");

  // Replaced on the host while the container runs: the next (re)start refuses.
  fs::rename(secret, ws.path() + "/ctx/sub/old.txt");
  write(secret, "planted");
  run(*backend, "kill -TERM 1");
  wait_until_stopped(container_of(init));
  auto r = run(*backend, "echo should-not-run");
  EXPECT_NE(r.error.find(secret), std::string::npos) << r.error << r.stdout_data;
  EXPECT_NE(r.error.find("another file"), std::string::npos) << r.error;
  EXPECT_EQ(r.stdout_data, "");
  backend->cleanup();

  // Missing at a fresh backend's first start (renamed away before it): refused, not left out.
  fs::rename(ws.path() + "/ctx/sub", ws.path() + "/ctx/sub2");
  init.instance_id = instance_tag() + "b";
  auto next = create(init, log, error);
  ASSERT_TRUE(next) << error;
  const std::string refused = next->start();
  EXPECT_NE(refused.find(secret), std::string::npos) << refused;
  EXPECT_NE(refused.find("does not exist"), std::string::npos) << refused;
  EXPECT_FALSE(container_exists(container_of(init)));
  next->cleanup();
}

// `sudo -n true` runs with no terminal and no password, as a command of the agent does.
constexpr const char* kSudoProbe =
    "sudo -n true && sudo -n id -u && sudo -n touch /usr/local/x "
    "&& echo sudo-works";

TEST(DockerSudo, WorksOnlyWhenEnabled) {
  REQUIRE_ENGINE();
  int status = 0;
  sh(outside_cli() + " image inspect " + kSudoImage, &status);
  ASSERT_EQ(status, 0) << kSudoImage << " is missing; build it with docker/build.sh --sudo";
  TempDir ws("sudo");
  CapturingLog log;
  BackendInit init;
  init.cwd = ws.path();
  init.paths = {{ws.path(), true}};
  // Off: not in the default image, and not even in the sudo image (no-new-privileges).
  for (const auto& [agent, settings] : std::vector<std::pair<std::string, std::string>>{
           {"nosudo", "{}"}, {"nosudoimg", R"({"image": "execmcp/runtime-sudo:latest"})"}}) {
    init.agent_id = agent;
    init.settings_json = settings;
    std::string error;
    auto backend = create(init, log, error);
    ASSERT_TRUE(backend) << error;
    ASSERT_EQ(backend->start(), "");
    const auto r = run(*backend, kSudoProbe);
    EXPECT_NE(r.exit_code, 0) << agent;
    EXPECT_EQ(r.stdout_data.find("sudo-works"), std::string::npos) << agent;
    backend->cleanup();
  }
  // On: the default image becomes the sudo image, and root through sudo can do its work.
  init.agent_id = "sudo";
  init.settings_json = R"({"sudo": true})";
  std::string error;
  auto backend = create(init, log, error);
  ASSERT_TRUE(backend) << error;
  if (under_gvisor()) {
    // gVisor starts every process with no_new_privs: refused at start, saying why.
    const auto refused = backend->start();
    EXPECT_NE(refused.find("'sudo: true' cannot work there"), std::string::npos) << refused;
    backend->cleanup();
    return;
  }
  ASSERT_EQ(backend->start(), "");
  const auto r = run(*backend, std::string(kSudoProbe) + "; id -u");
  EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "0\nsudo-works\n1000\n") << r.stderr_data;
  const std::string image =
      trim(sh(outside_cli() + " inspect -f '{{.Config.Image}}' " + container_of(init)));
  EXPECT_EQ(image, kSudoImage);
  backend->cleanup();
}

}  // namespace
}  // namespace execmcp::docker_test
