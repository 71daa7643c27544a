// What a container engine does for ContainerBackend: the Engine API over a socket (docker-api) or
// a docker-compatible CLI binary (docker-cli). Everything above it (lifecycle and orphan policy,
// recovery, the kill sweep, capping, the runner) is the same for both: container_lifecycle.cpp and
// the command paths (command_path.hpp). FakeEngine fakes it for unit tests
// (tests/plugins/backends/docker_common/fake_engine.hpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "docker_common/lifecycle/container_spec.hpp"
#include "docker_common/lifecycle/runtime_check.hpp"
#include "runner_client/exec_stream_decoder.hpp"
#include "runner_client/runner_channel.hpp"

namespace execmcp::plugins::docker_common {

// How an engine call failed. `message` is the engine's words (for the CLI: its stderr, trimmed);
// the backend adds what it was doing unless the message is `complete` already (always so for
// kUnreachable, whose message names the endpoint, context or SSH host that was tried).
struct EngineError {
  enum class Kind {
    kNone,
    kUnreachable,   // the engine did not answer (down, SSH failed, permission on the socket...)
    kNotFound,      // no such container (or exec)
    kNotRunning,    // the container exists but is not running (an exec cannot start)
    kConflict,      // the name is taken
    kImageMissing,  // no such image
    kNoInput,       // this way to the engine cannot carry input to a process (see kNoUpgrade)
    kOther,         // the engine answered with an error
  };
  Kind kind = Kind::kNone;
  std::string message;
  bool complete = false;

  [[nodiscard]] bool ok() const { return kind == Kind::kNone; }
  static EngineError of(Kind kind, std::string message) {
    return {kind, std::move(message), kind == Kind::kUnreachable};
  }
  // A message that says what failed by itself.
  static EngineError sentence(Kind kind, std::string message) {
    return {kind, std::move(message), true};
  }
};

// "<doing> failed: <engine's words>", or the message alone when it is complete.
std::string describe_failure(const EngineError& error, std::string_view doing);

struct ContainerState {
  bool exists = false;  // false: no such container
  bool running = false;
  int exit_code = -1;  // PID 1's, once stopped
  bool oom_killed = false;
};

struct ContainerMount {
  std::string type;  // bind, volume, tmpfs
  std::string source;
  std::string target;
  bool writable = false;
};

// What the backend needs to know about an existing container (from a list or an inspect).
struct ContainerInfo {
  std::string id;
  std::string name;  // without Docker's leading '/'
  std::map<std::string, std::string> labels;
  std::vector<ContainerMount> mounts;
  ContainerState state;
  std::string user;  // Config.User: who its processes run as by default ("" = root)
  // The networks it is on: name -> its IPv4 address there ("" when the engine gave none).
  std::map<std::string, std::string> networks;
};

// Parses one container's inspect document (GET /containers/{id}/json, `docker inspect`, `podman
// inspect`: the same shape).
ContainerInfo container_info_from_inspect(const nlohmann::json& doc);

// True when `text` (an exec's failure, lower case as the runtimes write it) says the container's
// init is gone: runc's "... stopped state", gVisor's "... deleted state" (a sandbox that is
// ending). The exec never ran; the container is, or is about to be, not running. (exec mode's
// exec_never_ran() matches the whole "cannot exec in a ..." phrases in a command's output.)
bool says_container_init_gone(std::string_view text);

// Parses the engine's runtimes as GET /info's `Runtimes` (and `docker info --format '{{json
// .Runtimes}}'`) give them: {name: {path, runtimeArgs}}. Anything else is an empty list.
RuntimeList runtime_list_from_info(const nlohmann::json& runtimes);

// A network as the backend makes and checks them (an agent's internal network, the egress
// proxy's upstream network).
struct NetworkInfo {
  std::string id;
  std::string name;
  std::string driver;
  bool internal = false;  // no route out of it: its members reach only each other
  std::map<std::string, std::string> labels;
  std::vector<std::string> subnets;  // its address ranges (IPAM.Config[].Subnet), as CIDRs
  std::map<std::string, std::string> options;  // the driver's options (Options)
};

// Parses one network's inspect document (GET /networks/{id}, `docker network inspect`).
NetworkInfo network_info_from_inspect(const nlohmann::json& doc);

// A bridge network of execmcp's own.
struct NetworkSpec {
  std::string name;
  bool internal = true;
  std::map<std::string, std::string> labels;
  // The bridge driver's options (POST /networks/create Options, `docker network create -o`).
  std::map<std::string, std::string> options;
};

// What the backend needs to know about an image (GET /images/{name}/json, `docker image inspect`).
struct ImageInfo {
  std::string id;  // "sha256:..."
  std::map<std::string, std::string> labels;
  std::string user;  // Config.User
  std::vector<std::string> cmd;
  std::vector<std::string> entrypoint;
};

ImageInfo image_info_from_inspect(const nlohmann::json& doc);

// The temporary container that installs `preinstall`'s packages: the base image run as root with
// only execmcp's install script (never an agent's command), no secrets in its environment.
struct InstallSpec {
  std::string name;
  std::string image;
  std::string user;  // "0:0", or "" when the image's user is root already
  std::vector<std::string> cmd;
  std::string network = "none";
  std::optional<std::int64_t> memory_bytes;
  std::int64_t pids_limit = 0;
};

// How an install container becomes the cached image: the base image's user, command and
// entrypoint restored (the install ran as root with its own command), plus the cache labels.
struct CommitOptions {
  std::string repo;  // "execmcp/cache"
  std::string tag;
  std::string user;
  std::vector<std::string> cmd;
  std::vector<std::string> entrypoint;
  std::map<std::string, std::string> labels;
};

// One process started in the container.
struct ExecOptions {
  std::vector<std::string> cmd;
  std::vector<std::string> env;  // "KEY=VALUE"
  std::string user;
  std::string work_dir;
  bool attach_stdin = false;
};

// One exec in flight: its output by stream, its stdin, and how it ended.
class ExecSession {
 public:
  virtual ~ExecSession() = default;

  struct ReadStatus {
    bool eof = false;   // the output has ended
    std::string error;  // the stream broke (already phrased)
  };
  // Waits at most `wait` for output and hands what came to `handler` (Stdout, Stderr, or
  // SystemError: an error the engine reported in the stream). A protocol error is `error`.
  virtual ReadStatus read(std::chrono::milliseconds wait,
                          runner_client::ExecStreamDecoder::Handler& handler) = 0;

  struct WriteStatus {
    std::size_t bytes = 0;  // 0 when nothing could be written within the wait
    std::string error;
  };
  // Writes some of `data` to the process's stdin (attach_stdin), waiting at most `wait` for room.
  virtual WriteStatus write_some(std::string_view data, std::chrono::milliseconds wait) = 0;
  // The process sees the end of its input.
  virtual void close_stdin() = 0;
  // False when bytes written never reach the process (a proxy that refused the upgrade).
  [[nodiscard]] virtual bool carries_input() const = 0;

  struct Exit {
    std::optional<int> code;      // unknown when the engine could not say
    bool engine_answered = true;  // false: the engine went away (restarted or stopped)
  };
  // Ends the session (its output need not be over) and says how the process ended; `killed`: the
  // caller killed it and does not wait for the engine to notice.
  virtual Exit finish(bool killed) = 0;
  // Ends the session of a process whose container stopped (the stream may never end: gVisor), with
  // the exit status only if it is known already: nothing is waited for.
  virtual Exit abandon() { return finish(true); }
};

// A container's stdout log as it is written (Engine::follow_logs()): each line with the engine's
// time in front, "2026-11-26T10:16:56.123456789Z <line>\n" (podman writes "+00:00" for "Z").
class LogStream {
 public:
  virtual ~LogStream() = default;

  struct ReadStatus {
    bool eof = false;   // nothing more will come (the container stopped, or is gone)
    std::string error;  // the stream broke (already phrased)
  };
  // Waits at most `wait` for more of the log and appends what came to `out`.
  virtual ReadStatus read(std::chrono::milliseconds wait, std::string& out) = 0;
};

// The engine's events about one container (Engine::follow_events()) as the engine writes them:
// one JSON document a line, Docker's shape ({"Type": "container", "Action": "die", "Actor": {"ID",
// "Attributes": {"exitCode", "name", "signal"}}}) or Podman's ({"Status": "died", "ID", "Name",
// "ContainerExitCode"}). Untrusted bytes: ContainerEvents (container_events.hpp) bounds and parses
// them.
class EventStream {
 public:
  virtual ~EventStream() = default;

  struct ReadStatus {
    bool eof = false;   // nothing more will come (the engine ended the stream)
    std::string error;  // the stream broke (already phrased)
  };
  // Waits at most `wait` for more of the stream and appends what came to `out`.
  virtual ReadStatus read(std::chrono::milliseconds wait, std::string& out) = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;

  // For messages: "unix:///var/run/docker.sock", "docker --context prod", ...
  [[nodiscard]] virtual std::string describe() const = 0;
  // True when the engine's containers can bind-mount this machine's files (execmcp-runner is then
  // mounted from the host's install, else copied into the container).
  [[nodiscard]] virtual bool sees_host_files() const = 0;

  // Checks once that the engine answers (later calls return at once); kUnreachable otherwise.
  virtual EngineError connect() = 0;
  // The runtimes the engine has registered (GET /info's Runtimes, `docker info`): each name with
  // the arguments the engine passes it (runtimeArgs). kOther when the engine cannot list them
  // (Podman, a socket proxy that refuses /info).
  virtual EngineError runtimes(RuntimeList& out) = 0;
  // kImageMissing when the image is not there (nothing is ever pulled).
  virtual EngineError check_image(const std::string& image) = 0;
  // The image's id, labels and run config; kImageMissing when there is no such image.
  virtual EngineError image_info(const std::string& image, ImageInfo& out) = 0;
  // Creates (does not start) the install container of `preinstall`.
  virtual EngineError create_install(const InstallSpec& spec) = 0;
  // Commits a (stopped) container as the image options.repo:options.tag; its id in `image_id`.
  virtual EngineError commit(const std::string& container, const CommitOptions& options,
                             std::string& image_id) = 0;
  // Every container (running or not) carrying all of `labels`.
  virtual EngineError list(const std::map<std::string, std::string>& labels,
                           std::vector<ContainerInfo>& out) = 0;
  // kNotFound when there is no such container.
  virtual EngineError inspect(const std::string& name, ContainerInfo& out) = 0;
  // kConflict when the name is taken, kImageMissing when the image is gone.
  virtual EngineError create(const ContainerSpec& spec) = 0;
  virtual EngineError start(const std::string& name) = 0;
  // Stops the container, keeping it: SIGTERM to its PID 1, SIGKILL once `timeout` has passed.
  // A container that is not running is fine; kNotFound when there is no such container.
  virtual EngineError stop(const std::string& name, std::chrono::seconds timeout) = 0;
  // Force-removes the container and its anonymous volumes; kNotFound when it was not there.
  virtual EngineError remove(const std::string& name_or_id) = 0;
  // True once the container is not running (or gone), false if it still runs after `timeout`.
  virtual bool wait_stopped(const std::string& name, std::chrono::milliseconds timeout) = 0;

  // Networks. kConflict when the name is taken.
  virtual EngineError create_network(const NetworkSpec& spec) = 0;
  // kNotFound when there is no such network.
  virtual EngineError inspect_network(const std::string& name, NetworkInfo& out) = 0;
  // Every network carrying all of `labels`.
  virtual EngineError list_networks(const std::map<std::string, std::string>& labels,
                                    std::vector<NetworkInfo>& out) = 0;
  // Joins the container to the network, where the others reach it as `alias` too.
  virtual EngineError connect_network(const std::string& network, const std::string& container,
                                      const std::string& alias) = 0;
  // kNotFound when it was not there; kConflict while a container is still on it.
  virtual EngineError remove_network(const std::string& name_or_id) = 0;
  // Unpacks the tar archive `tar` into `dir` in the container.
  virtual EngineError copy_into(const std::string& name, const std::string& dir,
                                const std::string& tar) = 0;
  // The tar archive of `path` in the container (created or running): a file as one member under
  // its base name, a symlink as the link itself (not followed). At most kMaxCopyFromBytes of it:
  // past that a kOther error that says so, and `tar` is empty. kNotFound when the container or
  // the path is not there (the message says which).
  static constexpr std::size_t kMaxCopyFromBytes = std::size_t{8} << 20;
  virtual EngineError copy_from(const std::string& name, const std::string& path,
                                std::string& tar) = 0;
  // The container's log, both streams in arrival order; a log cut short keeps what came, with a
  // line saying so.
  virtual EngineError logs(const std::string& name, std::string& text) = 0;
  // Follows the container's stdout log from `since` (Unix seconds, "1700000000", the lines of that
  // second included; "" = from its start), its lines with their times (LogStream); a stopped
  // container's stream ends after what it logged. Null and `error` on failure (kNotFound: no such
  // container).
  virtual std::unique_ptr<LogStream> follow_logs(const std::string& name, const std::string& since,
                                                 EngineError& error) = 0;

  // Follows the engine's events about the container `name` (by name, so a container made again
  // under it too): kill, die, oom, stop and destroy, from `since` (Unix seconds, "1700000000"; the
  // events of that second included) on (EventStream). Null and `error` where the engine will not
  // give them (a socket proxy that refuses GET /events, ...): then the backend polls.
  virtual std::unique_ptr<EventStream> follow_events(const std::string& name,
                                                     const std::string& since,
                                                     EngineError& error) = 0;

  // Starts a process in the container. kNotFound / kNotRunning tell the backend to bring the
  // container back and try once more.
  virtual std::unique_ptr<ExecSession> exec(const std::string& name, const ExecOptions& options,
                                            EngineError& error) = 0;
  // Starts execmcp-runner with its stdin and stdout as the channel (options.attach_stdin is set).
  // kNoInput when this way to the engine cannot carry the calls.
  virtual std::optional<runner_client::ChannelEnds> open_channel(const std::string& name,
                                                                 const ExecOptions& options,
                                                                 EngineError& error) = 0;
  // False when input may never reach a process through this engine (a proxy in between that
  // refuses upgrades); the backend then checks once with a harmless exec.
  [[nodiscard]] virtual bool input_always_arrives() const = 0;
};

}  // namespace execmcp::plugins::docker_common
