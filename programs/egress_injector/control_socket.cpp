// The control socket: bundles in, `ok`/`error` out; and its client, --receive.
#include "control_socket.hpp"

#include <openssl/crypto.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "execmcp/egress_secrets/secret_bundle.hpp"

namespace execmcp::egress_injector {
namespace {

namespace asio = boost::asio;
using local = asio::local::stream_protocol;

std::string system_error(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

void make_private_directory(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0)
    throw std::runtime_error("control socket " + path + ": needs a directory of its own");
  const std::string dir = path.substr(0, slash);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error(system_error(dir));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) throw std::runtime_error(system_error(dir));
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
    throw std::runtime_error(dir + ": not a directory of this user closed to others");
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) throw std::runtime_error(system_error(path));
}

bool same_user(local::socket& peer) {
  ucred cred{};
  socklen_t size = sizeof cred;
  return ::getsockopt(peer.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &size) == 0 &&
         cred.uid == ::geteuid();
}

void cleanse(std::string& text) {
  OPENSSL_cleanse(text.data(), text.size());
}

bool write_all(int fd, const std::string& text) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// The socket's connection, waiting up to 10 s for a serving process that is still starting.
int connect_control(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) return -1;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) return fd;
    const int error = errno;
    ::close(fd);
    if ((error != ENOENT && error != ECONNREFUSED) || std::chrono::steady_clock::now() > deadline) {
      errno = error;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

ControlSocket::ControlSocket(asio::io_context& io, std::string path, Injector& injector)
    : path_(std::move(path)), injector_(injector), acceptor_(io) {
  make_private_directory(path_);
  const mode_t old_mask = ::umask(077);
  boost::system::error_code ec;
  acceptor_.open(local(), ec);
  if (!ec) acceptor_.bind(local::endpoint(path_), ec);
  if (!ec) acceptor_.listen(4, ec);
  ::umask(old_mask);
  if (ec) throw std::runtime_error("control socket " + path_ + ": " + ec.message());
}

asio::awaitable<std::string> ControlSocket::take_bundle(local::socket& peer) {
  if (!same_user(peer)) co_return "error: the control socket takes bundles from its own user only";
  std::string text;
  std::array<char, 16 * 1024> chunk{};
  asio::steady_timer deadline(peer.get_executor());
  deadline.expires_after(std::chrono::seconds(10));
  deadline.async_wait([&](boost::system::error_code ec) {
    if (!ec) peer.close();
  });
  for (;;) {
    boost::system::error_code ec;
    const auto n = co_await peer.async_read_some(asio::buffer(chunk),
                                                 asio::redirect_error(asio::use_awaitable, ec));
    text.append(chunk.data(), n);
    OPENSSL_cleanse(chunk.data(), n);
    if (text.size() > egress_secrets::kMaxBundleBytes) {
      cleanse(text);
      co_return "error: the bundle is larger than " +
          std::to_string(egress_secrets::kMaxBundleBytes) + " bytes";
    }
    if (ec == asio::error::eof) break;
    if (ec) {
      cleanse(text);
      co_return "error: the bundle was not received whole: " + ec.message();
    }
  }
  deadline.cancel();
  std::string answer;
  try {
    auto state = std::make_shared<const BundleState>(text);
    answer = "ok " + std::to_string(state->secrets().size()) + " secrets";
    std::fprintf(stderr, "execmcp-egress-injector: bundle of %s: %zu secrets\n",
                 state->label().c_str(), state->secrets().size());
    injector_.replace_bundle(std::move(state));
  } catch (const std::exception& e) {
    answer = std::string("error: ") + e.what();
  }
  cleanse(text);
  co_return answer;
}

asio::awaitable<void> ControlSocket::serve() {
  for (;;) {
    auto peer = co_await acceptor_.async_accept(asio::use_awaitable);
    std::string answer = co_await take_bundle(peer);
    answer += '\n';
    boost::system::error_code ec;
    if (peer.is_open())
      co_await asio::async_write(peer, asio::buffer(answer),
                                 asio::redirect_error(asio::use_awaitable, ec));
  }
}

int receive_bundle(const std::string& path) {
  std::string text;
  std::array<char, 16 * 1024> chunk{};
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::fprintf(stderr, "execmcp-egress-injector: cannot read the bundle from stdin: %s\n",
                   std::strerror(errno));
      return 1;
    }
    if (n == 0) break;
    text.append(chunk.data(), static_cast<std::size_t>(n));
    if (text.size() > egress_secrets::kMaxBundleBytes) {
      cleanse(text);
      std::fprintf(stderr, "execmcp-egress-injector: the bundle is larger than %zu bytes\n",
                   egress_secrets::kMaxBundleBytes);
      return 2;
    }
  }
  OPENSSL_cleanse(chunk.data(), chunk.size());
  const int fd = connect_control(path);
  if (fd < 0) {
    cleanse(text);
    std::fprintf(stderr, "execmcp-egress-injector: cannot reach the injector at %s: %s\n",
                 path.c_str(), std::strerror(errno));
    return 1;
  }
  const bool sent = write_all(fd, text) && ::shutdown(fd, SHUT_WR) == 0;
  cleanse(text);
  std::string answer;
  for (ssize_t n = 1; sent && n > 0 && answer.size() < 4096;) {
    n = ::read(fd, chunk.data(), chunk.size());
    if (n > 0) answer.append(chunk.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  if (!sent || answer.empty()) {
    std::fprintf(stderr, "execmcp-egress-injector: the injector at %s did not answer\n",
                 path.c_str());
    return 1;
  }
  const bool ok = answer.rfind("ok ", 0) == 0;
  std::fputs(answer.c_str(), ok ? stdout : stderr);
  return ok ? 0 : 1;
}

}  // namespace execmcp::egress_injector
