// See placeholder.hpp. Letters and digits are drawn from 62 symbols by rejection sampling (a byte
// below 248 = 4 * 62 is taken modulo 62), so each is uniform.
#include "execmcp/egress_secrets/placeholder.hpp"

#include <array>
#include <stdexcept>
#include <string>
#include <string_view>

namespace execmcp::egress_secrets {
namespace {

constexpr std::size_t kMaxValueBytes = 8 * 1024;
constexpr std::size_t kMinRandomSymbols = 16;

// Public token prefixes kept as they are (they say which service a token is for, not the token).
constexpr std::array<std::string_view, 12> kPublicPrefixes = {
    "github_pat_", "ghp_",  "gho_", "ghs_", "ghu_",  "glpat-",
    "xoxb-",       "xoxp-", "sk-",  "npm_", "pypi-", "hf_"};

constexpr std::string_view kSymbols =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

std::size_t public_prefix_size(std::string_view value) {
  for (const auto prefix : kPublicPrefixes)
    if (value.starts_with(prefix)) return prefix.size();
  return 0;
}

// Draws uniform symbols from `random`, a buffer at a time.
class SymbolSource {
 public:
  explicit SymbolSource(const RandomBytes& random) : random_(random) {}

  char next() {
    while (true) {
      if (at_ == buffer_.size()) {
        random_(buffer_.data(), buffer_.size());
        at_ = 0;
      }
      const unsigned char byte = buffer_[at_++];
      if (byte < 4 * kSymbols.size()) return kSymbols[byte % kSymbols.size()];
    }
  }

 private:
  const RandomBytes& random_;
  std::array<unsigned char, 64> buffer_{};
  std::size_t at_ = buffer_.size();
};

}  // namespace

std::optional<std::string> placeholder_problem(std::string_view value) {
  if (value.empty()) return "the value is empty";
  if (value.size() > kMaxValueBytes) return "the value is longer than 8 KiB";
  if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos)
    return "the value holds a CR, LF or NUL byte";
  std::size_t symbols = 0;
  for (const char c : value.substr(public_prefix_size(value))) symbols += is_alnum(c) ? 1 : 0;
  if (symbols < kMinRandomSymbols)
    return "the value has fewer than 16 letters and digits (beyond a public prefix such as ghp_)";
  return std::nullopt;
}

std::string make_placeholder(std::string_view value, const RandomBytes& random) {
  SymbolSource source(random);
  const std::size_t keep = public_prefix_size(value);
  std::string placeholder(value);
  // With 16 random symbols a draw equals the value with probability 62^-16; a source that keeps
  // doing so is broken, and a value with no letter or digit has no placeholder at all.
  for (int attempt = 0; attempt < 64; ++attempt) {
    for (std::size_t i = keep; i < placeholder.size(); ++i)
      if (is_alnum(value[i])) placeholder[i] = source.next();
    if (placeholder != value) return placeholder;
  }
  throw std::invalid_argument("no placeholder differs from this value (see placeholder_problem)");
}

}  // namespace execmcp::egress_secrets
