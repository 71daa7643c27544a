// Runs the conformance kit's background cases against a backend that does not offer
// execmcp.background/1: each must be skipped (CMake checks the summary), none failed.
#include <memory>
#include <string>

#include "execmcp/conformance/backend_conformance.hpp"

namespace {

namespace sdk = execmcp::sdk;

// Runs nothing and offers no optional interface (query_interface() keeps the SDK's default).
class NoCapabilityBackend final : public sdk::ExecutorBackend {
 public:
  std::string start() override { return ""; }
  void stop() noexcept override {}
  void cleanup() noexcept override {}
  sdk::ExecResult execute(const sdk::ExecRequest&) override {
    sdk::ExecResult result;
    result.error = "this test backend runs nothing";
    return result;
  }
  sdk::FileReadResult read_file(const sdk::FileReadRequest&) override {
    sdk::FileReadResult result;
    result.error = "this test backend has no files";
    return result;
  }
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest&) override {
    sdk::FileWriteResult result;
    result.error = "this test backend has no files";
    return result;
  }
  [[nodiscard]] sdk::BackendTraits traits() const override { return {}; }
};

const bool kRegistered = [] {
  execmcp::conformance::BackendUnderTest backend;
  backend.name = "no_background";
  backend.factory = [](const sdk::BackendInit&) -> std::unique_ptr<sdk::ExecutorBackend> {
    return std::make_unique<NoCapabilityBackend>();
  };
  return execmcp::conformance::register_backend(std::move(backend));
}();

}  // namespace
