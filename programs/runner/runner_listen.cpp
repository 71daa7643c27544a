#include "runner_listen.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <sodium.h>

#include "supervision/runner_auth.hpp"

namespace execmcp::plugins::runner_program {
namespace {

namespace ra = supervision::runner_auth;
using Clock = std::chrono::steady_clock;

void say(const std::string& text) {
  const std::string line = "execmcp-runner: " + text + "\n";
  [[maybe_unused]] auto n = ::write(2, line.data(), line.size());
}

bool starts_with(const char* arg, std::string_view prefix) {
  return std::strncmp(arg, prefix.data(), prefix.size()) == 0;
}

// Sends all of `data` at once without waiting (a handshake's few bytes fit in a new socket's
// buffer; a peer that would make us wait is refused).
bool send_now(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::string peer_name(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  if (addr.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(addr);
    ::inet_ntop(AF_INET, &in.sin_addr, host, sizeof host);
    port = ntohs(in.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& in = reinterpret_cast<const sockaddr_in6&>(addr);
    ::inet_ntop(AF_INET6, &in.sin6_addr, host, sizeof host);
    port = ntohs(in.sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

// The key, read once: exactly kKeySize bytes. Never printed, whatever the file holds.
std::optional<ra::RunnerKey> read_key(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    say("cannot read the key file " + path + ": " + std::strerror(errno));
    return std::nullopt;
  }
  std::string bytes(ra::kKeySize + 1, '\0');
  std::size_t got = 0;
  bool failed = false;
  while (got < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) failed = true;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  auto key =
      failed ? std::nullopt : ra::RunnerKey::from_bytes(std::string_view(bytes).substr(0, got));
  sodium_memzero(bytes.data(), bytes.size());
  if (failed)
    say("cannot read the key file " + path);
  else if (!key)
    say("the key file " + path + " must hold exactly " + std::to_string(ra::kKeySize) +
        " bytes; it holds " + (got > ra::kKeySize ? "more" : std::to_string(got)));
  return key;
}

// The one channel: the newest authenticated connection waits in `pending_` until the serving
// thread takes it; taking it, or a newer one arriving, shuts the live one down.
class Channels {
 public:
  explicit Channels(std::function<void(int)> serve)
      : serve_(std::move(serve)), thread_([this] { run(); }) {}
  ~Channels() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      if (live_ >= 0) ::shutdown(live_, SHUT_RDWR);
    }
    cv_.notify_one();
    thread_.join();
    if (pending_ >= 0) ::close(pending_);
  }
  Channels(const Channels&) = delete;
  Channels& operator=(const Channels&) = delete;

  void offer(int fd) {
    std::lock_guard lock(mutex_);
    if (pending_ >= 0) ::close(pending_);  // never served: a newer one came first
    pending_ = fd;
    if (live_ >= 0) ::shutdown(live_, SHUT_RDWR);  // its serve() sees the end, kills its calls
    cv_.notify_one();
  }

 private:
  void run() {
    for (;;) {
      int fd;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return stopping_ || pending_ >= 0; });
        if (stopping_) return;
        fd = live_ = std::exchange(pending_, -1);
      }
      serve_(fd);
      {
        std::lock_guard lock(mutex_);
        live_ = -1;  // before close: offer() never shuts down a number reused since
      }
      ::close(fd);
    }
  }

  const std::function<void(int)> serve_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int pending_ = -1, live_ = -1;
  bool stopping_ = false;
  std::thread thread_;  // last: it starts once the rest is ready
};

// One peer in its handshake: the runner's bytes are sent, the server's answer is being read.
struct Peer {
  int fd = -1;
  std::string name;
  ra::Nonce nonce_r{};
  std::string answer;  // what came of the server's answer so far
  Clock::time_point deadline;
};

// Takes what the peer sent: true while its answer is still incomplete; false when it is done,
// with `why` "" (authenticated) or what it got wrong.
bool read_answer(Peer& peer, const ra::RunnerKey& key, std::string& why) {
  char buf[ra::kServerAnswerSize];
  const std::size_t want = ra::kServerAnswerSize - peer.answer.size();
  const ssize_t n = ::recv(peer.fd, buf, want, MSG_DONTWAIT);  // never past the answer
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) {
    why = peer.answer.empty() ? "closed before answering" : "closed in the middle of its answer";
    return false;
  }
  peer.answer.append(buf, static_cast<std::size_t>(n));
  if (peer.answer.size() < ra::kServerAnswerSize) return true;
  const auto nonce_s = ra::check_server_answer(key, peer.nonce_r, peer.answer);
  if (!nonce_s)
    why = "its answer does not prove the key";
  else if (!send_now(peer.fd, ra::runner_answer(key, *nonce_s, peer.nonce_r)))
    why = "it did not take the runner's answer";
  return false;
}

// Refusals reach stderr (the task's log) one line each, at most kBurst per window: a peer that
// opens connections in a loop costs a count, not a line per connection.
class RefusalLog {
 public:
  static constexpr int kBurst = 20;
  static constexpr auto kWindow = std::chrono::seconds(10);

  void refused(const std::string& peer, const std::string& why) {
    roll(Clock::now());
    if (lines_ < kBurst) {
      ++lines_;
      say("refused a connection from " + peer + ": " + why);
    } else {
      ++untold_;
    }
  }
  // Tells what was not logged once its window is over.
  void roll(Clock::time_point now) {
    if (now - window_start_ < kWindow) return;
    if (untold_ > 0)
      say(std::to_string(untold_) + " more connections were refused within " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kWindow).count()) +
          " s (not logged one by one)");
    window_start_ = now;
    lines_ = 0;
    untold_ = 0;
  }
  // When roll() has something to tell: the end of this window; max() otherwise.
  [[nodiscard]] Clock::time_point due() const {
    return untold_ > 0 ? window_start_ + kWindow : Clock::time_point::max();
  }

 private:
  Clock::time_point window_start_{};
  int lines_ = 0;
  long untold_ = 0;
};

// The accepting thread: the listener and at most kMaxHandshakes peers in one poll, each with its
// deadline; an authenticated peer goes to `channels`.
[[noreturn]] void accept_loop(int listener, const ra::RunnerKey& key, Channels& channels) {
  std::vector<Peer> peers;
  RefusalLog log;
  const auto refuse = [&log](Peer& peer, const std::string& why) {
    log.refused(peer.name, why);
    ::close(peer.fd);
    peer.fd = -1;
  };
  for (;;) {
    std::vector<pollfd> fds{{listener, POLLIN, 0}};
    auto wait = std::chrono::milliseconds(-1);
    const auto now = Clock::now();
    log.roll(now);
    if (log.due() != Clock::time_point::max())
      wait = std::chrono::duration_cast<std::chrono::milliseconds>(log.due() - now) +
             std::chrono::milliseconds(1);
    for (const auto& peer : peers) {
      fds.push_back({peer.fd, POLLIN, 0});
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(peer.deadline - now);
      const auto until =
          std::max(left, std::chrono::milliseconds(0)) + std::chrono::milliseconds(1);
      if (wait.count() < 0 || until < wait) wait = until;
    }
    if (::poll(fds.data(), fds.size(), static_cast<int>(wait.count())) < 0 && errno != EINTR)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (std::size_t i = 0; i < peers.size(); ++i) {
      Peer& peer = peers[i];
      std::string why;
      if ((fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) != 0 &&
          !read_answer(peer, key, why)) {
        if (why.empty()) {
          ra::set_channel_options(peer.fd);
          // The channel's Runner reads and writes blocking, as on a pipe.
          ::fcntl(peer.fd, F_SETFL, ::fcntl(peer.fd, F_GETFL) & ~O_NONBLOCK);
          channels.offer(std::exchange(peer.fd, -1));
        } else {
          refuse(peer, why);
        }
      } else if (Clock::now() >= peer.deadline) {
        refuse(peer, "no answer within the handshake's deadline");
      }
    }
    std::erase_if(peers, [](const Peer& peer) { return peer.fd < 0; });
    if ((fds[0].revents & POLLIN) == 0) continue;
    sockaddr_storage from{};
    socklen_t from_len = sizeof from;
    Peer peer;
    peer.fd = ::accept4(listener, reinterpret_cast<sockaddr*>(&from), &from_len,
                        SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (peer.fd < 0) {
      if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // EMFILE and the like
      continue;
    }
    peer.name = peer_name(from);
    if (peers.size() >= static_cast<std::size_t>(ra::kMaxHandshakes)) {
      refuse(peer, std::to_string(ra::kMaxHandshakes) + " handshakes are in progress already");
      continue;
    }
    peer.nonce_r = ra::random_nonce();
    peer.deadline = Clock::now() + std::chrono::milliseconds(ra::kHandshakeDeadlineMs);
    if (!send_now(peer.fd, ra::runner_hello(peer.nonce_r))) {
      refuse(peer, "it did not take the handshake");
      continue;
    }
    peers.push_back(std::move(peer));
  }
}

}  // namespace

bool parse_listen_args(int argc, char** argv, ListenOptions& options, int& next) {
  if (argc < 3 || !starts_with(argv[1], ra::kListenArg) || !starts_with(argv[2], ra::kKeyFileArg))
    return false;
  const std::string_view port(argv[1] + ra::kListenArg.size());
  if (port.empty() || port.size() > 5) return false;
  unsigned value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value > 65535) return false;
  options.port = static_cast<std::uint16_t>(value);
  options.key_file = argv[2] + ra::kKeyFileArg.size();
  if (options.key_file.empty() || options.key_file[0] != '/') return false;
  next = 3;
  if (argc > 3 && starts_with(argv[3], ra::kBindArg)) {
    options.bind_address = argv[3] + ra::kBindArg.size();
    in_addr probe{};
    if (::inet_pton(AF_INET, options.bind_address.c_str(), &probe) != 1) return false;
    next = 4;
  }
  return true;
}

int listen_main(const ListenOptions& options, const std::function<void(int)>& serve) {
  // The key is about to be in this process's memory: no core dump, no ptrace or /proc/<pid>/mem
  // by the commands' uid, and nothing it starts gains privileges.
  ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  const auto key = read_key(options.key_file);
  if (!key) return 2;
  if (!ra::init()) {
    say("libsodium cannot start (no source of randomness)");
    return 2;
  }
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  const int one = 1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(options.port);
  ::inet_pton(AF_INET, options.bind_address.c_str(), &addr.sin_addr);
  if (listener < 0 || ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener, 16) != 0) {
    say("cannot listen on " + options.bind_address + ":" + std::to_string(options.port) + ": " +
        std::strerror(errno));
    return 2;
  }
  socklen_t len = sizeof addr;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  say("listening on " + options.bind_address + ":" + std::to_string(ntohs(addr.sin_port)));
  Channels channels(serve);
  accept_loop(listener, *key, channels);
}

}  // namespace execmcp::plugins::runner_program
