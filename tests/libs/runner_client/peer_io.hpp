// A raw peer's reads from a runner's socket, for the tests that play other peers of a listening
// runner (runner_listen_test.cpp on 127.0.0.1, tests/docker/swarm/swarm_runner_peer_test.cpp on a
// swarm overlay).
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <string>

namespace execmcp::tests::runner_peer {

// Everything the peer sends until it closes or `limit` passes (or `stop_at` bytes came, when not
// 0); `closed` says whether it closed.
inline std::string read_until_closed(int fd, std::chrono::milliseconds limit, bool& closed,
                                     std::size_t stop_at = 0) {
  std::string got;
  closed = false;
  const auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return got;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return got;
    char buf[256];
    // Never past `stop_at`: what follows is the caller's next read.
    const std::size_t want =
        stop_at != 0 && stop_at - got.size() < sizeof buf ? stop_at - got.size() : sizeof buf;
    const ssize_t n = ::recv(fd, buf, want, 0);
    if (n <= 0) {
      closed = true;
      return got;
    }
    got.append(buf, static_cast<std::size_t>(n));
    if (stop_at != 0 && got.size() >= stop_at) return got;
  }
}

// Exactly `n` bytes, or fewer when the peer closes or 5 s pass.
inline std::string read_n(int fd, std::size_t n) {
  bool closed = false;
  return read_until_closed(fd, std::chrono::seconds(5), closed, n);
}

}  // namespace execmcp::tests::runner_peer
