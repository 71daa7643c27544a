#include "supervision/runner_auth.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sodium.h>
#include <sys/socket.h>

#include <cstring>

namespace execmcp::plugins::supervision::runner_auth {
namespace {

constexpr std::string_view kServerLabel = "execmcp-runner/auth1 server";
constexpr std::string_view kRunnerLabel = "execmcp-runner/auth1 runner";

using Mac = std::array<unsigned char, kMacSize>;

Mac mac(const RunnerKey& key, std::string_view label, const Nonce& first, const Nonce& second) {
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, key.data(), kKeySize);
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(label.data()),
                                label.size());
  crypto_auth_hmacsha256_update(&state, first.data(), first.size());
  crypto_auth_hmacsha256_update(&state, second.data(), second.size());
  Mac out{};
  crypto_auth_hmacsha256_final(&state, out.data());
  sodium_memzero(&state, sizeof state);
  return out;
}

bool same_mac(const Mac& expected, std::string_view got) {
  return got.size() == kMacSize && sodium_memcmp(expected.data(), got.data(), kMacSize) == 0;
}

}  // namespace

std::optional<RunnerKey> RunnerKey::from_bytes(std::string_view bytes) {
  if (bytes.size() != kKeySize) return std::nullopt;
  RunnerKey key;
  std::memcpy(key.bytes_.data(), bytes.data(), kKeySize);
  return key;
}

RunnerKey RunnerKey::random() {
  init();
  RunnerKey key;
  randombytes_buf(key.bytes_.data(), kKeySize);
  return key;
}

RunnerKey::RunnerKey(const RunnerKey& other) : bytes_(other.bytes_) {}

RunnerKey& RunnerKey::operator=(const RunnerKey& other) {
  bytes_ = other.bytes_;
  return *this;
}

RunnerKey::~RunnerKey() {
  sodium_memzero(bytes_.data(), bytes_.size());
}

bool init() {
  return sodium_init() >= 0;
}

Nonce random_nonce() {
  init();
  Nonce nonce{};
  randombytes_buf(nonce.data(), nonce.size());
  return nonce;
}

std::string runner_hello(const Nonce& nonce_r) {
  std::string out(kMagic);
  out += static_cast<char>(kAuthVersion);
  out.append(reinterpret_cast<const char*>(nonce_r.data()), nonce_r.size());
  return out;
}

std::optional<Nonce> parse_runner_hello(std::string_view bytes, HelloError& error) {
  error = HelloError::kNone;
  if (bytes.size() != kRunnerHelloSize || bytes.substr(0, kMagic.size()) != kMagic) {
    error = HelloError::kNotARunner;
    return std::nullopt;
  }
  if (static_cast<std::uint8_t>(bytes[kMagic.size()]) != kAuthVersion) {
    error = HelloError::kVersion;
    return std::nullopt;
  }
  Nonce nonce{};
  std::memcpy(nonce.data(), bytes.data() + kMagic.size() + 1, kNonceSize);
  return nonce;
}

std::string server_answer(const RunnerKey& key, const Nonce& nonce_r, const Nonce& nonce_s) {
  const Mac m = mac(key, kServerLabel, nonce_r, nonce_s);
  std::string out(reinterpret_cast<const char*>(nonce_s.data()), nonce_s.size());
  out.append(reinterpret_cast<const char*>(m.data()), m.size());
  return out;
}

std::optional<Nonce> check_server_answer(const RunnerKey& key, const Nonce& nonce_r,
                                         std::string_view answer) {
  if (answer.size() != kServerAnswerSize) return std::nullopt;
  Nonce nonce_s{};
  std::memcpy(nonce_s.data(), answer.data(), kNonceSize);
  if (!same_mac(mac(key, kServerLabel, nonce_r, nonce_s), answer.substr(kNonceSize)))
    return std::nullopt;
  return nonce_s;
}

std::string runner_answer(const RunnerKey& key, const Nonce& nonce_s, const Nonce& nonce_r) {
  const Mac m = mac(key, kRunnerLabel, nonce_s, nonce_r);
  return std::string(reinterpret_cast<const char*>(m.data()), m.size());
}

bool check_runner_answer(const RunnerKey& key, const Nonce& nonce_s, const Nonce& nonce_r,
                         std::string_view answer) {
  return same_mac(mac(key, kRunnerLabel, nonce_s, nonce_r), answer);
}

void set_channel_options(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &kKeepIdleSeconds, sizeof kKeepIdleSeconds);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &kKeepIntervalSeconds, sizeof kKeepIntervalSeconds);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &kKeepCount, sizeof kKeepCount);
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &kUserTimeoutMs, sizeof kUserTimeoutMs);
}

}  // namespace execmcp::plugins::supervision::runner_auth
