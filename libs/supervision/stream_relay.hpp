// A byte relay between two kinds of stream socket, used on both sides of the local sandbox's
// egress path (docs/architecture.md, "Local sandbox egress"): inside the sandbox execmcp-runner
// accepts TCP on 127.0.0.1:3128 and relays each connection to the unix socket bound in at
// /run/execmcp/egress.sock; on the host the plugin accepts on that unix socket and relays to its
// Squid's loopback port. Each connection gets a thread of its own and is copied both ways,
// half-closes forwarded; connections beyond the bound are closed at once.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace execmcp::plugins::supervision {

// The local sandbox's egress path, as execmcp-runner and the launcher agree on it.
inline constexpr const char* kEgressRelayArg = "--execmcp-egress-relay=";  // + the socket inside
inline constexpr const char* kEgressSocketInside = "/run/execmcp/egress.sock";
inline constexpr std::uint16_t kEgressRelayPort = 3128;  // on the sandbox's own 127.0.0.1
inline constexpr std::size_t kEgressRelayConnections = 64;

class StreamRelay {
 public:
  // Takes `listen_fd` (listening, close-on-exec); `connect` opens the other end for one accepted
  // connection (-1: the connection is closed). Starts accepting at once.
  StreamRelay(int listen_fd, std::function<int()> connect, std::size_t max_connections);
  ~StreamRelay();
  StreamRelay(const StreamRelay&) = delete;
  StreamRelay& operator=(const StreamRelay&) = delete;

  // Stops accepting, ends every relayed connection and waits for their threads. Idempotent.
  void stop() noexcept;

  [[nodiscard]] std::size_t active_connections();

 private:
  void accept_loop();
  void relay(int a, int b);

  int listen_fd_;
  int stop_pipe_[2] = {-1, -1};
  std::function<int()> connect_;
  std::size_t max_connections_;
  std::mutex mutex_;
  std::condition_variable idle_;
  std::size_t active_ = 0;
  std::set<int> open_fds_;
  bool stopping_ = false;
  std::thread acceptor_;
};

// Socket helpers (close-on-exec; -1 and errno on failure).
int listen_tcp_loopback(std::uint16_t port);  // 127.0.0.1:port (0: any free port)
int listen_unix(const std::string& path);     // a pathname socket, made anew
int connect_tcp_loopback(std::uint16_t port);
int connect_unix(const std::string& path);
std::uint16_t local_port(int fd);  // the port a TCP socket is bound to (0 on failure)

}  // namespace execmcp::plugins::supervision
