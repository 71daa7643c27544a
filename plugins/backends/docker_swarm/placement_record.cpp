// The placement record's JSON, read without following a symlink and written by a rename.
#include "docker_swarm/placement_record.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include <nlohmann/json.hpp>

namespace execmcp::plugins::docker_swarm {
namespace {

using nlohmann::json;

std::string errno_text(int err) {
  return std::strerror(err);
}

// Writes all of `data` to `fd`; false on an error (errno set).
bool write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const auto n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

std::string placement_path(const std::string& workspace_dir) {
  return workspace_dir + "/" + kPlacementFileName;
}

std::optional<Placement> read_placement(const std::string& workspace_dir, std::string& error) {
  error.clear();
  const std::string path = placement_path(workspace_dir);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno != ENOENT) error = "cannot open " + path + ": " + errno_text(errno);
    return std::nullopt;
  }
  std::string text;
  char buf[1024];
  for (;;) {
    const auto n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = "cannot read " + path + ": " + errno_text(errno);
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > kMaxPlacementBytes) {
      ::close(fd);
      error = path + " is longer than " + std::to_string(kMaxPlacementBytes) +
              " bytes: not a placement record";
      return std::nullopt;
    }
  }
  ::close(fd);
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto field = [&](const char* key) {
    const auto it = j.is_object() ? j.find(key) : j.end();
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  Placement p;
  p.node_id = field("node_id");
  p.hostname = field("node_hostname");
  p.volume = field("volume");
  if (j.is_object() && j.contains("created") && j["created"].is_number_integer())
    p.created = j["created"].get<std::int64_t>();
  if (p.node_id.empty() || p.volume.empty()) {
    error = path + " is not a placement record (it needs node_id and volume)";
    return std::nullopt;
  }
  return p;
}

std::string write_placement(const std::string& workspace_dir, const Placement& placement) {
  const json j{{"node_id", placement.node_id},
               {"node_hostname", placement.hostname},
               {"volume", placement.volume},
               {"created", placement.created}};
  const std::string path = placement_path(workspace_dir);
  const std::string tmp = path + ".tmp-" + std::to_string(std::random_device{}());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot write " + tmp + ": " + errno_text(errno);
  const bool ok = write_all(fd, j.dump() + "\n");
  const int write_errno = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(tmp.c_str());
    return "cannot write " + tmp + ": " + errno_text(write_errno);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return "cannot rename " + tmp + " to " + path + ": " + errno_text(err);
  }
  return {};
}

}  // namespace execmcp::plugins::docker_swarm
