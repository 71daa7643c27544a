// libFuzzer target: the runner handshake's parsing (supervision/runner_auth.hpp); a peer on the
// sandbox's network sends anything. The input is cut into a runner hello, a server answer and a
// runner answer; none may crash, and under a fixed key an answer passes only when it is exactly
// the one the key makes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "supervision/runner_auth.hpp"

namespace ra = execmcp::plugins::supervision::runner_auth;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto key = ra::RunnerKey::from_bytes(std::string(ra::kKeySize, '\x42'));
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::string_view hello = in.substr(0, ra::kRunnerHelloSize);
  const std::string_view rest = in.substr(hello.size());
  const std::string_view answer = rest.substr(0, ra::kServerAnswerSize);
  const std::string_view reply = rest.substr(answer.size());

  ra::HelloError error = ra::HelloError::kNone;
  const auto nonce_r = ra::parse_runner_hello(hello, error);
  if (nonce_r) {
    if (error != ra::HelloError::kNone || ra::runner_hello(*nonce_r) != hello) std::abort();
  } else if (error == ra::HelloError::kNone) {
    std::abort();
  }
  ra::Nonce r{};
  if (nonce_r) r = *nonce_r;
  if (const auto nonce_s = ra::check_server_answer(*key, r, answer)) {
    if (ra::server_answer(*key, r, *nonce_s) != answer) std::abort();
    if (ra::check_runner_answer(*key, *nonce_s, r, reply) !=
        (ra::runner_answer(*key, *nonce_s, r) == reply))
      std::abort();
  }
  return 0;
}
