// An in-process transport for tests: the test plays the client by pushing lines and reading
// replies.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "transport/stdio/transport.hpp"

namespace execmcp::host::mcp {

class MemoryTransport final : public Transport {
 public:
  // Client side.
  void push_line(std::string line);
  void end_input();  // like EOF on stdin
  // Makes every later write fail, like a client that went away.
  void fail_writes();
  // Makes writes block until resume_writes() or abort_writes(), like a client that stopped
  // reading with its pipe full.
  void stall_writes();
  void resume_writes();

  // Everything the server wrote, in order.
  [[nodiscard]] std::vector<std::string> written() const;
  // Waits until the server has written a message (parsed as JSON) that satisfies `match`.
  std::optional<nlohmann::json> wait_for(const std::function<bool(const nlohmann::json&)>& match,
                                         std::chrono::milliseconds timeout);
  // Waits for the response to request `id`.
  std::optional<nlohmann::json> wait_for_response(const nlohmann::json& id,
                                                  std::chrono::milliseconds timeout);

  // Server side.
  std::optional<std::string> read_line() override;
  bool write_line(std::string_view message) override;
  bool try_write_line(std::string_view message) override;  // false while stalled
  void abort_writes() override;
  void close() override;

 private:
  mutable std::mutex mutex_;
  std::condition_variable input_cv_;
  std::condition_variable output_cv_;
  std::condition_variable stall_cv_;
  std::deque<std::string> input_;
  bool input_ended_ = false;
  bool closed_ = false;
  bool writes_fail_ = false;
  bool writes_stalled_ = false;
  bool writes_aborted_ = false;
  std::vector<std::string> output_;
};

}  // namespace execmcp::host::mcp
