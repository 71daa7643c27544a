#include "runner_client/runner_transport.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

namespace execmcp::plugins::runner_client {
namespace {

namespace ra = supervision::runner_auth;
using Clock = std::chrono::steady_clock;

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

// Waits for `events` on fd until the deadline: 1 ready, 0 timed out, -1 error.
int wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, remaining_ms(deadline));
    if (n < 0 && errno == EINTR) continue;
    return n < 0 ? -1 : n;
  }
}

enum class Io { kOk, kTimeout, kClosed, kError };

// Reads exactly `size` bytes (never more: what follows is the channel's).
Io read_exact(int fd, std::string& out, std::size_t size, Clock::time_point deadline) {
  out.assign(size, '\0');
  std::size_t got = 0;
  while (got < size) {
    const int ready = wait_for(fd, POLLIN, deadline);
    if (ready == 0) return Io::kTimeout;
    if (ready < 0) return Io::kError;
    const ssize_t n = ::recv(fd, out.data() + got, size - got, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return errno == ECONNRESET ? Io::kClosed : Io::kError;
    if (n == 0) return Io::kClosed;
    got += static_cast<std::size_t>(n);
  }
  return Io::kOk;
}

Io write_all(int fd, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    const int ready = wait_for(fd, POLLOUT, deadline);
    if (ready == 0) return Io::kTimeout;
    if (ready < 0) return Io::kError;
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return errno == EPIPE || errno == ECONNRESET ? Io::kClosed : Io::kError;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return Io::kOk;
}

// A connected, non-blocking socket to one of the host's addresses; -1 and `why` otherwise.
int connect_to(const RunnerAddress& at, Clock::time_point deadline, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(at.port);
  const int rc = ::getaddrinfo(at.host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) {
    why = std::string("cannot resolve it: ") + ::gai_strerror(rc);
    return -1;
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  why = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    Fd s{::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol)};
    if (s.fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    if (::connect(s.fd, a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        why = std::strerror(errno);
        continue;
      }
      const int ready = wait_for(s.fd, POLLOUT, deadline);
      if (ready <= 0) {
        why = ready == 0 ? "no answer in time" : std::strerror(errno);
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        why = std::strerror(err);
        continue;
      }
    }
    return s.release();
  }
  return -1;
}

std::optional<ChannelEnds> fail(TransportError& error, TransportError::Kind kind,
                                const std::string& peer, const std::string& what) {
  error.kind = kind;
  error.message = peer + ": " + what;
  return std::nullopt;
}

}  // namespace

std::optional<ChannelEnds> connect_runner(const RunnerAddress& at, const ra::RunnerKey& key,
                                          std::chrono::milliseconds timeout,
                                          TransportError& error) {
  using Kind = TransportError::Kind;
  error = {};
  const std::string peer =
      at.peer.empty() ? "the runner at " + at.host + ":" + std::to_string(at.port) : at.peer;
  const auto deadline = Clock::now() + timeout;
  if (!ra::init()) return fail(error, Kind::kProtocol, peer, "libsodium cannot start");
  std::string why;
  Fd s{connect_to(at, deadline, why)};
  if (s.fd < 0) return fail(error, Kind::kUnreachable, peer, "cannot connect (" + why + ")");
  ra::set_channel_options(s.fd);

  std::string hello;
  switch (read_exact(s.fd, hello, ra::kRunnerHelloSize, deadline)) {
    case Io::kOk:
      break;
    case Io::kTimeout:
      return fail(error, Kind::kUnreachable, peer, "connected, but no handshake came in time");
    default:
      return fail(error, Kind::kProtocol, peer, "closed the connection before its handshake");
  }
  ra::HelloError hello_error = ra::HelloError::kNone;
  const auto nonce_r = ra::parse_runner_hello(hello, hello_error);
  if (!nonce_r)
    return fail(error, Kind::kProtocol, peer,
                hello_error == ra::HelloError::kVersion
                    ? "speaks another version of the runner handshake (another execmcp build)"
                    : "is not an execmcp runner (its first bytes are not the runner handshake)");
  const ra::Nonce nonce_s = ra::random_nonce();
  if (write_all(s.fd, ra::server_answer(key, *nonce_r, nonce_s), deadline) != Io::kOk)
    return fail(error, Kind::kRefused, peer, "closed the connection during the handshake");
  std::string answer;
  switch (read_exact(s.fd, answer, ra::kRunnerAnswerSize, deadline)) {
    case Io::kOk:
      break;
    case Io::kTimeout:
      return fail(error, Kind::kUnreachable, peer, "did not finish the handshake in time");
    default:
      return fail(error, Kind::kRefused, peer,
                  "refused the handshake (it does not hold this sandbox's key)");
  }
  if (!ra::check_runner_answer(key, nonce_s, *nonce_r, answer))
    return fail(error, Kind::kRefused, peer,
                "answered the handshake without this sandbox's key (not its runner)");
  // Left non-blocking: the channel's one I/O thread then never waits in a send that a slow
  // reader holds up (it handles EAGAIN both ways).
  const int fd = s.release();
  ChannelEnds ends = ChannelEnds::raw(fd, fd);
  ends.peer = peer;
  return ends;
}

}  // namespace execmcp::plugins::runner_client
