// See preinstall.hpp.
#include "docker_common/parts/preinstall.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <stdexcept>

#include <openssl/evp.h>

#include "docker_common/engine/tar_archive.hpp"
#include "docker_common/log_text.hpp"
#include "supervision/command_output.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using supervision::shell_quote;

constexpr const char* kStepMarker = "execmcp-preinstall: step ";

bool is_local_file(const std::string& entry) {
  return !entry.empty() && entry.front() == '/';
}

// Reads the regular file at `path` whole, refusing more than `room` bytes; "" or why not.
std::string read_regular_file(const std::string& path, std::size_t room, std::string& data) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return std::strerror(errno);
  struct stat st {};
  std::string why;
  if (::fstat(fd, &st) != 0) {
    why = std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    why = "not a regular file";
  } else {
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        why = std::strerror(errno);
        break;
      }
      if (n == 0) break;
      if (data.size() + static_cast<std::size_t>(n) > room) {
        why = "the local files of 'preinstall' are larger than " +
              std::to_string(kMaxLocalBytes >> 20) + " MiB together";
        break;
      }
      data.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return why;
}

std::string file_name(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// One field of the key's text: its length, so that no two different lists read the same.
void field(std::string& out, std::string_view value) {
  out += std::to_string(value.size());
  out += ':';
  out.append(value);
  out += '\n';
}

std::string quoted_list(const std::vector<std::string>& entries) {
  std::string out;
  for (const auto& e : entries) out += " " + shell_quote(e);
  return out;
}

void step(std::string& script, const char* name) {
  script += std::string("echo '") + kStepMarker + name + "' >&2\n";
}

// A Dockerfile instruction's argument in JSON form (CMD ["a", "b"]).
std::string json_form(const std::vector<std::string>& args) {
  return nlohmann::json(args).dump();
}

// A LABEL value in double quotes: '\\', '"' and '$' (the instruction expands variables) escaped.
std::string label_value(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '\\' || c == '"' || c == '$') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256 failed in OpenSSL");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

namespace {

// Calls `check(name, path)` for each local file of the three lists, `name` as the config writes it
// ("preinstall.system[0]"); the first error it returns, or "".
template <typename Check>
std::string check_local_files(const PreinstallSettings& settings, Check check) {
  const std::pair<const char*, const std::vector<std::string>*> lists[] = {
      {"system", &settings.system}, {"python", &settings.python}, {"npm", &settings.npm}};
  for (const auto& [list, entries] : lists) {
    for (std::size_t i = 0; i < entries->size(); ++i) {
      const std::string& entry = (*entries)[i];
      if (!is_local_file(entry)) continue;
      std::string err =
          check("preinstall." + std::string(list) + "[" + std::to_string(i) + "]", entry);
      if (!err.empty()) return err;
    }
  }
  return {};
}

}  // namespace

std::string check_preinstall_files(const PreinstallSettings& settings) {
  return check_local_files(settings, [](const std::string& name, const std::string& entry) {
    struct stat st {};
    std::string why;
    if (::stat(entry.c_str(), &st) != 0) {
      why = std::strerror(errno);
    } else if (!S_ISREG(st.st_mode)) {
      why = "not a regular file";
    }
    return why.empty() ? why : name + " '" + entry + "': " + why;
  });
}

std::string check_preinstall_inputs(const PreinstallSettings& settings,
                                    const std::vector<WritableRoot>& writable) {
  return check_local_files(settings, [&](const std::string& name, const std::string& entry) {
    return check_input_file(entry, writable, name);
  });
}

PreinstallPlan plan_preinstall(const PreinstallSettings& settings) {
  PreinstallPlan plan;
  plan.lists = settings;
  std::size_t total = 0;
  auto place = [&](const std::vector<std::string>& in, std::vector<std::string>& out,
                   const char* list) {
    for (std::size_t i = 0; i < in.size() && plan.error.empty(); ++i) {
      const std::string& entry = in[i];
      if (!is_local_file(entry)) {
        out.push_back(entry);
        continue;
      }
      PreinstallFile file;
      file.host_path = entry;
      const std::string where =
          "preinstall." + std::string(list) + "[" + std::to_string(i) + "] '" + entry + "'";
      if (auto why = read_regular_file(entry, kMaxLocalBytes - total, file.data); !why.empty()) {
        plan.error = where + ": " + why;
        return;
      }
      const std::string name = file_name(entry);
      if (name.empty() || name.size() > 100) {
        plan.error = where + ": the file name must be 1 to 100 bytes long";
        return;
      }
      total += file.data.size();
      file.sha256 = sha256_hex(file.data);
      file.container_path =
          std::string(kPreinstallDir) + "/" + std::to_string(plan.files.size()) + "/" + name;
      out.push_back(file.container_path);
      plan.files.push_back(std::move(file));
    }
  };
  place(settings.system, plan.system, "system");
  place(settings.python, plan.python, "python");
  place(settings.npm, plan.npm, "npm");
  return plan;
}

std::string preinstall_key(const std::string& base_image_id, const PreinstallPlan& plan) {
  std::string text = "execmcp-preinstall/1\n";
  field(text, base_image_id);
  std::size_t next_file = 0;
  for (const auto* list : {&plan.lists.system, &plan.lists.python, &plan.lists.npm}) {
    field(text, std::to_string(list->size()));
    for (const auto& entry : *list) {
      if (is_local_file(entry) && next_file < plan.files.size()) {
        const auto& file = plan.files[next_file++];
        field(text, "file:" + file.sha256 + ":" + file_name(file.host_path));
      } else {
        field(text, "name:" + entry);
      }
    }
  }
  return sha256_hex(text);
}

std::string cache_tag(const std::string& key) {
  return std::string(kCacheRepo) + ":" + key.substr(0, 16);
}

std::string preinstall_script(const PreinstallPlan& plan, const std::vector<std::string>& exports) {
  std::string s = "export DEBIAN_FRONTEND=noninteractive\n";
  for (const auto& variable : exports) s += "export " + shell_quote(variable) + "\n";
  if (!plan.system.empty()) {
    step(s, "system");
    bool all_local_debs = true;
    for (const auto& e : plan.lists.system)
      all_local_debs = all_local_debs && is_local_file(e) && ends_with(e, ".deb");
    if (!all_local_debs) s += "apt-get update\n";
    s += "apt-get install -y --no-install-recommends" + quoted_list(plan.system) + "\n";
    s += "apt-get clean\nrm -rf /var/lib/apt/lists/*\n";
  }
  if (!plan.python.empty()) {
    step(s, "python");
    s += "command -v python3 >/dev/null 2>&1 || { echo 'python3 is not in the image; add "
         "python3 and python3-pip to system' >&2; exit 127; }\n";
    s += "PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir" +
         quoted_list(plan.python) + "\n";
  }
  if (!plan.npm.empty()) {
    step(s, "npm");
    s += "command -v npm >/dev/null 2>&1 || { echo 'npm is not in the image; add nodejs and npm "
         "to system' >&2; exit 127; }\n";
    s += "npm install -g" + quoted_list(plan.npm) + "\n";
  }
  step(s, "cleanup");
  s += std::string("rm -rf ") + kPreinstallDir + " /root/.cache /root/.npm\n";
  return s;
}

std::string preinstall_tar(const PreinstallPlan& plan) {
  const std::string root = std::string(kPreinstallDir).substr(1);  // relative to "/"
  std::vector<TarMember> members;
  members.push_back({root + "/", {}, 0755});
  for (std::size_t i = 0; i < plan.files.size(); ++i) {
    const std::string dir = root + "/" + std::to_string(i) + "/";
    members.push_back({dir, {}, 0755});
    members.push_back({dir + file_name(plan.files[i].container_path), plan.files[i].data, 0644});
  }
  return tar_archive(members);
}

std::string lists_label(const PreinstallSettings& settings) {
  return nlohmann::json{
      {"system", settings.system}, {"python", settings.python}, {"npm", settings.npm}}
      .dump();
}

std::string failed_step(const std::string& log) {
  const auto at = log.rfind(kStepMarker);
  if (at == std::string::npos) return "setup";
  const auto start = at + std::strlen(kStepMarker);
  return log.substr(start, log.find('\n', start) - start);
}

std::string preinstall_failure(const std::string& log, int exit_code) {
  std::deque<std::string> lines;
  std::size_t pos = 0;
  while (pos < log.size()) {
    const auto end = std::min(log.find('\n', pos), log.size());
    std::string_view line(log.data() + pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // The install's output (a package's scripts included) goes to the agent and the log: escaped.
    lines.push_back(log_text(line, 500));
    if (lines.size() > kFailureLogLines) lines.pop_front();
    pos = end + 1;
  }
  std::string out = "preinstall failed at step " + failed_step(log) + " (exit code " +
                    std::to_string(exit_code) + "); the last lines of its log:";
  for (const auto& line : lines) out += "\n  " + line;
  return out;
}

nlohmann::json install_create_body(const InstallSpec& spec) {
  nlohmann::json host{{"NetworkMode", spec.network},
                      {"CapDrop", nlohmann::json::array({"ALL"})},
                      {"CapAdd", kInstallCapabilities},
                      {"SecurityOpt", {"no-new-privileges"}},
                      {"LogConfig",
                       {{"Type", "json-file"},
                        {"Config", {{"max-size", kLogMaxSize}, {"max-file", kLogMaxFiles}}}}}};
  if (spec.memory_bytes) {
    host["Memory"] = *spec.memory_bytes;
    host["MemorySwap"] = *spec.memory_bytes;
  }
  if (spec.pids_limit > 0) host["PidsLimit"] = spec.pids_limit;
  nlohmann::json body{
      {"Image", spec.image}, {"Cmd", spec.cmd}, {"Tty", false}, {"HostConfig", host}};
  if (!spec.user.empty()) body["User"] = spec.user;
  return body;
}

nlohmann::json commit_config(const CommitOptions& options) {
  nlohmann::json config{{"Labels", options.labels}};
  if (!options.user.empty()) config["User"] = options.user;
  if (!options.cmd.empty()) config["Cmd"] = options.cmd;
  if (!options.entrypoint.empty()) config["Entrypoint"] = options.entrypoint;
  return config;
}

std::vector<std::string> commit_changes(const CommitOptions& options) {
  std::vector<std::string> changes;
  if (!options.user.empty()) changes.push_back("USER " + options.user);
  if (!options.cmd.empty()) changes.push_back("CMD " + json_form(options.cmd));
  if (!options.entrypoint.empty()) changes.push_back("ENTRYPOINT " + json_form(options.entrypoint));
  for (const auto& [k, v] : options.labels) changes.push_back("LABEL " + k + "=" + label_value(v));
  return changes;
}

}  // namespace execmcp::plugins::docker_common
