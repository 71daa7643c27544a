// Builds the per-agent container spec and its Engine API JSON.
#include "docker_common/lifecycle/container_spec.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "docker_common/lifecycle/runtime_check.hpp"
#include "docker_common/log_text.hpp"

namespace execmcp::plugins::docker_common {

std::string container_name(const std::string& agent_id, const std::string& instance_id) {
  std::string name = "execmcp-" + agent_id + "-" + instance_id;
  const bool charset_ok = std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
  });
  if (!charset_ok)
    throw std::invalid_argument("container name '" + log_text(name, 300) +
                                "' may contain only letters, digits, '_', '.' and '-': the agent "
                                "id and the instance id must keep to them");
  if (name.size() + kLongestNameSuffix.size() > kMaxEngineName)
    throw std::invalid_argument(
        "container name '" + name + "' is " + std::to_string(name.size()) +
        " characters, and with the longest suffix execmcp adds ('" +
        std::string(kLongestNameSuffix) + "') more than " + std::to_string(kMaxEngineName) +
        ": shorten the agent id or the instance id (a per-user agent's sandboxes add '-u-' and "
        "their user's key, encoded: up to " +
        std::to_string(3 + 2 * kMaxUserKeyLength) + " characters)");
  return name;
}

namespace {

// The grant `path` lies in (itself or above it), writable ones first; nullptr when none.
const sdk::PathGrant* enclosing_grant(const sdk::BackendInit& init, const std::string& path,
                                      bool writable_only) {
  const sdk::PathGrant* found = nullptr;
  for (const auto& g : init.paths) {
    if (!path_within(path, g.path) || (writable_only && !g.writable)) continue;
    if (found == nullptr || (g.writable && !found->writable)) found = &g;
  }
  return found;
}

// Where the container's own things are: a workspace there would hide them, or they it.
constexpr std::array<const char*, 17> kReservedContainerPaths = {
    "/proc",   "/sys",  "/dev",     "/tools", "/skills",       kRunnerDir,
    kTrustDir, "/tmp",  "/var/tmp", "/etc",   "/home/execmcp", "/usr",
    "/bin",    "/sbin", "/lib",     "/lib64", "/run"};

}  // namespace

std::string rebase_path(const std::string& path, const std::string& from, const std::string& to) {
  if (path == from) return to;
  return (to == "/" ? std::string() : to) + (from == "/" ? path : path.substr(from.size()));
}

std::string container_path(const sdk::BackendInit& init, const std::string& host_path) {
  if (init.sandbox_cwd.empty() || !path_within(host_path, init.cwd)) return host_path;
  return rebase_path(host_path, init.cwd, init.sandbox_cwd);
}

std::string host_path(const sdk::BackendInit& init, const std::string& container_path) {
  if (init.sandbox_cwd.empty() || !path_within(container_path, init.sandbox_cwd))
    return container_path;
  return rebase_path(container_path, init.sandbox_cwd, init.cwd);
}

std::string in_container_terms(const sdk::BackendInit& init, std::string text) {
  if (init.sandbox_cwd.empty() || init.cwd == "/") return text;
  for (auto at = text.find(init.cwd); at != std::string::npos; at = text.find(init.cwd, at)) {
    const auto end = at + init.cwd.size();
    const bool whole =
        end == text.size() || std::string_view("/',) \"").find(text[end]) != std::string_view::npos;
    if (!whole) {
      at = end;
      continue;
    }
    text.replace(at, init.cwd.size(), init.sandbox_cwd);
    at += init.sandbox_cwd.size();
  }
  return text;
}

std::string container_cwd(const sdk::BackendInit& init) {
  return init.sandbox_cwd.empty() ? init.cwd : init.sandbox_cwd;
}

std::string check_sandbox_cwd(const sdk::BackendInit& init, const DockerSettings& settings) {
  const std::string& at = init.sandbox_cwd;
  if (at.empty()) return {};
  const std::string said = "sandbox_cwd '" + at + "' ";
  if (at.front() != '/' || at.back() == '/' ||
      std::filesystem::path(at).lexically_normal().string() != at)
    return said + "must be an absolute, normal path (no '.', '..', '//' or trailing '/')";
  if (!settings.container.empty())
    return said + "needs a container execmcp creates: an attached container (container: " +
           settings.container + ") keeps the mounts it was made with";
  for (const char* reserved : kReservedContainerPaths)
    if (path_within(at, reserved) || path_within(reserved, at))
      return said + "clashes with " + reserved +
             " in the container: choose a directory of its own, such as /workspace";
  // What lies in the workspace on the host lies under sandbox_cwd by design; nothing else may be
  // mounted at, in or above the workspace's mount point. (Looked at without sandbox_cwd, so that
  // a mount it would take the place of is seen.)
  auto plain = init;
  plain.sandbox_cwd.clear();
  for (const auto& m : container_mounts(plain, settings.extra_mounts)) {
    if (path_within(m.source, init.cwd) && m.source == m.target) continue;
    if (path_within(m.target, at) || path_within(at, m.target))
      return said + "clashes with the mount of " + m.source + " at " + m.target +
             " in the container: choose a directory of its own, such as /workspace";
  }
  return {};
}

std::string container_tools_dir(const sdk::BackendInit& init) {
  if (init.tools_dir.empty()) return {};
  // Inside a grant it is already visible at its host path: a mount of its own would take a
  // source from a directory the agent may change (the default <cwd>/tools is in the workspace).
  return enclosing_grant(init, init.tools_dir, false) != nullptr
             ? container_path(init, init.tools_dir)
             : "/tools";
}

std::vector<MountSpec> container_mounts(const sdk::BackendInit& init,
                                        const std::vector<MountSpec>& extra) {
  std::vector<MountSpec> mounts;
  auto add = [&](const std::string& source, const std::string& target, bool read_only) {
    if (source.empty()) return;
    for (const auto& m : mounts)
      if (m.target == target) return;
    mounts.push_back({source, target, read_only});
  };
  // Every mount from the grants is at its container_path(): the host path, except in a workspace
  // with a sandbox_cwd.
  auto add_own = [&](const std::string& source, bool read_only) {
    add(source, container_path(init, source), read_only);
  };
  add_own(init.cwd, false);
  for (std::size_t i = 1; i < init.paths.size(); ++i) {
    const auto& g = init.paths[i];
    // A grant inside another grant with the same access is already visible through it. One with
    // other access keeps its own mount, and check_mount_source() refuses it when the outer one is
    // writable.
    bool covered = false;
    for (std::size_t j = 0; j < init.paths.size(); ++j)
      covered |= j != i && init.paths[j].path != g.path &&
                 path_within(g.path, init.paths[j].path) && init.paths[j].writable == g.writable;
    if (!covered) add_own(g.path, !g.writable);
  }
  // Protected paths inside a writable grant: read-only binds over the writable one (the engine
  // mounts the shallower target first). The source lies in this agent's own writable grant, so
  // checked_spec() checks it against the other agents' paths only, and for symlinks as always.
  for (const auto& g : init.paths)
    if (g.writable)
      for (const auto& p : g.protected_paths) add_own(p, true);
  // Each directory between the grant and a protected path, bound onto itself: the kernel refuses
  // to rename or remove a mount point (EBUSY), so `mv sub sub2` cannot take the protected path
  // away from the name the next start mounts by.
  for (const auto& dir : protected_path_parents(init)) add_own(dir, false);
  add_own(init.temp_workspace, true);
  if (container_tools_dir(init) == "/tools") add(init.tools_dir, "/tools", true);
  if (!init.skills_dir.empty() && enclosing_grant(init, init.skills_dir, true) == nullptr) {
    add(init.skills_dir, "/skills", true);
    add(init.skills_dir, kSkillsHomeTarget, true);
  }
  for (const auto& m : extra) add(m.source, m.target, m.read_only);
  return mounts;
}

std::vector<std::string> protected_path_parents(const sdk::BackendInit& init) {
  std::vector<std::string> protected_paths, out;
  for (const auto& g : init.paths)
    if (g.writable)
      protected_paths.insert(protected_paths.end(), g.protected_paths.begin(),
                             g.protected_paths.end());
  for (const auto& g : init.paths) {
    if (!g.writable) continue;
    for (const auto& p : g.protected_paths) {
      if (!path_within(p, g.path) || p == g.path) continue;
      // "/g/a/b/p": "/g/a", "/g/a/b".
      for (auto end = p.find('/', g.path.size() + 1); end != std::string::npos;
           end = p.find('/', end + 1)) {
        const std::string dir = p.substr(0, end);
        // Inside a protected path it is read-only already: a writable bind would undo that.
        const bool inside_protected =
            std::any_of(protected_paths.begin(), protected_paths.end(),
                        [&](const std::string& q) { return path_within(dir, q); });
        if (!inside_protected && std::find(out.begin(), out.end(), dir) == out.end())
          out.push_back(dir);
      }
    }
  }
  return out;
}

bool is_protected_parent_mount(const sdk::BackendInit& init, const MountSpec& mount) {
  if (mount.read_only || mount.target != container_path(init, mount.source)) return false;
  const auto parents = protected_path_parents(init);
  return std::find(parents.begin(), parents.end(), mount.source) != parents.end();
}

bool is_protected_mount(const sdk::BackendInit& init, const MountSpec& mount) {
  if (!mount.read_only || mount.target != container_path(init, mount.source)) return false;
  for (const auto& g : init.paths)
    if (g.writable)
      for (const auto& p : g.protected_paths)
        if (p == mount.source) return true;
  return false;
}

std::vector<WritableRoot> writable_roots(const sdk::BackendInit& init,
                                         const std::vector<MountSpec>& extra) {
  std::vector<WritableRoot> roots;
  for (const auto& g : init.paths)
    if (g.writable) roots.push_back({g.path, "this agent"});
  for (const auto& m : extra)
    if (!m.read_only) roots.push_back({m.source, "this agent (extra_mounts)"});
  return roots;
}

std::map<std::string, std::string> container_labels(const std::string& agent_id,
                                                    const std::string& instance_id,
                                                    std::int64_t owner_pid,
                                                    const std::string& owner_host) {
  return {{kLabelManaged, "true"},
          {kLabelRole, kRoleAgent},
          {kLabelAgent, agent_id},
          {kLabelInstance, instance_id},
          {kLabelOwnerPid, std::to_string(owner_pid)},
          {kLabelOwnerHost, owner_host}};
}

std::string egress_network_name(const std::string& container) {
  return container + "-egress-net";
}

std::string egress_proxy_name(const std::string& container) {
  return container + "-egress";
}

std::string agent_image(const DockerSettings& settings) {
  return settings.sudo && settings.image == kDefaultImage ? std::string(kSudoImage)
                                                          : settings.image;
}

ContainerSpec make_container_spec(const sdk::BackendInit& init, const DockerSettings& settings,
                                  const std::string& user, std::int64_t owner_pid,
                                  const std::string& owner_host, const RuntimeProfile& runtime) {
  ContainerSpec spec;
  spec.name = container_name(init.agent_id, init.instance_id);
  spec.image = agent_image(settings);
  spec.sudo = settings.sudo;
  spec.user = user;
  spec.working_dir = container_cwd(init);
  for (const auto& [k, v] : settings.env) spec.env.push_back(k + "=" + v);
  spec.labels = container_labels(init.agent_id, init.instance_id, owner_pid, owner_host);
  spec.mounts = container_mounts(init, settings.extra_mounts);
  spec.memory_bytes = settings.memory_bytes;
  spec.disk_bytes = settings.disk_bytes;
  // sudo is for installing packages, which write /usr and /var: the image's filesystem is
  // writable then, but the scratch dirs stay tmpfs unless writable_rootfs says otherwise.
  spec.read_only_rootfs = !settings.writable_rootfs && !settings.sudo;
  if (!settings.writable_rootfs) {
    // Mode 1777: any container user (the image's, the workspace owner's, a configured one) has a
    // writable $HOME and /tmp; exec, because build tools run what they put there.
    for (const char* dir : kScratchDirs)
      spec.tmpfs[dir] =
          "rw,nosuid,nodev,exec,mode=1777,size=" + std::to_string(settings.tmpfs_bytes);
  }
  if (settings.cpus) spec.nano_cpus = static_cast<std::int64_t>(std::llround(*settings.cpus * 1e9));
  spec.pids_limit = engine_pids_limit(settings.pids_limit, runtime.pids_limit_is_nproc);
  if (runtime.pids_limit_is_nproc && settings.pids_limit > 0)
    spec.nproc_limit = settings.pids_limit;
  spec.network = settings.network;
  spec.runtime = settings.runtime;
  if (settings.egress) {
    // Only the internal network: the proxy, which the agent's tools find in these variables, is
    // the one way out (see egress_proxy.hpp). Not secret: the proxy's name and port.
    spec.network = egress_network_name(spec.name);
    const auto proxy_env = egress_client_env(kEgressProxyAlias);
    spec.env.insert(spec.env.end(), proxy_env.begin(), proxy_env.end());
  }
  spec.cmd = {"sleep", "infinity"};
  return spec;
}

nlohmann::json container_create_body(const ContainerSpec& spec) {
  nlohmann::json mounts = nlohmann::json::array();
  for (const auto& m : spec.mounts)
    mounts.push_back(
        {{"Type", "bind"}, {"Source", m.source}, {"Target", m.target}, {"ReadOnly", m.read_only}});
  if (spec.runner == RunnerDelivery::Bind)
    mounts.push_back({{"Type", "bind"},
                      {"Source", spec.runner_source},
                      {"Target", kRunnerPath},
                      {"ReadOnly", true}});
  if (spec.runner == RunnerDelivery::Copy)
    mounts.push_back({{"Type", "volume"}, {"Target", kRunnerDir}});  // anonymous: removed with v=1
  for (const auto& target : spec.volumes)
    mounts.push_back({{"Type", "volume"}, {"Target", target}});  // anonymous: removed with v=1
  nlohmann::json host{{"NetworkMode", spec.network},
                      {"Mounts", mounts},
                      {"CapDrop", nlohmann::json::array({"ALL"})},
                      {"Init", true},
                      // Never restarted by the engine: the backend brings it back itself, and
                      // says so. Explicit, as `docker create` sends it.
                      {"RestartPolicy", {{"Name", "no"}}},
                      {"LogConfig",
                       {{"Type", "json-file"},
                        {"Config", {{"max-size", kLogMaxSize}, {"max-file", kLogMaxFiles}}}}}};
  if (spec.sudo) {
    // sudo is setuid root: with no-new-privileges the kernel ignores that bit.
    host["CapAdd"] = kSudoCapabilities;
  } else {
    host["SecurityOpt"] = nlohmann::json::array({"no-new-privileges"});
  }
  if (spec.memory_bytes) {
    host["Memory"] = *spec.memory_bytes;
    host["MemorySwap"] = *spec.memory_bytes;  // no swap beyond the limit: a hog is OOM-killed
  }
  if (spec.nano_cpus) host["NanoCpus"] = *spec.nano_cpus;
  if (spec.disk_bytes) host["StorageOpt"] = {{"size", std::to_string(*spec.disk_bytes)}};
  if (spec.read_only_rootfs) host["ReadonlyRootfs"] = true;
  if (!spec.tmpfs.empty()) host["Tmpfs"] = spec.tmpfs;
  if (spec.pids_limit > 0) host["PidsLimit"] = spec.pids_limit;
  if (spec.nproc_limit > 0)
    host["Ulimits"] = nlohmann::json::array(
        {{{"Name", "nproc"}, {"Soft", spec.nproc_limit}, {"Hard", spec.nproc_limit}}});
  if (!spec.runtime.empty()) host["Runtime"] = spec.runtime;
  nlohmann::json body{{"Image", spec.image}, {"Cmd", spec.cmd},
                      {"User", spec.user},   {"WorkingDir", spec.working_dir},
                      {"Env", spec.env},     {"Labels", spec.labels},
                      {"Tty", false},        {"OpenStdin", false},
                      {"HostConfig", host}};
  // What `docker create` sets without -a, so that both Docker backends' containers inspect the
  // same; they only matter to a client attached at start, which nobody is.
  body["AttachStdout"] = true;
  body["AttachStderr"] = true;
  if (!spec.entrypoint.empty()) body["Entrypoint"] = spec.entrypoint;
  if (!spec.network_alias.empty())
    body["NetworkingConfig"] = {
        {"EndpointsConfig", {{spec.network, {{"Aliases", {spec.network_alias}}}}}}};
  return body;
}

}  // namespace execmcp::plugins::docker_common
