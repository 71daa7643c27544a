// Reads the egress secrets' values and makes their placeholders (egress_secrets.hpp).
#include "docker_common/parts/egress_secrets.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "docker_common/lifecycle/mount_source.hpp"

namespace execmcp::plugins::docker_common {
namespace {

// A value of at most 8 KiB (placeholder_problem()) and its line end; a larger file is said to be
// too large rather than cut.
constexpr std::size_t kMaxValueFile = 8 * 1024 + 2;
constexpr std::size_t kMaxUpstreamCa = 1 << 20;

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// The whole of a regular file of at most `limit` bytes into `out`: "" or the reason
// (strerror's words, or "larger than N bytes", "not a regular file").
std::string read_file(const std::string& path, std::size_t limit, std::string& out,
                      std::string* real_path = nullptr) {
  Fd file;
  // Not blocking: a FIFO named by mistake is refused below instead of hanging the start.
  file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (file.fd < 0) return std::strerror(errno);
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) return std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  if (static_cast<std::uint64_t>(st.st_size) > limit)
    return "larger than " + std::to_string(limit) + " bytes";
  if (real_path != nullptr) {
    // The file opened, with every symlink on the way resolved.
    std::error_code ec;
    *real_path = std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(file.fd), ec);
    if (ec) *real_path = std::filesystem::weakly_canonical(path, ec).string();
  }
  std::string buffer(limit + 1, '\0');
  std::size_t size = 0;
  while (size < buffer.size()) {
    const ssize_t got = ::read(file.fd, buffer.data() + size, buffer.size() - size);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const std::string why = std::strerror(errno);
      cleanse(buffer);
      return why;
    }
    if (got == 0) break;
    size += static_cast<std::size_t>(got);
  }
  if (size > limit) {
    cleanse(buffer);
    return "larger than " + std::to_string(limit) + " bytes";
  }
  out.assign(buffer.data(), size);
  cleanse(buffer);
  return {};
}

// The agent's paths and their real forms (a path the server reaches through a symlink is
// compared by where it leads, as the file is).
bool inside_agent_paths(const std::string& real, const std::string& written,
                        const std::vector<std::string>& agent_paths, std::string& which) {
  for (const auto& root : agent_paths) {
    if (root.empty() || root.front() != '/') continue;
    std::error_code ec;
    const std::string real_root = std::filesystem::weakly_canonical(root, ec).string();
    for (const auto& r : {root, ec ? root : real_root}) {
      if (path_within(real, r) || path_within(written, r)) {
        which = root;
        return true;
      }
    }
  }
  return false;
}

// The value of one secret into `value`: "" or why not (after "secret NAME: ").
std::string read_value(const EgressSecretSetting& secret,
                       const std::vector<std::string>& agent_paths,
                       const std::map<std::string, std::string>& server_env, std::string& value) {
  const std::string source = secret.from.describe();
  if (secret.from.kind == EgressSecretSource::Kind::kEnv) {
    const auto it = server_env.find(secret.from.text);
    if (it == server_env.end()) return source + " is not set in the server's environment";
    value = it->second;
    return {};
  }
  std::string real;
  if (auto why = read_file(secret.from.text, kMaxValueFile, value, &real); !why.empty())
    return source + ": " +
           (why.starts_with("larger than ") ? "larger than 8 KiB, the most a secret's value may be"
                                            : why);
  std::string root;
  if (inside_agent_paths(real, secret.from.text, agent_paths, root)) {
    cleanse(value);
    return source + ": it lies inside '" + root +
           "', which the agent's sandbox can see: keep a secret's file outside every path the "
           "agent is given";
  }
  // One trailing newline (an editor's, echo's) is not part of the value.
  if (value.ends_with('\n')) value.pop_back();
  if (value.ends_with('\r')) value.pop_back();
  return {};
}

}  // namespace

void cleanse(std::string& text) noexcept {
  if (!text.empty()) OPENSSL_cleanse(text.data(), text.size());
  text.clear();
}

egress_secrets::RandomBytes openssl_random_bytes() {
  return [](unsigned char* out, std::size_t size) {
    while (size > 0) {
      const int chunk = static_cast<int>(std::min<std::size_t>(size, INT_MAX));
      if (RAND_bytes(out, chunk) != 1) {
        ERR_clear_error();
        throw std::runtime_error("OpenSSL's random generator failed");
      }
      out += chunk;
      size -= static_cast<std::size_t>(chunk);
    }
  };
}

AgentSecrets::~AgentSecrets() {
  wipe();
}

AgentSecrets::AgentSecrets(AgentSecrets&& other) noexcept : bundle_(std::move(other.bundle_)) {
  other.wipe();
}

AgentSecrets& AgentSecrets::operator=(AgentSecrets&& other) noexcept {
  if (this != &other) {
    wipe();
    bundle_ = std::move(other.bundle_);
    other.wipe();
  }
  return *this;
}

void AgentSecrets::wipe() noexcept {
  for (auto& secret : bundle_.secrets) cleanse(secret.value);
  for (auto& leaf : bundle_.leaves) cleanse(leaf.key_pem);
  bundle_ = {};
}

std::vector<std::string> AgentSecrets::placeholder_env() const {
  std::vector<std::string> env;
  for (const auto& secret : bundle_.secrets) env.push_back(secret.name + "=" + secret.placeholder);
  return env;
}

std::vector<std::string> AgentSecrets::hosts() const {
  std::vector<std::string> hosts;
  for (const auto& secret : bundle_.secrets)
    for (const auto& host : secret.hosts)
      if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
  return hosts;
}

std::string resolve_secret_values(const EgressPolicy& policy,
                                  const std::vector<std::string>& agent_paths,
                                  const std::map<std::string, std::string>& server_env,
                                  const egress_secrets::RandomBytes& random, AgentSecrets& out) {
  AgentSecrets made;
  for (const auto& setting : policy.secrets) {
    const std::string what = "secret " + setting.name + ": ";
    egress_secrets::SecretRule rule;
    rule.name = setting.name;
    rule.hosts = setting.hosts;
    rule.header = setting.header;
    rule.methods = setting.methods;
    rule.paths = setting.paths;
    rule.plain_http = setting.plain_http;
    // Pushed first, so that `made` wipes the value whatever happens next.
    made.bundle().secrets.push_back(std::move(rule));
    std::string& value = made.bundle().secrets.back().value;
    if (auto why = read_value(setting, agent_paths, server_env, value); !why.empty())
      return what + why;
    if (auto problem = egress_secrets::placeholder_problem(value))
      return what + setting.from.describe() + ": " + *problem;
    try {
      made.bundle().secrets.back().placeholder = egress_secrets::make_placeholder(value, random);
    } catch (const std::exception& e) {
      return what + "no placeholder could be made: " + e.what();
    }
  }
  out = std::move(made);
  return {};
}

std::string read_upstream_ca(const std::string& path, std::string& pem) {
  pem.clear();
  const std::string what = "egress.upstream_ca '" + path + "': ";
  std::string text;
  if (auto why = read_file(path, kMaxUpstreamCa, text); !why.empty()) return what + why;
  // Every certificate OpenSSL reads from it; at least one, and nothing it cannot read.
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(text.data(), static_cast<int>(text.size())), &BIO_free);
  if (!bio) return what + "out of memory";
  int count = 0;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    X509_free(cert);
    ++count;
  }
  const unsigned long last = ERR_peek_last_error();
  ERR_clear_error();
  const bool clean_end =
      ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE;
  if (count == 0) return what + "holds no PEM certificate (-----BEGIN CERTIFICATE-----)";
  if (last != 0 && !clean_end) return what + "a certificate in it cannot be read";
  pem = std::move(text);
  return {};
}

}  // namespace execmcp::plugins::docker_common
