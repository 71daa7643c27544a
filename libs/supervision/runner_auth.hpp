// The handshake that opens a channel to an execmcp-runner reached over the network (its listen
// mode, programs/runner): both ends prove they hold the sandbox's key before a single frame, so a
// peer without it runs nothing, and the server never talks to a runner that is not that sandbox's.
//
//   runner → server : "EXMR" u8 version | nonce_r[32]
//   server → runner : nonce_s[32] | HMAC-SHA256(K, "execmcp-runner/auth1 server" | nonce_r |
//   nonce_s) runner → server : HMAC-SHA256(K, "execmcp-runner/auth1 runner" | nonce_s | nonce_r)
//   then the frames of runner_protocol.hpp, kHello first, as over a pipe.
//
// A recorded server answer is bound to its connection's fresh nonce_r, so it never opens another.
// Pure functions over bytes (the sockets are the callers'); HMAC, randomness and constant-time
// compares are libsodium's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace execmcp::plugins::supervision::runner_auth {

inline constexpr std::size_t kKeySize = 32;
inline constexpr std::size_t kNonceSize = 32;
inline constexpr std::size_t kMacSize = 32;
inline constexpr std::string_view kMagic = "EXMR";
inline constexpr std::uint8_t kAuthVersion = 1;
inline constexpr std::size_t kRunnerHelloSize = 4 + 1 + kNonceSize;      // 37
inline constexpr std::size_t kServerAnswerSize = kNonceSize + kMacSize;  // 64
inline constexpr std::size_t kRunnerAnswerSize = kMacSize;               // 32

// execmcp-runner's listen mode: `<runner> --execmcp-runner-listen=PORT
// --execmcp-runner-key-file=PATH [--execmcp-runner-bind=IPV4]` (then the channel mode's optional
// arguments). Port 0: any free port, told on stderr. The bind address is 0.0.0.0 unless given.
inline constexpr std::string_view kListenArg = "--execmcp-runner-listen=";
inline constexpr std::string_view kKeyFileArg = "--execmcp-runner-key-file=";
inline constexpr std::string_view kBindArg = "--execmcp-runner-bind=";
// The runner's side: a handshake not done within this is dropped; at most this many at once.
inline constexpr int kHandshakeDeadlineMs = 5000;
inline constexpr int kMaxHandshakes = 4;

using Nonce = std::array<unsigned char, kNonceSize>;

// A sandbox's key: 32 bytes, wiped when destroyed; it has no way to be printed.
class RunnerKey {
 public:
  // nullopt unless `bytes` is exactly kKeySize long.
  static std::optional<RunnerKey> from_bytes(std::string_view bytes);
  // A fresh random key.
  static RunnerKey random();
  RunnerKey(const RunnerKey& other);
  RunnerKey& operator=(const RunnerKey& other);
  ~RunnerKey();
  [[nodiscard]] const unsigned char* data() const { return bytes_.data(); }

 private:
  RunnerKey() = default;  // no key of zeros by mistake: from_bytes() or random()
  std::array<unsigned char, kKeySize> bytes_{};
};

// False when libsodium cannot start (no randomness source); every other function needs it.
bool init();
Nonce random_nonce();

// The runner's first bytes, and the server's reading of them: nullopt when `bytes`
// (kRunnerHelloSize of them) are not an execmcp runner's of this version.
std::string runner_hello(const Nonce& nonce_r);
enum class HelloError { kNone, kNotARunner, kVersion };
std::optional<Nonce> parse_runner_hello(std::string_view bytes, HelloError& error);

// The server's answer (kServerAnswerSize bytes), and the runner's check of it: nonce_s when the
// MAC is right for this connection's nonce_r, nullopt otherwise.
std::string server_answer(const RunnerKey& key, const Nonce& nonce_r, const Nonce& nonce_s);
std::optional<Nonce> check_server_answer(const RunnerKey& key, const Nonce& nonce_r,
                                         std::string_view answer);

// The runner's answer (kRunnerAnswerSize bytes), and the server's check of it.
std::string runner_answer(const RunnerKey& key, const Nonce& nonce_s, const Nonce& nonce_r);
bool check_runner_answer(const RunnerKey& key, const Nonce& nonce_s, const Nonce& nonce_r,
                         std::string_view answer);

// Socket options of a channel, set by both ends: no Nagle delay; an idle channel to a lost node
// ends after keepalive (idle 10 s, then 3 probes 5 s apart), and so does a write to it
// (TCP_USER_TIMEOUT 20 s).
inline constexpr int kKeepIdleSeconds = 10;
inline constexpr int kKeepIntervalSeconds = 5;
inline constexpr int kKeepCount = 3;
inline constexpr unsigned kUserTimeoutMs = 20000;
void set_channel_options(int fd);

}  // namespace execmcp::plugins::supervision::runner_auth
