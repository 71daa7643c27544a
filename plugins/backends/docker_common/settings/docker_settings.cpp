// Strict parsing of the Docker backends' settings.
#include "docker_common/settings/docker_settings.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <stdexcept>
#include <string_view>

#include <nlohmann/json.hpp>

#include "execmcp/plugins/plugin_settings/memory_limit.hpp"
#include "execmcp/plugins/plugin_settings/settings_object.hpp"

#include "docker_common/parts/credentials.hpp"
#include "docker_common/settings/env_file.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using plugin_settings::kMemoryLimitForms;
using plugin_settings::parse_memory_limit;

[[noreturn]] void bad(const std::string& key, const std::string& expected) {
  throw SettingError(key, "expected " + expected);
}

[[noreturn]] void unknown(const std::string& key, const std::string& known) {
  throw SettingError(key, "unknown setting (known: " + known + ")",
                     "unknown setting '" + key + "' (known: " + known + ")");
}

std::string get_string(const nlohmann::json& value, const std::string& key) {
  if (!value.is_string()) bad(key, "a string");
  return value.get<std::string>();
}

bool get_bool(const nlohmann::json& value, const std::string& key) {
  if (!value.is_boolean()) bad(key, "true or false");
  return value.get<bool>();
}

// Variables the CLI's environment gets from settings of their own, or that must stay as they are.
std::string reserved_cli_variable(const std::string& name) {
  if (name == "DOCKER_HOST") return "set 'docker_host' instead";
  if (name == "DOCKER_CONTEXT") return "set 'docker_context' instead";
  if (name == "LC_ALL") return "the CLI runs in the C locale, so that its messages can be read";
  return {};
}

MountSpec parse_mount(const nlohmann::json& item, std::size_t index) {
  const std::string where = "extra_mounts[" + std::to_string(index) + "]";
  if (!item.is_object()) bad(where, "an object {source, target, read_only}");
  MountSpec mount;
  for (const auto& [k, v] : item.items()) {
    if (k == "source") {
      mount.source = get_string(v, where + ".source");
    } else if (k == "target") {
      mount.target = get_string(v, where + ".target");
    } else if (k == "read_only") {
      if (!v.is_boolean()) bad(where + ".read_only", "true or false");
      mount.read_only = v.get<bool>();
    } else {
      unknown(where + "." + k, "source, target, read_only");
    }
  }
  if (mount.source.empty() || mount.source.front() != '/')
    bad(where + ".source", "an absolute host path");
  if (mount.target.empty()) mount.target = mount.source;
  if (mount.target.front() != '/') bad(where + ".target", "an absolute container path");
  return mount;
}

std::vector<std::string> parse_names(const nlohmann::json& value, const std::string& key) {
  constexpr const char* kNames = "a list of variable names ([A-Za-z_][A-Za-z0-9_]*)";
  if (!value.is_array()) bad(key, kNames);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string name = get_string(value[i], key + "[" + std::to_string(i) + "]");
    if (!is_env_name(name)) bad(key + "[" + std::to_string(i) + "]", kNames);
    names.push_back(name);
  }
  return names;
}

CredentialsSettings parse_credentials(const nlohmann::json& value) {
  const std::string key = "credentials";
  if (!value.is_object())
    bad(key,
        "an object {mount, additional_mounts, env_file, env_vars_from_file, env_vars, "
        "pass_all_env}");
  CredentialsSettings c;
  for (const auto& [k, v] : value.items()) {
    const std::string where = key + "." + k;
    if (k == "mount") {
      const std::string kinds = "a list of " + credential_kind_names();
      if (!v.is_array()) bad(where, kinds);
      for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string kind = get_string(v[i], where + "[" + std::to_string(i) + "]");
        if (find_credential_kind(kind) == nullptr)
          bad(where + "[" + std::to_string(i) + "]",
              "one of " + credential_kind_names() + " (got '" + kind + "')");
        if (std::find(c.mount.begin(), c.mount.end(), kind) == c.mount.end())
          c.mount.push_back(kind);
      }
    } else if (k == "additional_mounts") {
      constexpr const char* kForm =
          "an object {<absolute host path>: {bind: <absolute container path>, mode: ro|rw}}";
      if (!v.is_object()) bad(where, kForm);
      for (const auto& [host, spec] : v.items()) {
        const std::string at = where + "." + host;
        if (host.empty() || host.front() != '/') bad(at, "an absolute host path as the key");
        MountSpec m;
        m.source = host;
        if (!spec.is_object()) bad(at, kForm);
        for (const auto& [field, fv] : spec.items()) {
          if (field == "bind") {
            m.target = get_string(fv, at + ".bind");
          } else if (field == "mode") {
            const std::string mode = get_string(fv, at + ".mode");
            if (mode != "ro" && mode != "rw") bad(at + ".mode", "ro or rw (got '" + mode + "')");
            m.read_only = mode == "ro";
          } else {
            unknown(at + "." + field, "bind, mode");
          }
        }
        if (m.target.empty() || m.target.front() != '/')
          bad(at + ".bind", "an absolute container path");
        c.additional_mounts.push_back(m);
      }
    } else if (k == "env_file") {
      c.env_file = get_string(v, where);
      if (c.env_file.empty() || c.env_file.front() != '/')
        bad(where, "an absolute path (relative paths are resolved by the config loader)");
    } else if (k == "env_vars_from_file") {
      c.env_vars_from_file = parse_names(v, where);
    } else if (k == "env_vars") {
      c.env_vars = parse_names(v, where);
    } else if (k == "pass_all_env") {
      if (!v.is_boolean()) bad(where, "true or false");
      c.pass_all_env = v.get<bool>();
    } else {
      unknown(where,
              "mount, additional_mounts, env_file, env_vars_from_file, env_vars, pass_all_env");
    }
  }
  if (c.env_vars_from_file && c.env_file.empty())
    throw SettingError("credentials.env_vars_from_file",
                       "needs 'credentials.env_file' (the file the names are taken from)",
                       "setting 'credentials.env_vars_from_file' needs 'credentials.env_file' (the "
                       "file the names are taken from)");
  return c;
}

// preinstall: {system, python, npm}, each a list of non-empty strings that do not start with '-'
// (an entry is a package, never an option of the installer).
PreinstallSettings parse_preinstall(const nlohmann::json& value) {
  constexpr const char* kForm =
      "an object {system: [...], python: [...], npm: [...]} of package names or absolute paths "
      "of local files";
  if (!value.is_object()) bad("preinstall", kForm);
  PreinstallSettings p;
  for (const auto& [k, v] : value.items()) {
    const std::string where = "preinstall." + k;
    std::vector<std::string>* list = k == "system"   ? &p.system
                                     : k == "python" ? &p.python
                                     : k == "npm"    ? &p.npm
                                                     : nullptr;
    if (list == nullptr) unknown(where, "system, python, npm");
    if (!v.is_array()) bad(where, "a list of package names or absolute paths of local files");
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string at = where + "[" + std::to_string(i) + "]";
      const std::string entry = get_string(v[i], at);
      if (entry.empty() || entry.front() == '-' ||
          entry.find_first_of(std::string("\n\r\0", 3)) != std::string::npos)
        bad(at, "a package name or an absolute path (not empty, not an option starting with '-')");
      list->push_back(entry);
    }
  }
  return p;
}

// A size in bytes: a positive integer, or a string in the memory-limit forms.
std::int64_t parse_size(const nlohmann::json& value, const std::string& key) {
  if (value.is_number_integer()) {
    if (value.get<std::int64_t>() <= 0) bad(key, std::string(kMemoryLimitForms));
    return value.get<std::int64_t>();
  }
  if (!value.is_string()) bad(key, std::string(kMemoryLimitForms));
  try {
    return parse_memory_limit(value.get<std::string>());
  } catch (const std::invalid_argument& e) {
    throw SettingError(key, e.what());
  }
}

// True when `name` is a Docker container (or runtime) name or id: [A-Za-z0-9][A-Za-z0-9_.-]* (so
// it can never read as a CLI flag).
bool is_container_name(const std::string& name) {
  if (name.empty() || name.size() > 128 || !std::isalnum(static_cast<unsigned char>(name[0])))
    return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-')
      return false;
  return true;
}

// `runtime`: the name of one the engine has registered (the engine is asked at start).
std::string parse_runtime(const nlohmann::json& value) {
  std::string runtime = get_string(value, "runtime");
  if (!is_container_name(runtime))
    bad("runtime",
        "the name of a runtime the engine has registered, e.g. runsc "
        "([A-Za-z0-9][A-Za-z0-9_.-]*, got '" +
            runtime + "')");
  return runtime;
}

// "/egress/allow/3" as the settings' own words: "egress.allow[3]".
std::string pointer_as_key(const std::string& pointer) {
  std::string out;
  std::size_t at = 1;
  while (at <= pointer.size()) {
    const std::size_t next = std::min(pointer.find('/', at), pointer.size());
    const std::string token = pointer.substr(at, next - at);
    const bool index = !token.empty() && token.find_first_not_of("0123456789") == std::string::npos;
    out += index ? "[" + token + "]" : (out.empty() ? "" : ".") + token;
    at = next + 1;
  }
  return out;
}

// `egress`, through parse_egress(): its first problem is thrown, at the key it names.
EgressPolicy parse_egress_setting(const nlohmann::json& value) {
  std::vector<sdk::SettingsProblem> problems;
  auto policy = parse_egress(value, problems, "/egress");
  if (!problems.empty())
    throw SettingError(pointer_as_key(problems.front().pointer), problems.front().message);
  return policy;
}

// `network: egress` and `egress` go together.
void check_egress_settings(const DockerSettings& s) {
  if (s.network == "egress" && !s.egress)
    throw SettingError("network",
                       "egress needs 'egress' with 'allow', the list of what the agent may reach "
                       "(e.g. egress: {allow: [pypi.org, files.pythonhosted.org]})");
  if (s.network != "egress" && s.egress)
    throw SettingError(
        "egress", "applies only with 'network: egress' (network is '" + s.network + "')",
        "setting 'egress' applies only with 'network: egress' (network is '" + s.network + "')");
}

// A secret's variable holds its placeholder in every command: nothing else may set it, and the
// variable of the server's environment it is read from never reaches a command. An explicit list
// naming either is refused here; pass_all_env and a whole env_file leave them out
// (CredentialsSettings::withheld).
void check_secret_conflicts(DockerSettings& s) {
  if (!s.egress) return;
  for (const auto& secret : s.egress->secrets) {
    const bool from_env = secret.from.kind == EgressSecretSource::Kind::kEnv;
    const std::string what = "egress secret '" + secret.name + "'";
    const auto clash = [&](const std::string& name) -> std::string {
      if (name == secret.name)
        return "'" + name + "' is also the name of " + what +
               ", whose placeholder every command gets: remove it here";
      if (from_env && name == secret.from.text)
        return "'" + name + "' is where " + what + " is read from (from: env:" + name +
               "): given to commands, the sandbox would hold the value the proxy keeps from it. "
               "Remove it here";
      return {};
    };
    const auto check_list = [&](const std::vector<std::string>& names, const std::string& key) {
      for (std::size_t i = 0; i < names.size(); ++i)
        if (auto why = clash(names[i]); !why.empty())
          throw SettingError(key + "[" + std::to_string(i) + "]", why);
    };
    check_list(s.credentials.env_vars, "credentials.env_vars");
    if (s.credentials.env_vars_from_file)
      check_list(*s.credentials.env_vars_from_file, "credentials.env_vars_from_file");
    for (const auto& [name, value] : s.env)
      if (auto why = clash(name); !why.empty()) throw SettingError("env." + name, why);
    s.credentials.withheld.push_back(secret.name);
    if (from_env) s.credentials.withheld.push_back(secret.from.text);
  }
}

using Json = nlohmann::json;

// The settings' readers, one for each row of kRows: each reads the value of `key` into `s`.

void read_image(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  s.image = get_string(value, key);
  if (s.image.empty()) bad(key, "a non-empty image reference");
}

void read_memory(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  if (value.is_string() && value.get<std::string>() == "none") {
    s.memory_bytes.reset();
  } else {
    s.memory_bytes = parse_size(value, key);
  }
}

void read_disk(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  s.disk_bytes = parse_size(value, key);
}

void read_tmpfs_size(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  s.tmpfs_bytes = parse_size(value, key);
}

void read_writable_rootfs(const std::string& key, const Json& value, EngineKind,
                          DockerSettings& s) {
  s.writable_rootfs = get_bool(value, key);
}

void read_cpus(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  if (!value.is_number()) bad(key, "a positive number of CPUs, e.g. 1.5");
  const double cpus = value.get<double>();
  if (!(cpus > 0.0) || !std::isfinite(cpus) || cpus > 1024.0)
    bad(key, "a positive number of CPUs, e.g. 1.5");
  s.cpus = cpus;
}

void read_pids_limit(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  if (!value.is_number_integer()) bad(key, "an integer (<= 0 for no limit)");
  s.pids_limit = value.get<std::int64_t>();
}

void read_network(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  s.network = get_string(value, key);
  if (s.network != "none" && s.network != "bridge" && s.network != "host" && s.network != "egress")
    bad(key, "one of none, bridge, host, egress (got '" + s.network + "')");
}

void read_user(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  s.user = get_string(value, key);
  if (is_root_user(s.user))
    bad(key, "a non-root user (\"uid\" or \"uid:gid\"); root is never allowed");
}

void read_env(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  if (!value.is_object()) bad(key, "an object of string values");
  for (const auto& [name, v] : value.items()) {
    if (name.empty() || name.find('=') != std::string::npos)
      bad(key, "variable names without '=' (got '" + name + "')");
    s.env[name] = get_string(v, "env." + name);
  }
}

void read_extra_mounts(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  if (!value.is_array()) bad(key, "a list of {source, target, read_only}");
  for (std::size_t i = 0; i < value.size(); ++i) s.extra_mounts.push_back(parse_mount(value[i], i));
}

void read_docker_host(const std::string& key, const Json& value, EngineKind kind,
                      DockerSettings& s) {
  s.docker_host = get_string(value, key);
  // The Engine API client speaks unix:// and tcp:// only; the docker CLI runs ssh itself.
  if (kind == EngineKind::kApi && s.docker_host.starts_with("ssh://"))
    throw SettingError(key, "an ssh:// engine ('" + s.docker_host +
                                "') is reached through the docker CLI; use plugin docker-cli");
}

void read_command_prefix(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  s.command_prefix = get_string(value, key);
}

void read_venv_path(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  s.venv_path = get_string(value, key);  // relative: taken from the agent's cwd
}

void read_shell(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  s.shell = get_string(value, key);
  if (s.shell.empty() || s.shell.front() != '/') bad(key, "an absolute path, e.g. /bin/sh");
}

void read_exec_mode(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  constexpr const char* kModes = "one of agent, exec";
  if (!value.is_string()) bad(key, kModes);
  const std::string mode = value.get<std::string>();
  if (mode == "agent") {
    s.exec_mode = ExecMode::Agent;
  } else if (mode == "exec") {
    s.exec_mode = ExecMode::Exec;
  } else {
    bad(key, std::string(kModes) + " (got '" + mode + "')");
  }
}

void read_egress(const std::string&, const Json& value, EngineKind, DockerSettings& s) {
  s.egress = parse_egress_setting(value);
}

void read_runtime(const std::string&, const Json& value, EngineKind, DockerSettings& s) {
  s.runtime = parse_runtime(value);
}

void read_sudo(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  s.sudo = get_bool(value, key);
}

void read_credentials(const std::string&, const Json& value, EngineKind, DockerSettings& s) {
  s.credentials = parse_credentials(value);
  s.extra_mounts.insert(s.extra_mounts.end(), s.credentials.additional_mounts.begin(),
                        s.credentials.additional_mounts.end());
}

void read_preinstall(const std::string&, const Json& value, EngineKind, DockerSettings& s) {
  const bool keep = s.preinstall.continue_on_failure;
  s.preinstall = parse_preinstall(value);
  s.preinstall.continue_on_failure = keep;
}

void read_preinstall_on_failure(const std::string& key, const Json& value, EngineKind,
                                DockerSettings& s) {
  constexpr const char* kChoices = "one of fail, continue";
  if (!value.is_string()) bad(key, kChoices);
  const std::string choice = value.get<std::string>();
  if (choice != "fail" && choice != "continue")
    bad(key, std::string(kChoices) + " (got '" + choice + "')");
  s.preinstall.continue_on_failure = choice == "continue";
}

void read_container(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  s.container = get_string(value, key);
  if (!is_container_name(s.container))
    bad(key, "the name or id of an existing container ([A-Za-z0-9][A-Za-z0-9_.-]*, got '" +
                 s.container + "')");
}

void read_attach_accept_writable_context(const std::string& key, const Json& value, EngineKind,
                                         DockerSettings& s) {
  s.attach_accept_writable_context = get_bool(value, key);
}

void read_docker_binary(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  s.docker_binary = get_string(value, key);
  const bool name = !s.docker_binary.empty() && s.docker_binary.find('/') == std::string::npos;
  const bool absolute = s.docker_binary.size() > 1 && s.docker_binary.front() == '/';
  if ((!name && !absolute) || s.docker_binary.front() == '-')
    bad(key, "a program name looked up in PATH (docker, podman) or an absolute path (got '" +
                 s.docker_binary + "')");
}

void read_docker_context(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  s.docker_context = get_string(value, key);
  if (s.docker_context.empty() || s.docker_context.front() == '-')
    bad(key, "the name of a docker context (see `docker context ls`)");
}

void read_docker_flags(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  constexpr const char* kFlags =
      "a list of global flags, each one string starting with '-' (e.g. "
      "\"--cgroup-manager=cgroupfs\"; a flag's value goes after '=')";
  if (!value.is_array()) bad(key, kFlags);
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string flag = get_string(value[i], key + "[" + std::to_string(i) + "]");
    if (flag.size() < 2 || flag.front() != '-') bad(key + "[" + std::to_string(i) + "]", kFlags);
    s.docker_flags.push_back(flag);
  }
}

void read_cli_env(const std::string& key, const Json& value, EngineKind, DockerSettings& s) {
  if (!value.is_object()) bad(key, "an object of string values");
  for (const auto& [name, v] : value.items()) {
    if (name.empty() || name.find('=') != std::string::npos)
      bad(key, "variable names without '=' (got '" + name + "')");
    if (auto why = reserved_cli_variable(name); !why.empty())
      bad(key + "." + name, "no " + name + " here: " + why);
    s.cli_env[name] = get_string(v, "cli_env." + name);
  }
}

// Every setting, in the order the "unknown setting" error lists them. `attach: false`: a setting
// about the container execmcp creates, which cannot apply to one it attaches to.
constexpr SettingRow kRows[] = {
    {.name = "image",
     .attach = false,
     .default_text = kDefaultImage,
     .description = "the image of the agent's container",
     .parse = read_image},
    {.name = "memory",
     .attach = false,
     .default_text = "2g",
     .description = "the container's memory limit, tmpfs pages included (\"none\": no limit)",
     .parse = read_memory},
    {.name = "disk",
     .attach = false,
     .default_text = "no bound",
     .description = "the container's writable layer (overlay2 on xfs with pquota, btrfs, zfs)",
     .parse = read_disk},
    {.name = "tmpfs_size",
     .attach = false,
     .default_text = "512m",
     .description = "the size of each tmpfs at /tmp, /var/tmp and $HOME",
     .parse = read_tmpfs_size},
    {.name = "writable_rootfs",
     .attach = false,
     .default_text = "false",
     .description = "true: the image's filesystem is writable (no tmpfs; bounded only by disk)",
     .parse = read_writable_rootfs},
    {.name = "cpus",
     .attach = false,
     .default_text = "no limit",
     .description = "a positive number of CPUs, e.g. 1.5",
     .parse = read_cpus},
    {.name = "pids_limit",
     .attach = false,
     .default_text = "512",
     .description = "the most processes the container may hold (<= 0: no limit)",
     .parse = read_pids_limit},
    {.name = "network",
     .attach = false,
     .default_text = "none",
     .description = "none, bridge, host, or egress (only egress.allow, through the agent's proxy)",
     .parse = read_network},
    {.name = "user",
     .default_text = "the workspace's owner, or execmcp (uid 1000) when root owns it",
     .description = "\"uid\" or \"uid:gid\" the commands run as (never root)",
     .parse = read_user},
    {.name = "env",
     .default_text = "{}",
     .description = "environment variables every command gets",
     .parse = read_env},
    {.name = "extra_mounts",
     .attach = false,
     .default_text = "[]",
     .description = "[{source, target, read_only}]: more host paths in the container",
     .parse = read_extra_mounts},
    {.name = "docker_host",
     .default_text = "$DOCKER_HOST, then unix:///var/run/docker.sock",
     .description = "the engine: unix://, tcp:// (and ssh:// with docker-cli)",
     .parse = read_docker_host},
    {.name = "command_prefix",
     .default_text = "empty",
     .description = "put before every command with a space, e.g. uv run",
     .parse = read_command_prefix},
    {.name = "venv_path",
     .default_text = "unset",
     .description = "a virtualenv whose bin/ goes first on PATH (relative: from the cwd)",
     .parse = read_venv_path},
    {.name = "shell",
     .default_text = "/bin/sh",
     .description = "the shell that runs each command (shell -c command)",
     .parse = read_shell},
    {.name = "exec_mode",
     .default_text = "agent",
     .description = "agent: through execmcp-runner in the container; exec: one exec per command",
     .parse = read_exec_mode},
    {.name = "egress",
     .attach = false,
     .default_text = "unset (required with network: egress)",
     .description = "{allow, ports, upstream_network, secrets, upstream_ca}: what network: "
                    "egress may reach, and the secrets its proxy puts into requests",
     .parse = read_egress},
    {.name = "runtime",
     .attach = false,
     .default_text = "the engine's default",
     .description = "the engine's runtime for the container, e.g. runsc (gVisor)",
     .parse = read_runtime},
    {.name = "sudo",
     .attach = false,
     .default_text = "false",
     .description = "true: passwordless sudo for the container user",
     .parse = read_sudo},
    {.name = "credentials",
     .default_text = "unset",
     .description = "files of $HOME mounted, and variables given to every command",
     .parse = read_credentials},
    {.name = "preinstall",
     .attach = false,
     .default_text = "unset",
     .description = "{system, python, npm}: packages installed once into a derived image",
     .parse = read_preinstall},
    {.name = "preinstall_on_failure",
     .attach = false,
     .default_text = "fail",
     .description = "fail: a failed install fails the start; continue: start from the base image",
     .parse = read_preinstall_on_failure},
    {.name = "container",
     .default_text = "unset (execmcp creates the agent's container)",
     .description = "attach mode: run the commands in this existing container",
     .parse = read_container},
    {.name = "attach_accept_writable_context",
     .default_text = "false",
     .description = "attach mode: accept a read-only context path the container mounts writable",
     .parse = read_attach_accept_writable_context},
    // Only the docker CLI has these: docker-api refuses them by name rather than ignoring them.
    {.name = "docker_binary",
     .api = false,
     .default_text = "docker",
     .description = "the docker-compatible CLI: a name looked up in PATH, or an absolute path",
     .parse = read_docker_binary},
    {.name = "docker_context",
     .api = false,
     .default_text = "unset",
     .description = "--context NAME (not with docker_host)",
     .parse = read_docker_context},
    {.name = "docker_flags",
     .api = false,
     .default_text = "[]",
     .description = "global flags before every command, each --flag=value",
     .parse = read_docker_flags},
    {.name = "cli_env",
     .api = false,
     .default_text = "{}",
     .description = "variables added to the CLI's environment",
     .parse = read_cli_env},
};

const SettingRow* find_row(const std::string& key) {
  for (const SettingRow& row : kRows)
    if (row.name == key) return &row;
  return nullptr;
}

// "image, memory, ...": the keys `kind` takes.
std::string known_keys(EngineKind kind) {
  std::string out;
  for (const SettingRow& row : kRows)
    if (row.accepts(kind)) out += (out.empty() ? "" : ", ") + std::string(row.name);
  return out;
}

// Attach mode refuses, by name, every setting that only means something for a container execmcp
// creates: ignoring them would leave the user believing a limit or a mount is in place.
void check_attach_settings(const nlohmann::json& root, const DockerSettings& s) {
  if (s.container.empty()) {
    if (root.contains("attach_accept_writable_context"))
      throw SettingError("attach_accept_writable_context",
                         "applies only with 'container' (attach mode)");
    return;
  }
  std::string refused;
  auto refuse = [&](const std::string& key) {
    refused += (refused.empty() ? "'" : ", '") + key + "'";
  };
  // Named in the table's order, but for 'egress' and 'runtime' (named last, as before the table).
  constexpr std::array<std::string_view, 2> kNamedLast = {"egress", "runtime"};
  const auto named_last = [&](const SettingRow& row) {
    return std::find(kNamedLast.begin(), kNamedLast.end(), row.name) != kNamedLast.end();
  };
  for (const bool last : {false, true})
    for (const SettingRow& row : kRows)
      if (!row.attach && named_last(row) == last && root.contains(row.name))
        refuse(std::string(row.name));
  // Credentials passed per command still work; mounted ones need a container we create.
  if (const auto it = root.find("credentials"); it != root.end() && it->is_object())
    for (const char* k : {"mount", "additional_mounts"})
      if (it->contains(k)) refuse("credentials." + std::string(k));
  if (!refused.empty())
    throw SettingError(
        "container",
        "attaches to an existing container ('" + s.container + "'), to which settings " + refused +
            " cannot apply: remove them, or remove 'container' to let execmcp create and manage "
            "the agent's container",
        "settings " + refused + " cannot apply to a container execmcp does not create " +
            "('container': '" + s.container +
            "' attaches to an existing one): remove them, or remove 'container' to let "
            "execmcp create and manage the agent's container");
}

}  // namespace

SettingError::SettingError(std::string key, std::string message)
    : std::invalid_argument("setting '" + key + "': " + message),
      key_(std::move(key)),
      message_(std::move(message)) {}

SettingError::SettingError(std::string key, std::string message, const std::string& what)
    : std::invalid_argument(what), key_(std::move(key)), message_(std::move(message)) {}

std::string SettingError::pointer() const {
  std::string pointer;
  std::size_t at = 0;
  while (at < key_.size()) {
    if (key_[at] == '/') break;  // a host path: the map that holds it is as near as we get
    std::size_t end = key_[at] == '[' ? key_.find(']', at) : key_.find_first_of(".[", at);
    if (key_[at] == '[') {
      if (end == std::string::npos) break;
      pointer += "/" + key_.substr(at + 1, end - at - 1);
      ++end;
    } else {
      end = std::min(end, key_.size());
      pointer += "/" + sdk::pointer_token(key_.substr(at, end - at));
    }
    at = end < key_.size() && key_[end] == '.' ? end + 1 : end;
  }
  return pointer;
}

void check_docker_settings(const std::string& settings_json, EngineKind kind,
                           std::vector<sdk::SettingsProblem>& problems) {
  // parse_docker_settings() stops at egress's first problem; the list may have more.
  const std::size_t before = problems.size();
  if (const auto root = nlohmann::json::parse(settings_json, nullptr, false);
      root.is_object() && root.contains("egress"))
    parse_egress(root.at("egress"), problems, "/egress");
  const bool egress_reported = problems.size() > before;
  try {
    parse_docker_settings(settings_json, kind);
  } catch (const SettingError& e) {
    const std::string pointer = e.pointer();
    if (!(egress_reported && (pointer == "/egress" || pointer.starts_with("/egress/"))))
      problems.push_back({pointer, e.message()});
  } catch (const std::exception& e) {
    problems.push_back({"", e.what()});
  }
}

std::span<const SettingRow> docker_setting_rows() {
  return kRows;
}

bool is_root_user(const std::string& user) {
  const std::string name = user.substr(0, user.find(':'));
  return name == "root" || name == "0" ||
         (!name.empty() && name.find_first_not_of('0') == std::string::npos);
}

DockerSettings parse_docker_settings(const std::string& settings_json, EngineKind kind) {
  DockerSettings s;
  const auto parsed = plugin_settings::parse_settings_object(
      settings_json, kind == EngineKind::kApi ? "docker-api" : "docker-cli");
  if (!parsed) return s;
  const nlohmann::json& root = *parsed;

  for (const auto& [key, value] : root.items()) {
    const SettingRow* row = find_row(key);
    if (row == nullptr) unknown(key, known_keys(kind));
    if (!row->accepts(kind))  // only docker-cli's own rows are refused by an engine
      throw SettingError(key, "is a docker-cli setting; use plugin docker-cli",
                         "setting '" + key + "' is a docker-cli setting; use plugin docker-cli");
    row->parse(key, value, kind, s);
  }
  if (!s.docker_host.empty() && !s.docker_context.empty())
    throw SettingError("docker_context",
                       "cannot be used together with 'docker_host' (the docker CLI refuses --host "
                       "with --context): keep one",
                       "settings 'docker_host' and 'docker_context' cannot be used together (the "
                       "docker CLI refuses --host with --context): keep one");
  check_attach_settings(root, s);
  check_egress_settings(s);
  check_secret_conflicts(s);
  return s;
}

}  // namespace execmcp::plugins::docker_common
