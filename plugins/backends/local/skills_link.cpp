// See skills_link.hpp.
#include "skills_link.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace execmcp::plugins::local {

namespace fs = std::filesystem;

namespace {

// Closes a descriptor at the end of a scope.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

// MassGen's local skills: <cwd>/.agent/skills names the skills dir, where skill loaders look. A
// link already there is pointed at it; a real directory there is the user's and is left alone
// (MassGen deletes it). Not having the link is not a reason to refuse the agent.
void link_skills(const sdk::BackendInit& init) {
  if (init.skills_dir.empty()) return;
  std::error_code ec;
  if (!fs::is_directory(init.skills_dir, ec)) return;
  const std::string shown = init.cwd + "/.agent/skills";
  auto skip = [&](const std::string& why) {
    if (init.log != nullptr)
      init.log->log(sdk::LogLevel::Warn,
                    "local: not linking the skills dir at " + shown + ": " + why);
  };
  // The workspace is the agent's: every step is taken beneath a descriptor and never through a
  // symlink it made (a `.agent` leading elsewhere would have the server write there).
  const int workspace = ::open(init.cwd.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (workspace < 0) return skip(std::strerror(errno));
  FdCloser workspace_closer{workspace};
  if (::mkdirat(workspace, ".agent", 0755) != 0 && errno != EEXIST)
    return skip(std::strerror(errno));
  const int agent = ::openat(workspace, ".agent", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st {};
  if (agent < 0 || ::fstat(agent, &st) != 0 || !S_ISDIR(st.st_mode)) {
    if (agent >= 0) ::close(agent);
    return skip("'.agent' is not a directory (a symlink there is not followed)");
  }
  FdCloser agent_closer{agent};
  if (::fstatat(agent, "skills", &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!S_ISLNK(st.st_mode)) return skip("something that is not a symlink is there already");
    std::string target(PATH_MAX, '\0');
    const ssize_t n = ::readlinkat(agent, "skills", target.data(), target.size());
    if (n > 0 && target.compare(0, static_cast<std::size_t>(n), init.skills_dir) == 0 &&
        static_cast<std::size_t>(n) == init.skills_dir.size())
      return;
    if (::unlinkat(agent, "skills", 0) != 0) return skip(std::strerror(errno));
  }
  if (::symlinkat(init.skills_dir.c_str(), agent, "skills") != 0) skip(std::strerror(errno));
}

}  // namespace execmcp::plugins::local
