// The `local` executor backend: work_dir and venv resolution, file tools, lifecycle, export.
#include "local_backend.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

#include "execmcp/sdk/path_policy.hpp"
#include "execmcp/sdk/plugin.hpp"
#include "process_supervisor.hpp"

extern char** environ;  // NOLINT: POSIX

namespace execmcp::plugins::local {

namespace fs = std::filesystem;

namespace {

constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

std::map<std::string, std::string> host_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return env;
}

bool has_python(const fs::path& venv) {
  std::error_code ec;
  return fs::exists(venv / "bin" / "python", ec);
}

void activate_venv(std::map<std::string, std::string>& env, const fs::path& venv) {
  env["VIRTUAL_ENV"] = venv.string();
  auto path = env.find("PATH");
  std::string old_path = path == env.end() ? kDefaultPath : path->second;
  env["PATH"] = (venv / "bin").string() + (old_path.empty() ? "" : ":" + old_path);
  env.erase("PYTHONHOME");  // would point the venv's python at another installation
}

std::string errno_text() {
  return std::strerror(errno);
}

}  // namespace

LocalBackend::LocalBackend(const sdk::BackendInit& init)
    : init_(init),
      grants_(init.paths.empty() ? std::vector<sdk::PathGrant>{{init.cwd, true}} : init.paths),
      paths_(init.cwd, grants_),
      settings_(parse_local_settings(init.settings_json)),
      supervisor_(default_supervisor_path()) {
  if (init_.cwd.empty()) throw std::invalid_argument("the agent has no cwd");
}

LocalBackend::~LocalBackend() {
  stop();
}

void LocalBackend::log(sdk::LogLevel level, const std::string& message) const noexcept {
  if (init_.log != nullptr) init_.log->log(level, message);
}

std::string LocalBackend::start() {
  if (auto error = supervisor_.check(); !error.empty()) return error;
  std::error_code ec;
  fs::create_directories(init_.cwd, ec);
  if (ec) return "cannot create the agent's cwd '" + init_.cwd + "': " + ec.message();
  if (!fs::is_directory(init_.cwd, ec))
    return "the agent's cwd '" + init_.cwd + "' is not a directory";
  paths_ = sdk::PathPolicy(init_.cwd, grants_);
  return {};
}

void LocalBackend::stop() noexcept {
  std::unique_lock lock(running_mutex_);
  for (auto& flag : running_) flag.store(true, std::memory_order_release);
  // Each execute() notices within 50 ms and its supervisor kills the tree; bounded wait so a
  // wedged process cannot hang shutdown.
  running_done_.wait_for(lock, std::chrono::seconds(10), [this] { return running_.empty(); });
  if (!running_.empty()) log(sdk::LogLevel::Warn, "local: commands still running after stop()");
  lock.unlock();
  // Running commands keep their own supervisors; a later execute() starts the program again.
  supervisor_.shut_down();
}

void LocalBackend::cleanup() noexcept {
  stop();
}

std::string LocalBackend::prepare(const sdk::ExecRequest& request, const std::string& work_dir,
                                  std::string& command, std::vector<std::string>& env_out) const {
  for (const auto& [name, value] : request.env) {
    if (name.empty() || name.find('=') != std::string::npos || name.find('\0') != std::string::npos)
      return "invalid environment variable name '" + name + "'";
  }

  command = request.command;
  std::optional<fs::path> venv;
  if (!settings_.command_prefix.empty()) {
    command = settings_.command_prefix + " " + request.command;
  } else if (!settings_.venv_path.empty()) {
    fs::path path = settings_.venv_path;
    if (path.is_relative()) path = fs::path(init_.cwd) / path;
    std::error_code ec;
    if (!fs::is_directory(path / "bin", ec))
      return "venv_path '" + path.string() +
             "' has no bin/ directory (create it with `python3 -m venv " + path.string() + "`)";
    venv = path.lexically_normal();
  } else if (settings_.auto_venv) {
    if (has_python(fs::path(work_dir) / ".venv")) {
      venv = fs::path(work_dir) / ".venv";
    } else if (work_dir != paths_.cwd() && has_python(fs::path(init_.cwd) / ".venv")) {
      venv = fs::path(init_.cwd) / ".venv";
    }
  }

  env_out.clear();
  if (!venv && settings_.env.empty() && request.env.empty()) {
    // Nothing to override (the usual case): the host's environment as it is, without the map.
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      const char* eq = std::strchr(*e, '=');
      if (eq != nullptr && eq != *e) env_out.emplace_back(*e);
    }
    return {};
  }
  auto env = host_environment();
  for (const auto& [name, value] : settings_.env) env[name] = value;
  if (venv) activate_venv(env, *venv);
  for (const auto& [name, value] : request.env) env[name] = value;
  env_out.reserve(env.size());
  for (const auto& [name, value] : env) env_out.push_back(name + "=" + value);
  return {};
}

sdk::ExecResult LocalBackend::execute(const sdk::ExecRequest& request) {
  sdk::ExecResult refused;
  try {
    auto resolved = paths_.resolve(request.work_dir, sdk::Access::Read);
    if (!resolved.error.empty()) {
      refused.error = "work_dir: " + resolved.error;
      return refused;
    }
    std::error_code ec;
    if (!fs::is_directory(resolved.path, ec)) {
      refused.error = "work_dir '" + request.work_dir + "' (" + resolved.path +
                      ") is not an existing directory";
      return refused;
    }
    if (request.command.find('\0') != std::string::npos) {
      refused.error = "the command contains a NUL byte";
      return refused;
    }

    SpawnSpec spec;
    spec.shell = settings_.shell;
    spec.work_dir = resolved.path;
    if (auto error = prepare(request, resolved.path, spec.command, spec.env); !error.empty()) {
      refused.error = error;
      return refused;
    }

    std::list<std::atomic<bool>>::iterator flag;
    {
      std::lock_guard lock(running_mutex_);
      running_.emplace_back(false);
      flag = std::prev(running_.end());
    }
    RunControl control{request.timeout, request.output_cap, request.sink, request.cancel, &*flag};
    sdk::ExecResult result = run_supervised(supervisor_, spec, control);
    {
      std::lock_guard lock(running_mutex_);
      running_.erase(flag);
    }
    running_done_.notify_all();
    return result;
  } catch (const std::exception& e) {
    refused.error = std::string("local backend failed: ") + e.what();
  } catch (...) {
    refused.error = "local backend failed";
  }
  return refused;
}

sdk::FileReadResult LocalBackend::read_file(const sdk::FileReadRequest& request) {
  sdk::FileReadResult result;
  try {
    auto resolved = paths_.resolve(request.path, sdk::Access::Read);
    if (!resolved.error.empty()) {
      result.error = resolved.error;
      return result;
    }
    int fd = ::open(resolved.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      result.error = "cannot read '" + request.path + "': " + errno_text();
      return result;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      result.error = "cannot read '" + request.path + "': not a regular file";
      return result;
    }
    std::size_t want = request.max_bytes;
    if (st.st_size >= 0 && static_cast<std::uintmax_t>(st.st_size) < want)
      want = static_cast<std::size_t>(st.st_size);
    result.data.resize(want);
    std::size_t got = 0;
    while (got < want) {
      ssize_t n = ::read(fd, result.data.data() + got, want - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        result.error = "cannot read '" + request.path + "': " + errno_text();
        break;
      }
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    result.data.resize(got);
    if (result.error.empty() && got == request.max_bytes) {
      char extra;
      ssize_t n;
      while ((n = ::read(fd, &extra, 1)) < 0 && errno == EINTR) {
      }
      result.truncated = n > 0;
    }
    ::close(fd);
    if (!result.error.empty()) result.data.clear();
  } catch (const std::exception& e) {
    result.data.clear();
    result.error = std::string("cannot read '") + request.path + "': " + e.what();
  }
  return result;
}

sdk::FileWriteResult LocalBackend::write_file(const sdk::FileWriteRequest& request) {
  sdk::FileWriteResult result;
  try {
    auto resolved = paths_.resolve(request.path, sdk::Access::Write);
    if (!resolved.error.empty()) {
      result.error = resolved.error;
      return result;
    }
    fs::path target = resolved.path;
    std::error_code ec;
    if (fs::is_directory(target, ec)) {
      result.error = "cannot write '" + request.path + "': it is a directory";
      return result;
    }
    fs::create_directories(target.parent_path(), ec);
    if (ec) {
      result.error =
          "cannot create the parent directories of '" + request.path + "': " + ec.message();
      return result;
    }
    // O_NOFOLLOW: the path was resolved just now, a symlink here appeared since then.
    int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
      result.error = "cannot write '" + request.path + "': " + errno_text();
      return result;
    }
    std::size_t done = 0;
    while (done < request.data.size()) {
      ssize_t n = ::write(fd, request.data.data() + done, request.data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        result.error = "cannot write '" + request.path + "': " + errno_text();
        break;
      }
      done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0 && result.error.empty())
      result.error = "cannot write '" + request.path + "': " + errno_text();
    result.bytes_written = done;
  } catch (const std::exception& e) {
    result.error = std::string("cannot write '") + request.path + "': " + e.what();
  }
  return result;
}

sdk::BackendTraits LocalBackend::traits() const {
  sdk::BackendTraits traits;
  traits.tools_dir = init_.tools_dir;
  traits.python = "python3";
  traits.isolated = false;
  return traits;
}

}  // namespace execmcp::plugins::local

EXECMCP_BACKEND_PLUGIN(execmcp::plugins::local::LocalBackend, "local", "0.1.0",
                       "runs commands as subprocesses on the host, killing the whole tree on "
                       "timeout or cancel")
