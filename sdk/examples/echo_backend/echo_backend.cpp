// An example executor backend: runs nothing, answers "echo: <command>", keeps files in memory.
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include <execmcp/sdk/sdk.hpp>

namespace echo_example {

class EchoBackend final : public execmcp::sdk::ExecutorBackend {
 public:
  // Settings arrive as JSON text; this backend accepts only an empty object.
  explicit EchoBackend(const execmcp::sdk::BackendInit& init) : cwd_(init.cwd) {
    const auto& s = init.settings_json;
    if (s.find_first_not_of(" \t\r\n{}") != std::string::npos)
      throw std::invalid_argument("the echo backend takes no settings (known: none)");
  }

  std::string start() override { return {}; }
  void stop() noexcept override {}
  void cleanup() noexcept override {
    std::lock_guard lock(mutex_);
    files_.clear();
  }

  execmcp::sdk::ExecResult execute(const execmcp::sdk::ExecRequest& request) override {
    execmcp::sdk::ExecResult result;
    result.exit_code = 0;
    result.stdout_data = "echo: " + request.command + "\n";
    if (result.stdout_data.size() > request.output_cap) {
      result.stdout_data.resize(request.output_cap);
      result.stdout_truncated = true;
    }
    if (request.sink != nullptr)
      request.sink->on_output(execmcp::sdk::StreamKind::Stdout, result.stdout_data);
    return result;
  }

  execmcp::sdk::FileReadResult read_file(const execmcp::sdk::FileReadRequest& request) override {
    execmcp::sdk::FileReadResult result;
    std::lock_guard lock(mutex_);
    auto it = files_.find(key(request.path));
    if (it == files_.end()) {
      result.error = "no such file: " + request.path;
      return result;
    }
    result.data = it->second.substr(0, request.max_bytes);
    result.truncated = it->second.size() > request.max_bytes;
    return result;
  }

  execmcp::sdk::FileWriteResult write_file(const execmcp::sdk::FileWriteRequest& request) override {
    std::lock_guard lock(mutex_);
    files_[key(request.path)] = request.data;
    return {request.data.size(), {}};
  }

  [[nodiscard]] execmcp::sdk::BackendTraits traits() const override { return {}; }

 private:
  std::string key(const std::string& path) const {
    return !path.empty() && path.front() == '/' ? path : cwd_ + "/" + path;
  }

  std::string cwd_;
  std::mutex mutex_;
  std::map<std::string, std::string> files_;
};

}  // namespace echo_example

EXECMCP_BACKEND_PLUGIN(echo_example::EchoBackend, "echo", "0.1.0",
                       "example backend that echoes the command instead of running it")
