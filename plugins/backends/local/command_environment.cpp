// See command_environment.hpp.
#include "command_environment.hpp"

extern char** environ;  // NOLINT: POSIX

namespace execmcp::plugins::local {

namespace fs = std::filesystem;

namespace {

constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

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

}  // namespace

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

std::string prepare_command(const LocalSettings& settings, const std::string& cwd,
                            const std::string& request_command, const Env& request_env,
                            const std::string& work_dir, PreparedCommand& out) {
  for (const auto& [name, value] : request_env) {
    if (name.empty() || name.find('=') != std::string::npos || name.find('\0') != std::string::npos)
      return "invalid environment variable name '" + name + "'";
  }

  out.command = request_command;
  out.venv.reset();
  // Both apply, as in the Docker backends: the venv's bin/ leads PATH, and the prefix wraps the
  // command (so `uv run` or `poetry run` find the venv's tools).
  if (!settings.command_prefix.empty())
    out.command = settings.command_prefix + " " + request_command;
  if (!settings.venv_path.empty()) {
    fs::path path = settings.venv_path;
    if (path.is_relative()) path = fs::path(cwd) / path;
    std::error_code ec;
    if (!fs::is_directory(path / "bin", ec))
      return "venv_path '" + path.string() +
             "' has no bin/ directory (create it with `python3 -m venv " + path.string() + "`)";
    out.venv = path.lexically_normal();
  } else if (settings.auto_venv) {
    if (has_python(fs::path(work_dir) / ".venv")) {
      out.venv = fs::path(work_dir) / ".venv";
    } else if (work_dir != cwd && has_python(fs::path(cwd) / ".venv")) {
      out.venv = fs::path(cwd) / ".venv";
    }
  }
  return {};
}

std::vector<std::string> command_environment(std::map<std::string, std::string> env,
                                             const LocalSettings& settings,
                                             const std::optional<fs::path>& venv,
                                             const Env& request_env) {
  for (const auto& [name, value] : settings.env) env[name] = value;
  if (venv) activate_venv(env, *venv);
  for (const auto& [name, value] : request_env) env[name] = value;
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

}  // namespace execmcp::plugins::local
