#include "supervision/stream_relay.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace execmcp::plugins::supervision {
namespace {

// Writes all of `data` (blocking); false when the peer is gone.
bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

bool unix_address(const std::string& path, sockaddr_un& addr) {
  addr = {};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    errno = ENAMETOOLONG;
    return false;
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  return true;
}

int fail_closing(int fd) {
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return -1;
}

}  // namespace

StreamRelay::StreamRelay(int listen_fd, std::function<int()> connect, std::size_t max_connections)
    : listen_fd_(listen_fd), connect_(std::move(connect)), max_connections_(max_connections) {
  if (::pipe2(stop_pipe_, O_CLOEXEC) != 0) stop_pipe_[0] = stop_pipe_[1] = -1;
  acceptor_ = std::thread([this] { accept_loop(); });
}

StreamRelay::~StreamRelay() {
  stop();
}

std::size_t StreamRelay::active_connections() {
  std::lock_guard lock(mutex_);
  return active_;
}

void StreamRelay::stop() noexcept {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
    // Wakes every relay thread blocked in poll, read or send.
    for (const int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  if (stop_pipe_[1] >= 0) {
    [[maybe_unused]] auto n = ::write(stop_pipe_[1], "x", 1);
  }
  if (acceptor_.joinable()) acceptor_.join();
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return active_ == 0; });
  lock.unlock();
  ::close(listen_fd_);
  for (int& fd : stop_pipe_)
    if (fd >= 0) ::close(std::exchange(fd, -1));
}

void StreamRelay::accept_loop() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (::poll(fds, stop_pipe_[0] >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN) continue;
      return;
    }
    {
      std::lock_guard lock(mutex_);
      if (stopping_ || active_ >= max_connections_) {
        ::close(client);
        continue;
      }
      ++active_;
      open_fds_.insert(client);
    }
    const int upstream = connect_();
    {
      std::lock_guard lock(mutex_);
      if (upstream >= 0) open_fds_.insert(upstream);
      if (upstream < 0 || stopping_) {
        open_fds_.erase(client);
        ::close(client);
        if (upstream >= 0) {
          open_fds_.erase(upstream);
          ::close(upstream);
        }
        --active_;
        idle_.notify_all();
        continue;
      }
    }
    std::thread([this, client, upstream] { relay(client, upstream); }).detach();
  }
}

void StreamRelay::relay(int a, int b) {
  bool open[2] = {true, true};  // a->b, b->a still flowing
  const int from[2] = {a, b};
  const int to[2] = {b, a};
  char buf[16384];
  while (open[0] || open[1]) {
    pollfd fds[2];
    int map[2];
    nfds_t n = 0;
    for (int d = 0; d < 2; ++d)
      if (open[d]) {
        fds[n] = {from[d], POLLIN, 0};
        map[n++] = d;
      }
    if (::poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    bool failed = false;
    for (nfds_t i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      const int d = map[i];
      const ssize_t got = ::recv(from[d], buf, sizeof buf, 0);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        open[d] = false;
        ::shutdown(to[d], SHUT_WR);
        if (got < 0) failed = true;
        continue;
      }
      if (!write_all(to[d], buf, static_cast<std::size_t>(got))) failed = true;
    }
    if (failed) break;
  }
  std::lock_guard lock(mutex_);
  open_fds_.erase(a);
  open_fds_.erase(b);
  ::close(a);
  ::close(b);
  --active_;
  idle_.notify_all();
}

int listen_tcp_loopback(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const sockaddr_in addr = loopback(port);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, 64) != 0)
    return fail_closing(fd);
  return fd;
}

int listen_unix(const std::string& path) {
  sockaddr_un addr{};
  if (!unix_address(path, addr)) return -1;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  ::unlink(path.c_str());
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, 64) != 0)
    return fail_closing(fd);
  return fd;
}

int connect_tcp_loopback(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const sockaddr_in addr = loopback(port);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    return fail_closing(fd);
  return fd;
}

int connect_unix(const std::string& path) {
  sockaddr_un addr{};
  if (!unix_address(path, addr)) return -1;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    return fail_closing(fd);
  return fd;
}

std::uint16_t local_port(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  return ntohs(addr.sin_port);
}

}  // namespace execmcp::plugins::supervision
