// See egress_secret_delivery.hpp.
#include "docker_common/parts/egress_secret_delivery.hpp"

#include <openssl/crypto.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "docker_common/engine/tar_archive.hpp"
#include "docker_common/lifecycle/container_spec.hpp"
#include "docker_common/log_text.hpp"
#include "execmcp/egress_secrets/secret_bundle.hpp"
#include "supervision/program_path.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using Kind = EngineError::Kind;
using Clock = std::chrono::steady_clock;

// What --receive prints (one short line); more is cut.
constexpr std::size_t kAnswerMax = 4096;

// The serialized bundle holds the values: wiped when it goes.
class WipedText {
 public:
  explicit WipedText(std::string text) : text_(std::move(text)) {}
  ~WipedText() {
    if (!text_.empty()) OPENSSL_cleanse(text_.data(), text_.size());
  }
  WipedText(const WipedText&) = delete;
  WipedText& operator=(const WipedText&) = delete;
  [[nodiscard]] std::string_view view() const { return text_; }

 private:
  std::string text_;
};

class Answer final : public runner_client::ExecStreamDecoder::Handler {
 public:
  void on_payload(runner_client::ExecStreamDecoder::Stream, std::string_view data) override {
    if (text.size() < kAnswerMax) text.append(data.substr(0, kAnswerMax - text.size()));
  }
  std::string text;
};

struct Attempt {
  std::string error;  // the engine's or the stream's
  std::optional<int> code;
  std::string said;  // what the injector answered
};

Attempt receive_once(Engine& engine, const std::string& proxy, std::string_view bundle,
                     Clock::time_point deadline) {
  Attempt out;
  ExecOptions options;
  options.cmd = {kInjectorPath, "--receive"};
  options.user = kEgressProxyUser;
  options.work_dir = "/";
  options.attach_stdin = true;
  EngineError err;
  auto session = engine.exec(proxy, options, err);
  if (!session) {
    out.error = describe_failure(err, "running the secret injector's receiver");
    return out;
  }
  Answer answer;
  std::string_view left = bundle;
  bool input_open = true;
  while (Clock::now() < deadline) {
    if (input_open) {
      const auto w = session->write_some(left, std::chrono::milliseconds(20));
      left.remove_prefix(w.bytes);
      if (!w.error.empty() || left.empty()) {
        session->close_stdin();
        input_open = false;
      }
    }
    const auto rs = session->read(std::chrono::milliseconds(input_open ? 1 : 50), answer);
    if (!rs.error.empty()) {
      out.error = rs.error;
      break;
    }
    if (rs.eof) break;
  }
  const bool late = Clock::now() >= deadline;
  const auto exit = session->finish(late);
  out.code = exit.code;
  out.said = answer.text;
  if (late && out.error.empty()) out.error = "the injector did not answer in time";
  return out;
}

std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return log_text(text, 512);
}

}  // namespace

std::vector<std::string> injector_entrypoint() {
  return {kInjectorPath, "--serve", "--", kEgressImageEntrypoint};
}

std::string injector_host_path() {
  return plugins::supervision::program_beside_plugin(kInjectorProgram);
}

EngineError copy_injector(Engine& engine, const std::string& proxy, const std::string& program) {
  const auto path = program.empty() ? injector_host_path() : program;
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string bytes = buffer.str();
  if (!in || bytes.empty())
    return EngineError::sentence(Kind::kOther,
                                 std::string("cannot read ") + kInjectorProgram + " at " + path +
                                     " (built and installed beside execmcp-runner) to copy it "
                                     "into the egress proxy");
  return engine.copy_into(proxy, kRunnerDir, single_file_tar(kInjectorProgram, bytes, 0555));
}

std::string deliver_bundle(Engine& engine, const std::string& proxy,
                           const egress_secrets::SecretBundle& bundle) {
  const WipedText text(egress_secrets::serialize_bundle(bundle));
  const auto deadline = Clock::now() + kBundleDeliveryTimeout;
  Attempt last;
  // The injector opens its control socket a moment after the container starts: a refusal to
  // connect is tried again until the deadline.
  while (true) {
    last = receive_once(engine, proxy, text.view(), deadline);
    if (last.error.empty() && last.code == 0) return {};
    if (!last.error.empty() || Clock::now() + std::chrono::milliseconds(100) >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::string why = !last.error.empty() ? last.error : one_line(last.said);
  if (why.empty())
    why = "it exited with " + (last.code ? std::to_string(*last.code) : std::string("no status"));
  return "handing the egress proxy '" + proxy + "' its secrets: " + why;
}

}  // namespace execmcp::plugins::docker_common
