// See runner_files.hpp. The words of the refusals are the ones the file tools' shell scripts used
// (docker_common/container_files.cpp), so the agent reads the same either way.
#include "runner_files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace execmcp::plugins::runner_program {
namespace {

namespace rp = supervision::runner;

// A list never answers with more entries than this, whatever it is asked for.
constexpr std::uint64_t kMaxEntries = 100000;

char kind_of(mode_t mode) {
  if (S_ISREG(mode)) return 'f';
  if (S_ISDIR(mode)) return 'd';
  if (S_ISLNK(mode)) return 'l';
  if (S_ISFIFO(mode)) return 'p';
  if (S_ISSOCK(mode)) return 's';
  if (S_ISCHR(mode)) return 'c';
  if (S_ISBLK(mode)) return 'b';
  return '?';
}

std::string full_path(const rp::FileRequest& r) {
  if (r.path.front() == '/') return r.path;
  return r.cwd.back() == '/' ? r.cwd + r.path : r.cwd + "/" + r.path;
}

std::string errno_words(const std::string& path, int error) {
  return path + ": " + std::strerror(error);
}

// The refusal of anything that is not a regular file ("" for a regular file).
std::string refusal(const std::string& path, mode_t mode) {
  if (S_ISREG(mode)) return {};
  if (S_ISDIR(mode)) return "'" + path + "' is a directory";
  return "'" + path + "' is not a regular file (a FIFO, socket or device)";
}

void describe(rp::FileReport& report, const struct stat& st) {
  report.kind = kind_of(st.st_mode);
  report.size = static_cast<std::uint64_t>(std::max<off_t>(st.st_size, 0));
  report.mode = static_cast<std::uint32_t>(st.st_mode & 07777);
  report.mtime = static_cast<std::int64_t>(st.st_mtime);
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

// Opens `full` (checked to be a regular file first, and again once open: one swapped in between
// is refused before a byte moves). "" or why not (`error_number`: the errno of a failed open, else
// 0); `report` describes the file.
std::string open_regular(const std::string& path, const std::string& full, int flags, int& fd,
                         int& error_number, rp::FileReport& report) {
  error_number = 0;
  struct stat st {};
  if (::stat(full.c_str(), &st) == 0) {
    if (auto why = refusal(path, st.st_mode); !why.empty()) {
      describe(report, st);
      return why;
    }
  } else if (errno != ENOENT) {
    return errno_words(path, errno);
  }
  fd = ::open(full.c_str(), flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0666);
  if (fd < 0) {
    error_number = errno;
    return errno_words(path, error_number);
  }
  if (::fstat(fd, &st) != 0) return errno_words(path, errno);
  describe(report, st);
  return refusal(path, st.st_mode);
}

rp::FileReport read_file(const rp::FileRequest& r, const FileEmit& emit) {
  rp::FileReport report;
  int raw = -1;
  int open_errno = 0;
  report.error = open_regular(r.path, full_path(r), O_RDONLY, raw, open_errno, report);
  Fd fd(raw);
  if (!report.error.empty()) return report;
  // One byte past max_bytes tells whether the file is larger; only max_bytes are sent.
  const std::uint64_t max = std::min<std::uint64_t>(r.max_bytes, std::uint64_t{1} << 40);
  std::string buf(std::min<std::uint64_t>(rp::kMaxPayload, max + 1), '\0');
  std::uint64_t sent = 0;
  auto at = static_cast<off_t>(std::min<std::uint64_t>(r.offset, std::uint64_t{1} << 62));
  for (;;) {
    const std::uint64_t want = std::min<std::uint64_t>(buf.size(), max - sent + 1);
    const ssize_t n = ::pread(fd.get(), buf.data(), want, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      report.error = errno_words(r.path, errno);
      return report;
    }
    if (n == 0) return report;
    at += n;
    auto got = static_cast<std::uint64_t>(n);
    if (sent + got > max) {
      got = max - sent;
      report.truncated = true;
    }
    if (got > 0) emit(std::string_view(buf.data(), got));
    sent += got;
    if (report.truncated) return report;
  }
}

// `mkdir -p` of the directory that holds `full`.
std::string make_parents(const std::string& path, const std::string& full) {
  const auto slash = full.rfind('/');
  if (slash == 0 || slash == std::string::npos) return {};
  const std::string dir = full.substr(0, slash);
  for (std::size_t at = 1; at <= dir.size(); ++at) {
    if (at != dir.size() && dir[at] != '/') continue;
    if (::mkdir(dir.substr(0, at).c_str(), 0777) != 0 && errno != EEXIST)
      return "cannot create the directories of '" + path + "': " + dir.substr(0, at) + ": " +
             std::strerror(errno);
  }
  return {};
}

rp::FileReport write_file(const rp::FileRequest& r, const std::string& input) {
  rp::FileReport report;
  const std::string full = full_path(r);
  // As `cat >` did: created or truncated in place (it keeps its inode, owner and mode).
  const int flags = O_WRONLY | O_CREAT | O_TRUNC;
  int raw = -1;
  int open_errno = 0;
  report.error = open_regular(r.path, full, flags, raw, open_errno, report);
  if (open_errno == ENOENT) {  // a directory on the way is missing: made, as `mkdir -p` did
    if (report.error = make_parents(r.path, full); !report.error.empty()) return report;
    report.error = open_regular(r.path, full, flags, raw, open_errno, report);
  }
  Fd fd(raw);
  if (!report.error.empty()) return report;
  std::string_view rest = input;
  while (!rest.empty()) {
    const ssize_t n = ::write(fd.get(), rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      report.error = errno_words(r.path, n < 0 ? errno : ENOSPC);
      return report;
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  report.size = input.size();
  return report;
}

rp::FileReport stat_file(const rp::FileRequest& r) {
  rp::FileReport report;
  struct stat st {};
  if (::stat(full_path(r).c_str(), &st) == 0) {
    describe(report, st);
  } else if (errno == ENOENT || errno == ENOTDIR) {
    report.kind = '-';
  } else {
    report.error = errno_words(r.path, errno);
  }
  return report;
}

rp::FileReport list_dir(const rp::FileRequest& r, const FileEmit& emit) {
  rp::FileReport report;
  // O_DIRECTORY fails on anything else before it is opened (a FIFO never blocks it).
  const int raw =
      ::open(full_path(r).c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (raw < 0) {
    report.error =
        errno == ENOTDIR ? "'" + r.path + "' is not a directory" : errno_words(r.path, errno);
    return report;
  }
  DIR* dir = ::fdopendir(raw);
  if (dir == nullptr) {
    report.error = errno_words(r.path, errno);
    ::close(raw);
    return report;
  }
  report.kind = 'd';
  const std::uint64_t cap = std::min(r.max_bytes, kMaxEntries);
  std::string batch;
  std::uint64_t count = 0;
  while (const dirent* e = ::readdir(dir)) {
    const std::string_view name(e->d_name);
    if (name == "." || name == "..") continue;
    if (count == cap) {
      report.truncated = true;
      break;
    }
    char kind = '?';
    struct stat st {};
    if (e->d_type != DT_UNKNOWN) {
      kind = kind_of(static_cast<mode_t>(DTTOIF(e->d_type)));
    } else if (::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      kind = kind_of(st.st_mode);
    }
    const std::string entry = rp::encode_entry(kind, name);
    if (batch.size() + entry.size() > rp::kMaxPayload) {
      emit(batch);
      batch.clear();
    }
    batch += entry;
    ++count;
  }
  ::closedir(dir);
  if (!batch.empty()) emit(batch);
  report.size = count;
  return report;
}

}  // namespace

rp::FileReport do_file_call(const rp::FileRequest& request, const std::string& input,
                            const FileEmit& emit) {
  try {
    switch (request.op) {
      case rp::FileOp::kRead:
        return read_file(request, emit);
      case rp::FileOp::kWrite:
        return write_file(request, input);
      case rp::FileOp::kStat:
        return stat_file(request);
      case rp::FileOp::kList:
        return list_dir(request, emit);
    }
  } catch (const std::exception& e) {
    rp::FileReport report;
    report.error = std::string("execmcp-runner: ") + e.what();
    return report;
  }
  rp::FileReport report;
  report.error = "execmcp-runner: unknown file call";
  return report;
}

}  // namespace execmcp::plugins::runner_program
