// Resolves the `credentials` setting into read-only mounts and the per-call secret environment.
#include "docker_common/parts/credentials.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "docker_common/lifecycle/container_lifecycle.hpp"
#include "docker_common/settings/env_file.hpp"

extern char** environ;

namespace execmcp::plugins::docker_common {

const CredentialKind* find_credential_kind(std::string_view name) {
  for (const auto& kind : kCredentialKinds)
    if (name == kind.name) return &kind;
  return nullptr;
}

std::string credential_kind_names() {
  std::string out;
  for (const auto& kind : kCredentialKinds)
    out += (out.empty() ? "" : ", ") + std::string(kind.name);
  return out;
}

bool skipped_by_pass_all_env(std::string_view name) {
  for (const char* exact :
       {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "OLDPWD", "TERM", "TMPDIR"})
    if (name == exact) return true;
  for (const char* prefix : {"LD_", "DOCKER_", "EXECMCP_"})
    if (name.starts_with(prefix)) return true;
  return false;
}

std::map<std::string, std::string> server_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return env;
}

ResolvedCredentials resolve_credentials(const CredentialsSettings& credentials,
                                        const std::map<std::string, std::string>& server_env) {
  ResolvedCredentials out;
  out.env = std::make_shared<const SecretEnv>();
  auto fail = [&](std::string why) {
    out.mounts.clear();
    out.names.clear();
    out.error = std::move(why);
    return out;
  };

  if (!credentials.mount.empty()) {
    std::string home;
    if (const auto it = server_env.find("HOME"); it != server_env.end()) home = it->second;
    if (home.empty()) {
      const passwd* pw = ::getpwuid(::geteuid());
      if (pw != nullptr && pw->pw_dir != nullptr) home = pw->pw_dir;
    }
    if (home.empty() || home.front() != '/')
      return fail("credentials.mount: the server's HOME is not set to an absolute path, so '" +
                  credentials.mount.front() + "' has no source");
    for (const auto& name : credentials.mount) {
      const CredentialKind* kind = find_credential_kind(name);
      if (kind == nullptr) return fail("credentials.mount: unknown kind '" + name + "'");
      const std::string source = home + "/" + kind->home_path;
      struct stat st {};
      if (::stat(source.c_str(), &st) != 0)
        return fail("credentials.mount: " + name + " needs '" + source +
                    "', which cannot be used: " + std::strerror(errno));
      // A dotfile manager's symlink is the operator's own, resolved once here; the engine then
      // gets a path with no symlink in it, which check_mount_source() insists on.
      std::error_code ec;
      const auto real = std::filesystem::canonical(source, ec);
      if (ec)
        return fail("credentials.mount: " + name + " needs '" + source +
                    "', which cannot be resolved: " + ec.message());
      out.mounts.push_back({real.string(), kind->target, true});
    }
  }

  std::map<std::string, std::string> vars;
  if (!credentials.env_file.empty()) {
    auto file = read_env_file(credentials.env_file);
    if (!file.error.empty()) return fail("credentials.env_file: " + file.error);
    if (credentials.env_vars_from_file) {
      for (const auto& name : *credentials.env_vars_from_file) {
        const auto it = file.vars.find(name);
        if (it == file.vars.end())
          return fail("credentials.env_vars_from_file: " + name + " is not in '" +
                      credentials.env_file + "'");
        vars[name] = it->second;
      }
    } else {
      vars = std::move(file.vars);
      for (const auto& name : credentials.withheld) vars.erase(name);
    }
  }
  const auto withheld = [&](const std::string& name) {
    return std::find(credentials.withheld.begin(), credentials.withheld.end(), name) !=
           credentials.withheld.end();
  };
  if (credentials.pass_all_env)
    for (const auto& [name, value] : server_env)
      if (is_env_name(name) && !skipped_by_pass_all_env(name) && !withheld(name))
        vars[name] = value;
  for (const auto& name : credentials.env_vars) {
    const auto it = server_env.find(name);
    if (it == server_env.end())
      return fail("credentials.env_vars: " + name + " is not set in the server's environment");
    vars[name] = it->second;
  }
  auto env = std::make_shared<SecretEnv>();
  for (const auto& [name, value] : vars) {
    env->push_back(name + "=" + value);
    out.names.push_back(name);
  }
  out.env = std::move(env);
  return out;
}

namespace {

// Whether uid:gid may read (and, for a directory, enter) the file of `st`, by its mode bits (the
// owner's, else the group's, else the others'). ACLs are not read: a file they open is reported
// as unreadable only when its mode bits say so.
bool may_read(const struct stat& st, uid_t uid, gid_t gid) {
  const bool dir = S_ISDIR(st.st_mode);
  mode_t r = S_IROTH, x = S_IXOTH;
  if (st.st_uid == uid) {
    r = S_IRUSR;
    x = S_IXUSR;
  } else if (st.st_gid == gid) {
    r = S_IRGRP;
    x = S_IXGRP;
  }
  return (st.st_mode & r) != 0 && (!dir || (st.st_mode & x) != 0);
}

}  // namespace

std::string check_credentials_readable(const std::vector<MountSpec>& mounts, uid_t uid, gid_t gid) {
  if (uid == 0) return {};
  for (const auto& m : mounts) {
    std::error_code ec;
    // The directory itself and every file directly in it (ssh reads its keys and config there).
    std::vector<std::string> paths = {m.source};
    if (std::filesystem::is_directory(m.source, ec))
      for (const auto& entry : std::filesystem::directory_iterator(m.source, ec))
        if (!entry.is_symlink(ec)) paths.push_back(entry.path().string());
    for (const auto& path : paths) {
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0) continue;  // gone: the engine says so at create
      if (may_read(st, uid, gid)) continue;
      return "credentials: '" + path + "' (for " + m.target +
             ") is not readable by the container user (uid " + std::to_string(uid) +
             "): give that uid read access (e.g. setfacl -m u:" + std::to_string(uid) + ":rX '" +
             path + "'), or set the backend's 'user' to the file's owner";
    }
  }
  return {};
}

CredentialsPart::CredentialsPart(ContainerLifecycle& lifecycle, const CredentialsSettings& settings)
    : lifecycle_(lifecycle), settings_(settings) {
  // Named files and variables that are missing fail here, when the config is checked, not later.
  auto credentials = resolve_credentials(settings_, server_environment());
  if (!credentials.error.empty()) throw std::invalid_argument(credentials.error);
  mounts_ = std::move(credentials.mounts);
  env_ = std::move(credentials.env);
}

std::string CredentialsPart::prepare_start() {
  if (!settings_.has_env() && mounts_.empty()) return {};
  auto credentials = resolve_credentials(settings_, server_environment());
  if (!credentials.error.empty()) return credentials.error;
  {
    std::lock_guard lock(mutex_);
    env_ = credentials.env;
  }
  // Names and counts only: values never reach a log.
  std::string names;
  for (const auto& n : credentials.names) names += (names.empty() ? "" : ", ") + n;
  lifecycle_.log(sdk::LogLevel::Info, "credentials: " + std::to_string(mounts_.size()) +
                                          " read-only mount(s), " +
                                          std::to_string(credentials.names.size()) +
                                          " variable(s) given to each command" +
                                          (names.empty() ? "" : " (" + names + ")"));
  // The container user reads them with its own uid (a name set in 'user' is not checked here).
  const std::string u = lifecycle_.user();
  try {
    std::size_t used = 0;
    const auto uid = static_cast<uid_t>(std::stoul(u, &used));
    gid_t gid = uid;
    if (used < u.size() && u[used] == ':') gid = static_cast<gid_t>(std::stoul(u.substr(used + 1)));
    return check_credentials_readable(mounts_, uid, gid);
  } catch (const std::exception&) {
    return {};
  }
}

void CredentialsPart::add_call_env(std::vector<std::string>& env) const {
  // The secrets go with each call (the runner's stream, the exec's Env, the CLI child's
  // environment), never into the container's config: `docker inspect` cannot show them.
  std::shared_ptr<const SecretEnv> secrets;
  {
    std::lock_guard lock(mutex_);
    secrets = env_;
  }
  env.insert(env.end(), secrets->begin(), secrets->end());
}

}  // namespace execmcp::plugins::docker_common
