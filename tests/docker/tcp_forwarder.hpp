// A tcp DOCKER_HOST for the Docker tests: forwards 127.0.0.1:<free port> to the engine's unix
// socket, so no test ever opens an unauthenticated tcp port on dockerd itself.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace execmcp::docker_test {

// Listens on 127.0.0.1 (a free port) and copies every connection's bytes both ways to and from
// the engine's unix socket: a tcp DOCKER_HOST for tests, with no unauthenticated tcp port on
// dockerd itself. Byte-level, so the exec stream's connection upgrade passes through untouched.
// With `refuse_upgrades` it acts like HAProxy 2.4 to 3.0 with a request that has a body: the
// upgrade headers are dropped (the engine answers 200, not 101) and nothing the client sends after
// such a request reaches the engine.
class TcpToUnixForwarder {
 public:
  explicit TcpToUnixForwarder(std::string socket_path, bool refuse_upgrades = false)
      : socket_path_(std::move(socket_path)), refuse_upgrades_(refuse_upgrades) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listen_fd_, 16) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw std::runtime_error(std::string("forwarder: ") + std::strerror(errno));
    port_ = ntohs(addr.sin_port);
    threads_.emplace_back([this] { accept_loop(); });
  }
  ~TcpToUnixForwarder() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    ::close(listen_fd_);
  }
  TcpToUnixForwarder(const TcpToUnixForwarder&) = delete;
  TcpToUnixForwarder& operator=(const TcpToUnixForwarder&) = delete;

  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] int connections() const { return connections_; }

 private:
  void accept_loop() {
    std::vector<std::thread> pumps;
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      ++connections_;
      pumps.emplace_back([this, client] { pump(client); });
    }
    for (auto& t : pumps) t.join();
  }
  void pump(int client) {
    const int engine = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket_path_.c_str());
    if (engine >= 0 && ::connect(engine, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      bool open[2] = {true, true};  // client -> engine, engine -> client
      bool held = false;            // refuse_upgrades: the client's later bytes are dropped
      const int from[2] = {client, engine};
      const int to[2] = {engine, client};
      char buf[65536];
      while (!stop_ && (open[0] || open[1])) {
        pollfd p[2] = {{client, static_cast<short>(open[0] ? POLLIN : 0), 0},
                       {engine, static_cast<short>(open[1] ? POLLIN : 0), 0}};
        if (::poll(p, 2, 50) <= 0) continue;
        for (int i = 0; i < 2; ++i) {
          if (!open[i] || p[i].revents == 0) continue;
          ssize_t n = ::read(from[i], buf, sizeof(buf));
          bool ok = n > 0;
          if (ok && i == 0 && refuse_upgrades_) {
            if (held) continue;  // after the refused upgrade: dropped, as the proxy holds it
            // The request comes in one write from the backend's client.
            std::string request(buf, static_cast<std::size_t>(n));
            for (const char* header : {"Connection: Upgrade\r\n", "Upgrade: tcp\r\n"}) {
              const auto at = request.find(header);
              if (at == std::string::npos) continue;
              request.erase(at, std::strlen(header));
              held = true;
            }
            std::memcpy(buf, request.data(), request.size());
            n = static_cast<ssize_t>(request.size());
          }
          for (ssize_t done = 0; ok && done < n;) {
            const ssize_t w = ::write(to[i], buf + done, static_cast<std::size_t>(n - done));
            ok = w > 0;
            done += w > 0 ? w : 0;
          }
          if (!ok) {
            open[i] = false;
            ::shutdown(to[i], SHUT_WR);
          }
        }
      }
    }
    if (engine >= 0) ::close(engine);
    ::close(client);
  }

  std::string socket_path_;
  bool refuse_upgrades_ = false;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::vector<std::thread> threads_;
};

}  // namespace execmcp::docker_test
