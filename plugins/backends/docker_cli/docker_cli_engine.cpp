// The Engine calls as docker / podman CLI runs (design note of issue 10, section 3.1).
#include "docker_cli/docker_cli_engine.hpp"

#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "docker_common/parts/preinstall.hpp"
#include "supervision/command_output.hpp"

namespace execmcp::plugins::docker_cli {
namespace {

namespace dc = docker_common;
using Clock = std::chrono::steady_clock;
using Kind = dc::EngineError::Kind;
using Stream = runner_client::ExecStreamDecoder::Stream;
using namespace std::chrono_literals;

// How long one CLI run may take. Over SSH every run pays a handshake and a remote CLI start.
constexpr auto kConnectTimeout = 30s;
constexpr auto kCallTimeout = 60s;
constexpr auto kCopyTimeout = 120s;
constexpr auto kLogsTimeout = 30s;
// How long an exec may take to start its command (the start line on stderr).
constexpr auto kExecStartTimeout = 60s;
// How long a finished exec's CLI may take to exit once its output has ended.
constexpr auto kExitWait = 10s;
// The most of an exec's stdout held while its start line has not come (see start_exec()).
constexpr std::size_t kEarlyOutputLimit = std::size_t{1} << 20;

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// The CLI says the engine went away while the command ran (its exit status is then the CLI's).
bool says_engine_lost(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* phrase : {"cannot connect to the docker daemon", "error during connect",
                             "unable to connect to podman"})
    if (lower.find(phrase) != std::string::npos) return true;
  return false;
}

// Reads what `fd` holds now (non-blocking); false at its end.
bool read_now(int fd, std::string& into, std::size_t max = std::size_t{1} << 20) {
  char buf[64 * 1024];
  std::size_t got = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      into.append(buf, static_cast<std::size_t>(n));
      got += static_cast<std::size_t>(n);
      if (got >= max) return true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

// One `docker exec` child in flight: its stdout and stderr (the start line already taken off),
// its stdin, and its exit status as the command's.
class CliExecSession final : public dc::ExecSession {
 public:
  // `early_out`: the command's stdout read before the session; `start_line_pending`: the start
  // line has not come yet (it is taken off stderr here), `early_err` what came on stderr so far.
  CliExecSession(std::unique_ptr<Child> child, std::string early_out, bool start_line_pending,
                 std::string early_err)
      : child_(std::move(child)),
        early_out_(std::move(early_out)),
        start_line_pending_(start_line_pending),
        held_err_(std::move(early_err)) {}

  ReadStatus read(std::chrono::milliseconds wait,
                  runner_client::ExecStreamDecoder::Handler& handler) override {
    ReadStatus status;
    if (!out_open_ && !err_open_) {
      status.eof = true;
      return status;
    }
    pollfd fds[2];
    nfds_t n = 0;
    if (out_open_) fds[n++] = {child_->out_fd(), POLLIN, 0};
    if (err_open_) fds[n++] = {child_->err_fd(), POLLIN, 0};
    const int ready = ::poll(fds, n, static_cast<int>(wait.count()));
    bool exited = false;
    if (ready == 0) exited = child_->poll_exit().has_value();
    deliver(handler);
    // A process the CLI started (an ssh master) may hold its streams open after it exited.
    if (exited) {
      deliver(handler);
      out_open_ = err_open_ = false;
      deliver(handler);  // stderr held for a start line that never came
    }
    status.eof = !out_open_ && !err_open_;
    return status;
  }

  WriteStatus write_some(std::string_view data, std::chrono::milliseconds wait) override {
    WriteStatus status;
    const int fd = child_->in_fd();
    if (fd < 0) {
      status.error = "the command's input is closed";
      return status;
    }
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return status;
    const ssize_t w = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      status.bytes = static_cast<std::size_t>(w);
    } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      status.error =
          std::string("the command stopped reading its input (") + std::strerror(errno) + ")";
    }
    return status;
  }

  void close_stdin() override { child_->close_in(); }
  [[nodiscard]] bool carries_input() const override { return true; }

  Exit finish(bool killed) override {
    Exit exit;
    // Killed: its processes are gone, so the CLI ends by itself soon, with their status.
    const int status = child_->end(killed ? 2s : kExitWait);
    // docker exits 1 (or 255) with its own last words when the engine went away mid-command.
    if ((status == 1 || status == 255) && says_engine_lost(stderr_tail_)) {
      exit.engine_answered = false;  // the status is the CLI's, not the command's
    } else if (!child_->signalled()) {
      exit.code = status;
    }
    return exit;
  }

  // The CLI of an exec whose container stopped may never end by itself (gVisor): not waited for.
  Exit abandon() override {
    Exit exit;
    const int status = child_->end(0s, 500ms);
    if (!child_->signalled()) exit.code = status;
    return exit;
  }

 private:
  void deliver(runner_client::ExecStreamDecoder::Handler& handler) {
    if (!early_out_.empty()) handler.on_payload(Stream::Stdout, std::exchange(early_out_, {}));
    if (out_open_) {
      std::string data;
      out_open_ = read_now(child_->out_fd(), data);
      if (!data.empty()) handler.on_payload(Stream::Stdout, data);
    }
    std::string data;
    if (err_open_) err_open_ = read_now(child_->err_fd(), data);
    if (start_line_pending_) data = take_start_line(std::move(data));
    if (!data.empty()) {
      stderr_tail_.append(data);
      if (stderr_tail_.size() > 1024) stderr_tail_.erase(0, stderr_tail_.size() - 1024);
      handler.on_payload(Stream::Stderr, data);
    }
  }

  // Holds stderr until the start line has come and returns what is the command's: everything but
  // that line (all of it when the stream ends, or grows past any start, without one).
  std::string take_start_line(std::string data) {
    held_err_ += data;
    const std::string wanted = std::string(kExecStarted) + "\n";
    for (std::size_t at = held_err_.find(wanted); at != std::string::npos;
         at = held_err_.find(wanted, at + 1)) {
      if (at == 0 || held_err_[at - 1] == '\n') {
        held_err_.erase(at, wanted.size());
        start_line_pending_ = false;
        return std::exchange(held_err_, {});
      }
    }
    if (!err_open_ || held_err_.size() > 8192) {
      start_line_pending_ = false;
      return std::exchange(held_err_, {});
    }
    return {};
  }

  std::unique_ptr<Child> child_;
  std::string early_out_;
  bool start_line_pending_ = false;
  std::string held_err_;  // stderr held while the start line is pending
  bool out_open_ = true, err_open_ = true;
  std::string stderr_tail_;  // where the CLI's own last words land
};

// One `logs --follow` (dc::LogStream) or `events` (dc::EventStream) child: its stdout as it comes;
// its own stderr kept (a bounded tail) for the error when it ends badly.
template <class Stream>
class CliFollowStream final : public Stream {
 public:
  using ReadStatus = typename Stream::ReadStatus;
  CliFollowStream(std::unique_ptr<Child> child, std::string what)
      : child_(std::move(child)), what_(std::move(what)) {}

  ReadStatus read(std::chrono::milliseconds wait, std::string& out) override {
    ReadStatus status;
    if (out_open_ || err_open_) {
      pollfd fds[2];
      nfds_t n = 0;
      if (out_open_) fds[n++] = {child_->out_fd(), POLLIN, 0};
      if (err_open_) fds[n++] = {child_->err_fd(), POLLIN, 0};
      ::poll(fds, n, static_cast<int>(wait.count()));
      if (out_open_) out_open_ = read_now(child_->out_fd(), out);
      if (err_open_) {
        err_open_ = read_now(child_->err_fd(), err_tail_);
        if (err_tail_.size() > 1024) err_tail_.erase(0, err_tail_.size() - 1024);
      }
    }
    if (out_open_) return status;
    // Its output ended: so does it, soon.
    const auto code = child_->poll_exit();
    if (!code) {
      if (err_open_) return status;
      std::this_thread::sleep_for(std::min(wait, std::chrono::milliseconds(50)));
      return status;
    }
    status.eof = true;
    while (!err_tail_.empty() && std::isspace(static_cast<unsigned char>(err_tail_.back())))
      err_tail_.pop_back();
    if (*code != 0)
      status.error = "`" + what_ + "` exited with " + std::to_string(*code) + ": " + err_tail_;
    return status;
  }

 private:
  std::unique_ptr<Child> child_;
  std::string what_;
  bool out_open_ = true, err_open_ = true;
  std::string err_tail_;
};

// What the runtime said when it could not start the command (exit 126/127), played back as the
// command's output, so the backend sees it as it would through the Engine API.
class ReplayedExecSession final : public dc::ExecSession {
 public:
  ReplayedExecSession(std::string out, std::string err, int code)
      : out_(std::move(out)), err_(std::move(err)), code_(code) {}

  ReadStatus read(std::chrono::milliseconds,
                  runner_client::ExecStreamDecoder::Handler& handler) override {
    if (!out_.empty()) handler.on_payload(Stream::Stdout, out_);
    if (!err_.empty()) handler.on_payload(Stream::Stderr, err_);
    out_.clear();
    err_.clear();
    ReadStatus status;
    status.eof = true;
    return status;
  }
  WriteStatus write_some(std::string_view, std::chrono::milliseconds) override {
    WriteStatus status;
    status.error = "the command never started";
    return status;
  }
  void close_stdin() override {}
  [[nodiscard]] bool carries_input() const override { return true; }
  Exit finish(bool) override {
    Exit exit;
    exit.code = code_;
    return exit;
  }

 private:
  std::string out_, err_;
  int code_;
};

std::string env_or(const std::map<std::string, std::string>& env, const char* key,
                   const std::string& fallback) {
  const auto it = env.find(key);
  return it != env.end() && !it->second.empty() ? it->second : fallback;
}

}  // namespace

std::map<std::string, std::string> this_process_environment() {
  std::map<std::string, std::string> env;
  for (const char* key : {"PATH", "HOME", "DOCKER_HOST", "DOCKER_CONFIG"})
    if (const char* v = std::getenv(key); v != nullptr) env[key] = v;
  return env;
}

std::map<std::string, std::string> cli_environment(
    const dc::DockerSettings& settings, const std::map<std::string, std::string>& server_env) {
  std::map<std::string, std::string> env;
  env["PATH"] = env_or(server_env, "PATH", kDefaultPath);
  std::string home = env_or(server_env, "HOME", "");
  if (home.empty()) {
    const passwd* pw = ::getpwuid(::geteuid());
    home = pw != nullptr && pw->pw_dir != nullptr ? pw->pw_dir : "/";
  }
  env["HOME"] = home;
  env["LC_ALL"] = "C";  // the CLI's messages are classified by their English words
  // --context wins over DOCKER_HOST in the CLI; leave no doubt which one is used.
  if (settings.docker_context.empty()) {
    const std::string host = !settings.docker_host.empty() ? settings.docker_host
                                                           : env_or(server_env, "DOCKER_HOST", "");
    if (!host.empty()) env["DOCKER_HOST"] = host;
  }
  if (auto config = env_or(server_env, "DOCKER_CONFIG", ""); !config.empty())
    env["DOCKER_CONFIG"] = config;
  for (const auto& [k, v] : settings.cli_env) env[k] = v;
  return env;
}

bool cli_reads_variable(const std::string& name,
                        const std::map<std::string, std::string>& cli_env) {
  if (cli_env.count(name) != 0) return true;
  for (const char* prefix : {"DOCKER_", "PODMAN_", "CONTAINERS_", "CONTAINER_", "BUILDKIT_",
                             "BUILDX_", "LD_", "SSH_", "XDG_", "LC_", "GO", "EXECMCP_ENV_"})
    if (name.starts_with(prefix)) return true;
  for (const char* exact :
       {"PATH", "HOME", "LANG", "LANGUAGE", "TMPDIR", "TZ", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
        "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy"})
    if (name == exact) return true;
  return false;
}

ExecCall exec_call(const std::string& name, const dc::ExecOptions& options, bool sentinel,
                   const std::map<std::string, std::string>& cli_env) {
  ExecCall call;
  auto& args = call.args;
  args = {"exec"};
  if (options.attach_stdin) args.push_back("--interactive");
  if (!options.user.empty()) args.push_back("--user=" + options.user);
  if (!options.work_dir.empty()) args.push_back("--workdir=" + options.work_dir);
  // Later entries of one name win, as in the Engine API's Env.
  std::vector<std::pair<std::string, std::string>> vars;
  for (const auto& e : options.env) {
    const auto eq = e.find('=');
    std::string var = e.substr(0, eq);
    std::string value = eq == std::string::npos ? std::string() : e.substr(eq + 1);
    std::erase_if(vars, [&](const auto& v) { return v.first == var; });
    vars.emplace_back(std::move(var), std::move(value));
  }
  std::string renames;
  for (const auto& [var, value] : vars) {
    if (!cli_reads_variable(var, cli_env)) {
      args.push_back("--env=" + var);
      call.env[var] = value;
      continue;
    }
    const std::string alias = "EXECMCP_ENV_" + std::to_string(call.env.size());
    args.push_back("--env=" + alias);
    call.env[alias] = value;
    renames +=
        "export " + supervision::shell_quote(var) + "=\"$" + alias + "\"; unset " + alias + "; ";
  }
  args.push_back(name);
  if (sentinel || !renames.empty()) {
    args.insert(
        args.end(),
        {"/bin/sh", "-c",
         renames + (sentinel ? std::string("printf '%s\\n' ") + kExecStarted + " >&2; " : "") +
             "exec \"$@\"",
         "execmcp-exec"});
  }
  args.insert(args.end(), options.cmd.begin(), options.cmd.end());
  return call;
}

std::vector<std::string> exec_args(const std::string& name, const dc::ExecOptions& options,
                                   bool sentinel) {
  return exec_call(name, options, sentinel, {}).args;
}

DockerCliEngine::DockerCliEngine(const dc::DockerSettings& settings)
    : DockerCliEngine(settings, this_process_environment()) {}

DockerCliEngine::DockerCliEngine(const dc::DockerSettings& settings,
                                 const std::map<std::string, std::string>& server_env)
    : settings_(settings),
      launcher_(settings.docker_binary, cli_environment(settings, server_env)) {
  const auto& env = launcher_.env();
  const auto host = env.find("DOCKER_HOST");
  target_.docker_host = host != env.end() ? host->second : "";
  target_.context = settings.docker_context;
  target_.describe = settings.docker_binary;
  for (const auto& flag : settings.docker_flags) target_.describe += " " + flag;
  if (!settings.docker_context.empty()) {
    target_.describe += " --context " + settings.docker_context;
  } else if (!target_.docker_host.empty()) {
    target_.describe += " (DOCKER_HOST=" + target_.docker_host + ")";
  }
  global_args_ = settings.docker_flags;
  if (!settings.docker_context.empty())
    global_args_.push_back("--context=" + settings.docker_context);
  // Only a local engine can bind-mount this machine's files (execmcp-runner is copied otherwise).
  local_ = settings.docker_context.empty() &&
           (target_.docker_host.empty() || target_.docker_host.starts_with("unix://"));
  std::string program = launcher_.program().empty() ? settings.docker_binary : launcher_.program();
  std::error_code ec;
  const auto real = std::filesystem::canonical(program, ec);
  if (!ec) program = real.filename().string();
  if (program.find("podman") != std::string::npos ||
      settings.docker_binary.find("podman") != std::string::npos)
    flavor_ = dc::CliFlavor::kPodman;
  target_.podman = flavor_ == dc::CliFlavor::kPodman;
}

dc::CliFlavor DockerCliEngine::flavor() const {
  std::lock_guard lock(mutex_);
  return flavor_;
}

std::vector<std::string> DockerCliEngine::argv(std::vector<std::string> args) const {
  std::vector<std::string> all = global_args_;
  all.insert(all.end(), std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
  return all;
}

CliRun DockerCliEngine::run(std::vector<std::string> args, std::chrono::milliseconds timeout,
                            const std::string* input) const {
  return launcher_.run(argv(std::move(args)), input, timeout);
}

dc::EngineError DockerCliEngine::check(const CliRun& r) const {
  if (r.ok()) return dc::EngineError{};
  CliTarget target = target_;
  target.podman = flavor() == dc::CliFlavor::kPodman;  // known for sure once connected
  return classify_cli_failure(r, target);
}

namespace {

// Engines that answered `version` lately, by CLI target: every backend object runs its own
// connect(), and a per-user agent makes one per user, each a `docker` process (about 30 ms).
// Within kAnsweredFor another object for the same target trusts the answer; a call that fails
// afterwards still says why in its own words.
constexpr std::chrono::seconds kAnsweredFor{30};
struct Answered {
  std::chrono::steady_clock::time_point at;
  dc::CliFlavor flavor;
};
std::mutex answered_mutex;
std::map<std::string, Answered>& answered() {
  static std::map<std::string, Answered> by_target;
  return by_target;
}

}  // namespace

std::string DockerCliEngine::target_key() const {
  std::string key = settings_.docker_binary + '\n' + target_.describe;
  for (const auto& [name, value] : settings_.cli_env) key += '\n' + name + '=' + value;
  return key;
}

dc::EngineError DockerCliEngine::connect() {
  {
    std::lock_guard lock(mutex_);
    if (connected_) return dc::EngineError{};
  }
  {
    std::lock_guard lock(answered_mutex);
    const auto it = answered().find(target_key());
    if (it != answered().end() && std::chrono::steady_clock::now() - it->second.at < kAnsweredFor) {
      std::lock_guard own(mutex_);
      flavor_ = it->second.flavor;
      connected_ = true;
      return dc::EngineError{};
    }
  }
  // Docker's CLI fails this when its engine does not answer; Podman's needs no service. The
  // answer also tells Podman (whose fields say "APIVersion") behind a binary named docker.
  const auto r = run({"version", "--format={{json .}}"}, kConnectTimeout);
  if (auto e = check(r); !e.ok()) {
    // Whatever failed, the engine was not reached: the message says where it was looked for.
    if (e.kind != Kind::kUnreachable)
      e = dc::EngineError::of(
          Kind::kUnreachable,
          "cannot reach " + std::string(flavor() == dc::CliFlavor::kPodman ? "Podman" : "Docker") +
              " at " + engine_address("", target_) + " (" + target_.describe + "): " + e.message);
    return e;
  }
  const auto version = nlohmann::json::parse(r.out, nullptr, false);
  std::lock_guard lock(mutex_);
  if (version.is_object() && version.contains("Client") && version["Client"].is_object() &&
      version["Client"].contains("APIVersion")) {
    flavor_ = dc::CliFlavor::kPodman;
  }
  connected_ = true;
  std::lock_guard remember(answered_mutex);
  answered()[target_key()] = {std::chrono::steady_clock::now(), flavor_};
  return dc::EngineError{};
}

dc::EngineError DockerCliEngine::runtimes(dc::RuntimeList& out) {
  // Podman's info has its OCI runtimes under host.ociRuntime only as the one in use.
  if (flavor() == dc::CliFlavor::kPodman)
    return dc::EngineError::of(Kind::kOther, "Podman does not list its runtimes");
  const auto r = run({"info", "--format={{json .Runtimes}}"}, kCallTimeout);
  if (auto e = check(r); !e.ok()) return e;
  const auto runtimes = nlohmann::json::parse(r.out, nullptr, false);
  if (!runtimes.is_object())
    return dc::EngineError::of(Kind::kOther,
                               "`" + settings_.docker_binary + " info` listed no runtimes");
  out = dc::runtime_list_from_info(runtimes);
  return dc::EngineError{};
}

dc::EngineError DockerCliEngine::check_image(const std::string& image) {
  return check(run({"image", "inspect", "--format={{.Id}}", image}, kCallTimeout));
}

dc::EngineError DockerCliEngine::list(const std::map<std::string, std::string>& labels,
                                      std::vector<dc::ContainerInfo>& out) {
  out.clear();
  std::vector<std::string> args = {"ps", "--all", "--quiet", "--no-trunc"};
  for (const auto& [k, v] : labels) args.push_back("--filter=label=" + k + "=" + v);
  const auto ids_run = run(args, kCallTimeout);
  if (auto e = check(ids_run); !e.ok()) return e;
  std::vector<std::string> inspect_args = {"inspect", "--type=container"};
  std::size_t pos = 0;
  while (pos < ids_run.out.size()) {
    const std::size_t end = std::min(ids_run.out.find('\n', pos), ids_run.out.size());
    const std::string id = ids_run.out.substr(pos, end - pos);
    pos = end + 1;
    if (!id.empty()) inspect_args.push_back(id);
  }
  if (inspect_args.size() == 2) return dc::EngineError{};
  // One inspect for all. One that vanished in between makes it fail, but the rest still come.
  const auto r = run(inspect_args, kCallTimeout);
  const auto docs = nlohmann::json::parse(r.out, nullptr, false);
  if (!docs.is_array()) {
    auto e = check(r);
    return e.ok() ? dc::EngineError::of(Kind::kOther, "`" + settings_.docker_binary +
                                                          " inspect` answered with no JSON list")
                  : e;
  }
  if (auto e = check(r); !e.ok() && e.kind != Kind::kNotFound) return e;
  for (const auto& doc : docs)
    if (doc.is_object()) out.push_back(dc::container_info_from_inspect(doc));
  return dc::EngineError{};
}

dc::EngineError DockerCliEngine::inspect(const std::string& name, dc::ContainerInfo& out) {
  const auto r = run({"inspect", "--type=container", name}, kCallTimeout);
  if (auto e = check(r); !e.ok()) return e;
  const auto docs = nlohmann::json::parse(r.out, nullptr, false);
  if (!docs.is_array() || docs.empty() || !docs[0].is_object())
    return dc::EngineError::of(Kind::kOther, "`" + settings_.docker_binary + " inspect " + name +
                                                 "` answered with no container document");
  out = dc::container_info_from_inspect(docs[0]);
  return dc::EngineError{};
}

dc::EngineError DockerCliEngine::image_info(const std::string& image, dc::ImageInfo& out) {
  if (image.empty() || image.front() == '-')
    return dc::EngineError::of(Kind::kImageMissing, "no image '" + image + "'");
  const auto r = run({"image", "inspect", image}, kCallTimeout);
  if (auto e = check(r); !e.ok()) return e;
  const auto docs = nlohmann::json::parse(r.out, nullptr, false);
  if (!docs.is_array() || docs.empty() || !docs[0].is_object())
    return dc::EngineError::of(Kind::kOther, "`" + settings_.docker_binary + " image inspect " +
                                                 image + "` answered with no image document");
  out = dc::image_info_from_inspect(docs[0]);
  if (out.id.empty()) return dc::EngineError::of(Kind::kOther, "the image's inspect has no Id");
  return dc::EngineError{};
}

dc::EngineError DockerCliEngine::create_install(const dc::InstallSpec& spec) {
  auto args = dc::install_create_args(spec, flavor());
  if (!args.error.empty()) return dc::EngineError::sentence(Kind::kOther, args.error);
  args.args.insert(args.args.begin(), "create");
  return check(run(std::move(args.args), kCallTimeout));
}

dc::EngineError DockerCliEngine::commit(const std::string& container,
                                        const dc::CommitOptions& options, std::string& image_id) {
  std::vector<std::string> args = {"commit", "--pause=false"};
  for (const auto& change : dc::commit_changes(options)) args.push_back("--change=" + change);
  args.push_back(container);
  args.push_back(options.repo + ":" + options.tag);
  // The image's layer is written here: give it the time a large install takes to commit.
  const auto r = run(std::move(args), std::chrono::minutes(10));
  if (auto e = check(r); !e.ok()) return e;
  // The id is the last line of stdout (Podman prints progress before it).
  std::string out = r.out;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  image_id = out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1);
  if (image_id.empty())
    return dc::EngineError::of(Kind::kOther,
                               "`" + settings_.docker_binary + " commit` printed no image id");
  if (image_id.rfind("sha256:", 0) != 0) image_id = "sha256:" + image_id;
  return dc::EngineError{};
}

dc::EngineError DockerCliEngine::create(const dc::ContainerSpec& spec) {
  auto args = dc::container_create_args(spec, flavor());
  if (!args.error.empty()) return dc::EngineError::sentence(Kind::kOther, args.error);
  args.args.insert(args.args.begin(), "create");
  return check(run(std::move(args.args), kCallTimeout));
}

dc::EngineError DockerCliEngine::start(const std::string& name) {
  return check(run({"start", name}, kCallTimeout));
}

dc::EngineError DockerCliEngine::stop(const std::string& name, std::chrono::seconds timeout) {
  // `-t` is understood by docker and podman alike; the CLI returns once the container stopped.
  return check(run({"stop", "-t", std::to_string(timeout.count()), name}, timeout + kCallTimeout));
}

dc::EngineError DockerCliEngine::remove(const std::string& name_or_id) {
  return check(run({"rm", "--force", "--volumes", name_or_id}, kCallTimeout));
}

dc::EngineError DockerCliEngine::create_network(const dc::NetworkSpec& spec) {
  std::vector<std::string> args = {"network", "create", "--driver=bridge"};
  if (spec.internal) args.push_back("--internal");
  for (const auto& [k, v] : spec.labels) args.push_back("--label=" + k + "=" + v);
  for (const auto& [k, v] : spec.options) args.push_back("--opt=" + k + "=" + v);
  args.push_back(spec.name);
  return check(run(args, kCallTimeout));
}

dc::EngineError DockerCliEngine::inspect_network(const std::string& name, dc::NetworkInfo& out) {
  const auto r = run({"network", "inspect", name}, kCallTimeout);
  if (auto e = check(r); !e.ok()) return e;
  const auto docs = nlohmann::json::parse(r.out, nullptr, false);
  if (!docs.is_array() || docs.empty())
    return dc::EngineError::of(Kind::kOther, "`" + settings_.docker_binary +
                                                 " network inspect` answered with no JSON list");
  out = dc::network_info_from_inspect(docs.front());
  return {};
}

dc::EngineError DockerCliEngine::list_networks(const std::map<std::string, std::string>& labels,
                                               std::vector<dc::NetworkInfo>& out) {
  out.clear();
  std::vector<std::string> args = {"network", "ls", "--quiet", "--no-trunc"};
  for (const auto& [k, v] : labels) args.push_back("--filter=label=" + k + "=" + v);
  const auto ids_run = run(args, kCallTimeout);
  if (auto e = check(ids_run); !e.ok()) return e;
  std::vector<std::string> inspect_args = {"network", "inspect"};
  std::istringstream ids(ids_run.out);
  for (std::string id; std::getline(ids, id);)
    if (!id.empty()) inspect_args.push_back(id);
  if (inspect_args.size() == 2) return {};
  // One inspect for all; one that vanished in between makes it fail, but the rest still come.
  const auto r = run(inspect_args, kCallTimeout);
  const auto docs = nlohmann::json::parse(r.out, nullptr, false);
  if (!docs.is_array()) {
    auto e = check(r);
    return e.ok() ? dc::EngineError::of(Kind::kOther, "`" + settings_.docker_binary +
                                                          " network inspect` answered with no "
                                                          "JSON list")
                  : e;
  }
  for (const auto& doc : docs) out.push_back(dc::network_info_from_inspect(doc));
  return {};
}

dc::EngineError DockerCliEngine::connect_network(const std::string& network,
                                                 const std::string& container,
                                                 const std::string& alias) {
  std::vector<std::string> args = {"network", "connect"};
  if (!alias.empty()) args.push_back("--alias=" + alias);
  args.push_back(network);
  args.push_back(container);
  return check(run(args, kCallTimeout));
}

dc::EngineError DockerCliEngine::remove_network(const std::string& name_or_id) {
  return check(run({"network", "rm", name_or_id}, kCallTimeout));
}

bool DockerCliEngine::wait_stopped(const std::string& name, std::chrono::milliseconds timeout) {
  // Looks every 100 ms: `docker wait` and `podman wait` differ on a container never started.
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    dc::ContainerInfo info;
    const auto e = inspect(name, info);
    if (e.kind == Kind::kNotFound) return true;
    if (e.ok() && !info.state.running) return true;
    if (Clock::now() + 100ms >= deadline) return false;
    std::this_thread::sleep_for(100ms);
  }
}

dc::EngineError DockerCliEngine::copy_into(const std::string& name, const std::string& dir,
                                           const std::string& tar) {
  // --archive=false: as root, with the archive's owners. Podman's default (true) gives what it
  // copies to the container's user, who could then replace execmcp-runner.
  return check(run({"cp", "--archive=false", "-", name + ":" + dir}, kCopyTimeout, &tar));
}

dc::EngineError DockerCliEngine::copy_from(const std::string& name, const std::string& path,
                                           std::string& tar) {
  tar.clear();
  // `-` as the destination: the tar archive on stdout. One byte past the bound tells an archive
  // that is too large from one that is just at it.
  auto r = launcher_.run(argv({"cp", name + ":" + path, "-"}), nullptr, kCopyTimeout,
                         kMaxCopyFromBytes + 1);
  if (r.ok() && r.out.size() > kMaxCopyFromBytes)
    return dc::EngineError::sentence(
        Kind::kOther, "the archive of " + path + " in container " + name + " is larger than " +
                          std::to_string(kMaxCopyFromBytes >> 20) + " MiB");
  if (!r.ok()) {
    auto err = check(r);
    // "Could not find the file PATH in container NAME" (docker), "... no such file or directory"
    // (podman): the path, not the container, is missing.
    std::string lower = r.err;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (err.kind == Kind::kOther && (lower.find("could not find the file") != std::string::npos ||
                                     lower.find("no such file or directory") != std::string::npos))
      err.kind = Kind::kNotFound;
    return err;
  }
  tar = std::move(r.out);
  return {};
}

dc::EngineError DockerCliEngine::logs(const std::string& name, std::string& text) {
  text.clear();
  std::string spawn_error;
  ChildStdio stdio;
  stdio.stderr_is_stdout = true;  // one stream: the container's two in arrival order
  auto child = launcher_.spawn(argv({"logs", name}), stdio, spawn_error);
  if (!child) {
    CliRun failed;
    failed.spawn_error = spawn_error;
    return check(failed);
  }
  const auto deadline = Clock::now() + kLogsTimeout;
  bool open = true, cut = false;
  while (open) {
    if (Clock::now() >= deadline) {
      cut = true;
      break;
    }
    pollfd p{child->out_fd(), POLLIN, 0};
    const int ready = ::poll(&p, 1, 50);
    open = read_now(child->out_fd(), text, ChildLauncher::kMaxOutput);
    if (text.size() >= ChildLauncher::kMaxOutput) {
      cut = true;
      break;
    }
    if (open && ready == 0 && child->poll_exit()) {
      read_now(child->out_fd(), text);
      break;
    }
  }
  const int status = child->end(cut ? 0ms : kExitWait);
  if (cut) {
    text += "\n[execmcp: the log was cut short: " +
            std::string(text.size() >= ChildLauncher::kMaxOutput ? "too long" : "timed out") +
            "]\n";
    return dc::EngineError{};
  }
  if (status != 0) {
    CliRun failed;
    failed.exit_status = status;
    failed.err = text;  // its own error text came on the one stream
    text.clear();
    return check(failed);
  }
  return dc::EngineError{};
}

std::unique_ptr<dc::LogStream> DockerCliEngine::follow_logs(const std::string& name,
                                                            const std::string& since,
                                                            dc::EngineError& error) {
  std::vector<std::string> args = {"logs", "--follow", "--timestamps"};
  if (!since.empty()) args.insert(args.end(), {"--since", since});
  args.push_back(name);
  std::string spawn_error;
  auto child = launcher_.spawn(argv(std::move(args)), ChildStdio{}, spawn_error);
  if (!child) {
    CliRun failed;
    failed.spawn_error = spawn_error;
    error = check(failed);
    return nullptr;
  }
  return std::make_unique<CliFollowStream<dc::LogStream>>(std::move(child), "logs --follow");
}

std::unique_ptr<dc::EventStream> DockerCliEngine::follow_events(const std::string& name,
                                                                const std::string& since,
                                                                dc::EngineError& error) {
  if (flavor() == dc::CliFlavor::kPodman) {
    error = dc::EngineError::of(Kind::kOther, "Podman's events are not followed");
    return nullptr;
  }
  std::vector<std::string> args = {"events",         "--format", "{{json .}}",       "--filter",
                                   "type=container", "--filter", "container=" + name};
  for (const char* event : {"kill", "die", "oom", "stop", "destroy"})
    args.insert(args.end(), {"--filter", std::string("event=") + event});
  if (!since.empty()) args.insert(args.end(), {"--since", since});
  std::string spawn_error;
  auto child = launcher_.spawn(argv(std::move(args)), ChildStdio{}, spawn_error);
  if (!child) {
    CliRun failed;
    failed.spawn_error = spawn_error;
    error = check(failed);
    return nullptr;
  }
  return std::make_unique<CliFollowStream<dc::EventStream>>(std::move(child), "events");
}

DockerCliEngine::StartedExec DockerCliEngine::start_exec(const std::string& name,
                                                         const dc::ExecOptions& options,
                                                         bool channel, dc::EngineError& error,
                                                         std::unique_ptr<dc::ExecSession>& replay) {
  StartedExec started;
  ChildStdio stdio;
  stdio.input = options.attach_stdin || channel;
  stdio.stdin_is_stdout = channel;
  dc::ExecOptions opts = options;
  opts.attach_stdin = stdio.input;
  std::string spawn_error;
  auto call = exec_call(name, opts, true, launcher_.env());
  auto child = launcher_.spawn(argv(std::move(call.args)), stdio, spawn_error, &call.env);
  if (!child) {
    CliRun failed;
    failed.spawn_error = spawn_error;
    error = check(failed);
    return started;
  }
  // The start line, read a byte at a time so nothing after it is taken from the stream: what
  // follows is the command's (or the runner's diagnostics, for a channel). An exec's stdout is
  // read meanwhile: the engine copies the command's stdout and stderr to the CLI independently,
  // so its first output can overtake the start line, and a CLI blocked on a full stdout pipe
  // would never write the start line. A channel's stdout is the runner's protocol, which says
  // nothing before it is asked.
  const auto deadline = Clock::now() + kExecStartTimeout;
  std::string before, line;
  bool seen = false, timed_out = false, out_open = !channel, err_open = true;
  while (!seen) {
    const auto now = Clock::now();
    if (now >= deadline) {
      timed_out = true;
      break;
    }
    pollfd fds[2];
    nfds_t n = 0;
    if (err_open) fds[n++] = {child->err_fd(), POLLIN, 0};
    if (out_open) fds[n++] = {child->out_fd(), POLLIN, 0};
    const int ready = n > 0 ? ::poll(fds, n, 50) : 0;
    if (out_open) {
      out_open = read_now(child->out_fd(), started.early_out);
      // Only a running command says that much (a runtime's refusal is a line or two): it has
      // started, and its session takes the start line off stderr when it comes.
      if (started.early_out.size() >= kEarlyOutputLimit) {
        started.start_line_pending = true;
        started.early_err = before + line;
        break;
      }
    }
    while (err_open && !seen) {
      char c = 0;
      const ssize_t got = ::read(child->err_fd(), &c, 1);
      if (got == 1) {
        if (c != '\n') {
          line.push_back(c);
          if (line.size() > 4096) before += std::exchange(line, {});
        } else if (line == kExecStarted) {
          seen = true;
        } else {
          before += line + "\n";
          line.clear();
        }
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      if (got == 0) err_open = false;  // its stderr ended without the start line
      break;
    }
    if (!err_open) break;
    if (!seen && ready == 0 && child->poll_exit()) {
      read_now(child->err_fd(), before);
      break;
    }
  }
  if (seen || started.start_line_pending) {
    started.child = std::move(child);
    return started;
  }
  before += line;
  if (timed_out) {
    child->end();
    error = dc::EngineError::of(Kind::kUnreachable, "the engine (" + target_.describe +
                                                        ") did not start the command within " +
                                                        std::to_string(kExecStartTimeout.count()) +
                                                        " s");
    return started;
  }
  std::string out = std::move(started.early_out);
  if (out_open) read_now(child->out_fd(), out);
  const int status = child->end(kExitWait);
  // The runtime could not run the command (runc's "OCI runtime exec failed", exit 126/127):
  // the backend reads that text, as it would through the Engine API.
  if (status == 126 || status == 127) {
    replay = std::make_unique<ReplayedExecSession>(std::move(out), std::move(before), status);
    return StartedExec{};
  }
  CliRun failed;
  failed.exit_status = status;
  failed.err = before;
  error = check(failed);
  if (error.ok())
    error = dc::EngineError::of(
        Kind::kOther, "`" + settings_.docker_binary + " exec` ended before starting the command");
  return StartedExec{};
}

std::unique_ptr<dc::ExecSession> DockerCliEngine::exec(const std::string& name,
                                                       const dc::ExecOptions& options,
                                                       dc::EngineError& error) {
  error = dc::EngineError{};
  std::unique_ptr<dc::ExecSession> replay;
  auto started = start_exec(name, options, false, error, replay);
  if (replay) return replay;
  if (!started.child) return nullptr;
  return std::make_unique<CliExecSession>(std::move(started.child), std::move(started.early_out),
                                          started.start_line_pending, std::move(started.early_err));
}

std::optional<runner_client::ChannelEnds> DockerCliEngine::open_channel(
    const std::string& name, const dc::ExecOptions& options, dc::EngineError& error) {
  error = dc::EngineError{};
  std::unique_ptr<dc::ExecSession> replay;
  auto started = start_exec(name, options, true, error, replay);
  auto& child = started.child;
  if (replay) {
    // The runtime could not start the runner ("cannot exec in a stopped state": kNotRunning, so
    // the backend brings the container back).
    struct Collect final : runner_client::ExecStreamDecoder::Handler {
      std::string text;
      void on_payload(Stream, std::string_view data) override { text.append(data); }
    } collect;
    replay->read(0ms, collect);
    CliRun refused;
    refused.exit_status = replay->finish(false).code.value_or(-1);
    refused.err = collect.text;
    error = check(refused);
    return std::nullopt;
  }
  if (!child) return std::nullopt;
  const int io = child->release_out();
  const int diagnostics = child->release_err();
  auto ends = runner_client::ChannelEnds::raw(io, io, diagnostics);
  // Released after the channel closed its ends: the CLI sees the end of its input, and the
  // runner with it; it gets a moment to exit by itself before it is ended.
  ends.owner = std::shared_ptr<Child>(child.release(), [](Child* c) {
    c->end(1s);
    delete c;
  });
  return ends;
}

}  // namespace execmcp::plugins::docker_cli
