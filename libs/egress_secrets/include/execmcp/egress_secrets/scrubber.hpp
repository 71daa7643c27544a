// Takes secrets' values out of what an intercepted host answers, so an echo reaches the sandbox
// with the placeholder in their place. Knows the raw value and its base64 (standard and URL-safe,
// at each of the three alignments), percent-encoded and JSON-escaped forms; every replacement has
// the length of what it replaces, so Content-Length stays valid.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "execmcp/egress_secrets/secret_rule.hpp"

namespace execmcp::egress_secrets {

class Scrubber {
 public:
  explicit Scrubber(const std::vector<SecretRule>& secrets);

  // Streaming: returns what may be sent on (it holds back at most longest_pattern() - 1 bytes).
  // feed() of any split of a text followed by finish() equals scrub(text).
  [[nodiscard]] std::string feed(std::string_view chunk);
  [[nodiscard]] std::string finish();

  // One whole text at once (header values).
  [[nodiscard]] std::string scrub(std::string_view text);

  [[nodiscard]] std::size_t replacements() const noexcept { return replacements_; }
  [[nodiscard]] std::size_t longest_pattern() const noexcept { return longest_; }

 private:
  struct Pattern {
    std::string from;
    std::string to;
  };
  std::vector<Pattern> patterns_;
  std::string tail_;
  std::size_t longest_ = 0;
  std::size_t replacements_ = 0;
};

// Inflates a gzip or zlib/deflate body (Content-Encoding gzip, x-gzip, deflate) in a stream, so
// it can be scrubbed; output per call and in total is bounded by `limit` (throws beyond it).
class Inflater {
 public:
  explicit Inflater(std::size_t limit = std::size_t{1} << 30);
  ~Inflater();
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  [[nodiscard]] std::string feed(std::string_view compressed);  // throws std::runtime_error
  [[nodiscard]] bool done() const noexcept;

 private:
  struct State;
  State* state_;
};

}  // namespace execmcp::egress_secrets
