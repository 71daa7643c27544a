// The settings both Docker backends accept, parsed strictly from the plugin's settings JSON.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "execmcp/sdk/settings_check.hpp"

#include "docker_common/parts/egress_policy.hpp"

namespace execmcp::plugins::docker_common {

struct MountSpec {
  std::string source;  // host path, absolute
  std::string target;  // container path, absolute
  bool read_only = true;
};

// What the `credentials` setting names: files of the server's $HOME bound read-only into the image
// user's home, more mounts, and environment variables (secrets) given to every command. Parsed
// here for its shape only; resolve_credentials() (credentials.hpp) reads the files and variables.
struct CredentialsSettings {
  std::vector<std::string>
      mount;  // kinds: ssh_keys, git_config, gh_config, npm_config, pypi_config
  std::vector<MountSpec> additional_mounts;  // {host path: {bind, mode}}; also in extra_mounts
  std::string env_file;                      // absolute path; "" when none
  std::optional<std::vector<std::string>> env_vars_from_file;  // unset: every variable of the file
  std::vector<std::string> env_vars;  // names taken from the server's environment
  bool pass_all_env = false;          // the server's whole environment, less its own variables
  // What pass_all_env and a whole env_file never give: the egress secrets' names and the server
  // variables they are read from (set by parse_docker_settings(), not a setting).
  std::vector<std::string> withheld;

  [[nodiscard]] bool has_env() const {
    return !env_file.empty() || !env_vars.empty() || pass_all_env;
  }
};

// What the `preinstall` setting names: packages installed once into an image derived from the
// agent's image and cached by content (see preinstall.hpp). An entry that is an absolute path is
// a file of this machine (a .deb, a wheel, an npm tarball) copied into the install container.
struct PreinstallSettings {
  std::vector<std::string> system;  // apt-get install
  std::vector<std::string> python;  // python3 -m pip install
  std::vector<std::string> npm;     // npm install -g
  // preinstall_on_failure: false (fail) makes start() fail; true (continue) starts from the base
  // image and tells the agent in the first command's notices.
  bool continue_on_failure = false;

  [[nodiscard]] bool empty() const { return system.empty() && python.empty() && npm.empty(); }
};

// The image the backend uses with `sudo: true` when `image` is the default one.
inline constexpr const char* kDefaultImage = "execmcp/runtime:latest";
inline constexpr const char* kSudoImage = "execmcp/runtime-sudo:latest";

// How the backend runs a command in the container.
enum class ExecMode {
  Agent,  // through execmcp-runner, a static program the backend starts inside the container
  Exec,   // one Engine exec per command
};

struct DockerSettings {
  std::string image = kDefaultImage;
  // A bound by default: with no limit at all a hog takes the host's memory (and a tmpfs write,
  // its page cache). "memory": "none" removes it.
  static constexpr std::int64_t kDefaultMemoryBytes = std::int64_t{2} << 30;
  std::optional<std::int64_t> memory_bytes = kDefaultMemoryBytes;  // unset: no limit
  // The container's writable layer (HostConfig.StorageOpt size); unset: no bound. The engine
  // supports it only on overlay2 over xfs mounted with pquota (or btrfs, zfs).
  std::optional<std::int64_t> disk_bytes;
  // The image's filesystem is read-only and the places a program writes by habit (/tmp, /var/tmp,
  // $HOME) are tmpfs of this size each, whose pages count against `memory`: nothing a command
  // writes outside the mounts reaches the host's disk. "writable_rootfs": true restores a
  // writable (and, without `disk`, unbounded) image filesystem.
  static constexpr std::int64_t kDefaultTmpfsBytes = std::int64_t{512} << 20;
  std::int64_t tmpfs_bytes = kDefaultTmpfsBytes;
  bool writable_rootfs = false;
  std::optional<double> cpus;     // unset: no limit
  std::int64_t pids_limit = 512;  // <= 0: no limit
  std::string network = "none";   // none | bridge | host | egress
  // The engine's runtime for the agent's container (HostConfig.Runtime, --runtime): the name of
  // one the engine has registered, e.g. "runsc" (gVisor); "" is the engine's default.
  std::string runtime;
  // `network: egress`: the agent's container is on an internal network of its own, and reaches
  // out only through its proxy, which applies this policy (see egress_proxy.hpp). Set exactly
  // when `network` is egress.
  std::optional<EgressPolicy> egress;
  std::string user;  // empty: the workspace-owner policy decides
  std::map<std::string, std::string> env;
  std::vector<MountSpec> extra_mounts;
  std::string docker_host;  // empty: $DOCKER_HOST, then unix:///var/run/docker.sock
  // docker-cli only. The program (a name looked up in the child's PATH, or an absolute path):
  // "docker", or a compatible one such as "podman".
  std::string docker_binary = "docker";
  std::string docker_context;             // --context NAME; excludes docker_host
  std::vector<std::string> docker_flags;  // global flags before the command, e.g. Podman's
                                          // --cgroup-manager=cgroupfs
  // Variables added to the CLI's environment, which otherwise holds only PATH, HOME, LC_ALL=C and
  // DOCKER_HOST / DOCKER_CONFIG when set (nothing else of the server's is inherited).
  std::map<std::string, std::string> cli_env;
  std::string command_prefix;
  std::string venv_path;  // container path; relative means relative to the agent's cwd
  std::string shell = "/bin/sh";
  // Agent falls back to Exec, with a notice, when the runner cannot start.
  ExecMode exec_mode = ExecMode::Agent;
  // Passwordless sudo for the container user: the sudo image (for the default image), the
  // capabilities sudo and package managers need in the bounding set, no no-new-privileges, and a
  // writable image filesystem (see docs/security.md, "sudo and credentials").
  bool sudo = false;
  CredentialsSettings credentials;
  PreinstallSettings preinstall;

  // Attach mode: run the commands in this existing container (a name or id), which execmcp does
  // not create, restart or remove (see docs/docker-backend.md, Attach mode). Empty: execmcp
  // creates and manages the agent's container.
  std::string container;
  // Attach mode: a read-only grant that the container mounts read-write is refused unless this is
  // true (the agent could then write what the config says it may only read).
  bool attach_accept_writable_context = false;
};

// Which plugin reads the settings: each knows its own keys and refuses the other's by name.
enum class EngineKind {
  kApi,  // docker-api: the Engine API over a socket
  kCli,  // docker-cli: a docker-compatible CLI binary
};

// One setting the Docker plugins accept: parse_docker_settings() finds a key's row and calls its
// parser; whatever lists the settings with their defaults (check-config, later) reads them here.
struct SettingRow {
  // Reads the value of `key` (the row's name) into `settings`; throws SettingError.
  using Parse = void (*)(const std::string& key, const nlohmann::json& value, EngineKind kind,
                         DockerSettings& settings);

  std::string_view name;
  bool api = true;  // docker-api takes it; when false, it refuses it by name (use docker-cli)
  bool cli = true;  // docker-cli takes it
  // Allowed with `container` (attach mode); attach mode refuses the others by name.
  bool attach = true;
  std::string_view default_text;  // the default, to be shown: a value ("2g") or words ("no limit")
  std::string_view description;   // one line
  Parse parse = nullptr;

  [[nodiscard]] bool accepts(EngineKind kind) const { return kind == EngineKind::kApi ? api : cli; }
};

// Every setting, in the order the "unknown setting" error lists them.
std::span<const SettingRow> docker_setting_rows();

// A setting that is wrong. what() names it the way the settings are written ("setting
// 'egress.allow[3]': ..."); key() and message() keep the two apart, so the plugins' settings check
// can point the host at the line the setting was written on.
class SettingError : public std::invalid_argument {
 public:
  // what() is "setting '<key>': <message>".
  SettingError(std::string key, std::string message);
  // what() is `what`, for the errors that read better in words of their own ("unknown setting
  // 'x' (known: ...)").
  SettingError(std::string key, std::string message, const std::string& what);

  // As written: "extra_mounts[0].source"; "" for the settings as a whole.
  [[nodiscard]] const std::string& key() const { return key_; }
  // Without the key: "expected a string".
  [[nodiscard]] const std::string& message() const { return message_; }
  // key() as an RFC 6901 pointer ("/extra_mounts/0/source"). A part that is a host path (the
  // keys of credentials.additional_mounts) ends it: the pointer stops at the map holding it.
  [[nodiscard]] std::string pointer() const;

 private:
  std::string key_;
  std::string message_;
};

// Throws SettingError naming the key and what it expects, or the unknown key and the
// known ones. docker-api refuses the CLI's keys and an ssh:// docker_host (both say "use plugin
// docker-cli"); docker-cli refuses docker_host with docker_context, as the docker CLI does.
DockerSettings parse_docker_settings(const std::string& settings_json,
                                     EngineKind kind = EngineKind::kApi);

// The Docker plugins' settings check (SDK 2.1, EXECMCP_SETTINGS_CHECK): every problem of
// `egress` at once, each at its own pointer, and otherwise the first problem
// parse_docker_settings() finds, at the setting it names.
void check_docker_settings(const std::string& settings_json, EngineKind kind,
                           std::vector<sdk::SettingsProblem>& problems);

// True for "root", "0", "root:x", "0:x": the container user may never be root.
bool is_root_user(const std::string& user);

}  // namespace execmcp::plugins::docker_common
