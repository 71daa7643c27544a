// The per-agent container as data: name, labels, mounts, limits, and its Engine API create body.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "docker_common/lifecycle/mount_source.hpp"
#include "docker_common/lifecycle/runtime_check.hpp"
#include "docker_common/settings/docker_settings.hpp"
#include "execmcp/sdk/executor_backend.hpp"

namespace execmcp::plugins::docker_common {

inline constexpr const char* kLabelManaged = "execmcp.managed";
inline constexpr const char* kLabelAgent = "execmcp.agent";
inline constexpr const char* kLabelInstance = "execmcp.instance";
inline constexpr const char* kLabelOwnerPid = "execmcp.owner.pid";
inline constexpr const char* kLabelOwnerHost = "execmcp.owner.host";
// What an execmcp object is for: an agent's container (kRoleAgent; one made before round 4 of
// the hardening carries no role label), its egress proxy or its egress network.
inline constexpr const char* kLabelRole = "execmcp.role";
inline constexpr const char* kRoleAgent = "agent";
inline constexpr const char* kRoleEgressProxy = "egress-proxy";
inline constexpr const char* kRoleEgressNetwork = "egress-network";

// `network: egress`: the agent's internal network and its proxy container, named after the
// agent's container ("<container>-egress-net", "<container>-egress").
std::string egress_network_name(const std::string& container);
std::string egress_proxy_name(const std::string& container);
// The proxy's name on its agent's internal network, where the agent's HTTP_PROXY finds it: the
// network is the agent's own, so one fixed name serves, and it stays within DNS's 63 characters a
// label, which a long container name does not.
inline constexpr const char* kEgressProxyAlias = "execmcp-egress-proxy";

// The longest name execmcp gives an engine object (container or network), and the longest suffix
// it adds to an agent's container name for one: a name is refused (never cut) past it, so two
// sandboxes never share one. Docker sets no limit; the container's log file
// (<log_dir>/<name>.log) must stay a valid file name.
inline constexpr std::size_t kMaxEngineName = 240;
inline constexpr std::string_view kLongestNameSuffix = "-egress-net";
// The longest user key a per-user sandbox takes (UserSandboxes::valid_user_key()); its encoding
// in a container name is at most twice as long.
inline constexpr std::size_t kMaxUserKeyLength = 63;

// Where execmcp-runner, the backend's agent inside the container, lives there.
inline constexpr const char* kRunnerDir = "/.execmcp";
inline constexpr const char* kRunnerPath = "/.execmcp/execmcp-runner";

// Where the sandbox finds the CA bundle that trusts its egress proxy's CA (parts/egress_trust.hpp):
// an anonymous volume, root's, read-only to the commands' user.
inline constexpr const char* kTrustDir = "/.execmcp-trust";

// How execmcp-runner reaches the container: not at all (exec_mode: exec), bind-mounted read-only
// from the host's install (a local engine), or copied into an anonymous volume at kRunnerDir
// through the Engine's archive endpoint (a remote engine, which cannot see the host's files).
enum class RunnerDelivery { None, Bind, Copy };

struct ContainerSpec {
  std::string name;
  std::string image;
  std::string user;              // "uid:gid" or a name; never root
  std::string working_dir;       // the agent's cwd as commands see it (container_cwd())
  std::vector<std::string> env;  // "KEY=VALUE"
  std::map<std::string, std::string> labels;
  std::vector<MountSpec> mounts;
  std::optional<std::int64_t> memory_bytes;
  std::optional<std::int64_t> disk_bytes;
  bool read_only_rootfs = true;
  std::map<std::string, std::string> tmpfs;  // container path -> mount options
  std::optional<std::int64_t> nano_cpus;
  std::int64_t pids_limit = 0;
  // > 0: RLIMIT_NPROC, soft and hard. Only under gVisor, whose kernel counts it per sandbox (the
  // agent's process limit there, as the engine's pids limit counts the sandbox's own tasks);
  // Linux counts it per user across the whole host.
  std::int64_t nproc_limit = 0;
  std::string network = "none";
  std::string network_alias;     // another name it has on `network` ("" = none)
  std::string runtime;           // "" = the engine's default
  std::vector<std::string> cmd;  // keeps the container alive between commands
  // The image's entrypoint replaced ("" = the image's): the program, then arguments before cmd.
  std::vector<std::string> entrypoint;
  RunnerDelivery runner = RunnerDelivery::None;
  std::string runner_source;  // the host's execmcp-runner, for RunnerDelivery::Bind
  // Anonymous volumes at these container paths (a part's files, copied in before the first
  // start), removed with the container.
  std::vector<std::string> volumes;
  // `sudo: true`: no no-new-privileges (sudo is setuid) and kSudoCapabilities in the bounding set.
  bool sudo = false;
};

// What `sudo: true` puts back in the bounding set (CapDrop ALL stays): what sudo itself needs
// (SETUID, SETGID, AUDIT_WRITE) and what a root package manager needs (CHOWN, DAC_OVERRIDE,
// FOWNER, FSETID, KILL). A subset of Docker's defaults; see docs/security.md.
// Written as the docker CLI normalizes --cap-add (CAP_ prefix, sorted), so both backends'
// containers inspect the same.
inline constexpr std::array<const char*, 8> kSudoCapabilities = {
    "CAP_AUDIT_WRITE", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER",
    "CAP_FSETID",      "CAP_KILL",  "CAP_SETGID",       "CAP_SETUID"};

// The skills dir's second read-only target: where skill loaders (openskills, MassGen's
// `.agent/skills`) look in the image user's home. The first is /skills.
inline constexpr const char* kSkillsHomeTarget = "/home/execmcp/.agent/skills";

// "execmcp-<agent>-<instance>". Never changed nor cut: throws std::invalid_argument when a
// character lies outside Docker's name charset [a-zA-Z0-9_.-] or the name with kLongestNameSuffix
// is longer than kMaxEngineName. The host makes instance ids that no user can make collide
// (docs/security.md, Names and ownership).
std::string container_name(const std::string& agent_id, const std::string& instance_id);

// `path`, which lies at or under `from`, moved to lie under `to` instead.
std::string rebase_path(const std::string& path, const std::string& from, const std::string& to);

// Where commands see the host path `host_path`: a path at or under the workspace (init.cwd) lies
// under init.sandbox_cwd when that is set; any other path (and every path when it is not) is
// mounted at its host path.
std::string container_path(const sdk::BackendInit& init, const std::string& host_path);
// The reverse: a path under init.sandbox_cwd as the host sees it; any other path unchanged.
std::string host_path(const sdk::BackendInit& init, const std::string& container_path);
// `text` (a message) with the workspace's host path written as commands see it: each whole
// occurrence of init.cwd replaced by init.sandbox_cwd when that is set.
std::string in_container_terms(const sdk::BackendInit& init, std::string text);
// The agent's cwd as commands see it: init.sandbox_cwd, or init.cwd when that is empty.
std::string container_cwd(const sdk::BackendInit& init);
// "" when init.sandbox_cwd is empty or a usable mount point for the workspace (absolute, normal,
// not "/", clear of the container's system directories, execmcp's own mount points and the other
// mounts), else why not.
std::string check_sandbox_cwd(const sdk::BackendInit& init, const DockerSettings& settings);

// Mounts at the same paths as on the host (container_path(): the workspace and what lies in it at
// init.sandbox_cwd when set): workspace rw, context paths ro unless writable,
// protected paths of writable grants ro (and the directories on the way to them rw, onto
// themselves: see protected_path_parents()), temp workspace ro, tools -> /tools ro, skills ->
// /skills and kSkillsHomeTarget ro, then extra mounts. A target already mounted is not mounted
// twice (the first, more specific entry wins). A grant inside another grant with the same access, a
// tools dir inside any grant and a skills dir inside a writable one get no mount of their own: they
// are visible at their host paths, and a separate mount would take its source from a directory the
// agent may change (see docs/security.md, Container mounts). Every source still goes through
// check_mount_source() before each container start.
std::vector<MountSpec> container_mounts(const sdk::BackendInit& init,
                                        const std::vector<MountSpec>& extra);

// Where commands find the tools dir: "/tools" when it is mounted there, its container_path() when
// it lies inside a grant (so it is visible already), "" when there is none.
std::string container_tools_dir(const sdk::BackendInit& init);

// True for the read-only mount container_mounts() makes of a writable grant's protected path.
bool is_protected_mount(const sdk::BackendInit& init, const MountSpec& mount);

// Every directory strictly between a writable grant and one of its protected paths (none inside
// a protected path): container_mounts() binds each onto itself, read-write, because the kernel
// refuses to rename or remove a mount point, so no command can move a protected path away from
// the name the next container start mounts it by.
std::vector<std::string> protected_path_parents(const sdk::BackendInit& init);

// True for such a mount of a directory on the way to a protected path.
bool is_protected_parent_mount(const sdk::BackendInit& init, const MountSpec& mount);

// The paths this agent's own container can write: writable grants and writable extra mounts.
std::vector<WritableRoot> writable_roots(const sdk::BackendInit& init,
                                         const std::vector<MountSpec>& extra);

std::map<std::string, std::string> container_labels(const std::string& agent_id,
                                                    const std::string& instance_id,
                                                    std::int64_t owner_pid,
                                                    const std::string& owner_host);

// The image the agent's container is made from, before `preinstall`: `image`, or the sudo image
// when `sudo: true` leaves `image` at the default.
std::string agent_image(const DockerSettings& settings);

// `runtime`: what the `runtime` means (check_runtime(), runtime_check.hpp), which changes how the
// agent's `pids_limit` is enforced (engine_pids_limit(), ContainerSpec::nproc_limit).
ContainerSpec make_container_spec(const sdk::BackendInit& init, const DockerSettings& settings,
                                  const std::string& user, std::int64_t owner_pid,
                                  const std::string& owner_host,
                                  const RuntimeProfile& runtime = RuntimeProfile::runc());

// The body of POST /containers/create. Hardened: CapDrop ALL, no-new-privileges, an init process
// (reaps the orphans a killed command leaves behind, so they do not eat the pids limit), and a
// container log capped at kLogMaxSize x kLogMaxFiles (anything can write to PID 1's stdout).
inline constexpr const char* kLogMaxSize = "1m";
inline constexpr const char* kLogMaxFiles = "2";
// Where programs write by habit; tmpfs over a read-only image filesystem.
inline constexpr std::array<const char*, 3> kScratchDirs = {"/tmp", "/var/tmp", "/home/execmcp"};
nlohmann::json container_create_body(const ContainerSpec& spec);

}  // namespace execmcp::plugins::docker_common
