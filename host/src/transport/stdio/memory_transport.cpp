// In-process transport used by the MCP tests (see memory_transport.hpp).
#include "transport/stdio/memory_transport.hpp"

namespace execmcp::host::mcp {

void MemoryTransport::push_line(std::string line) {
  {
    std::lock_guard lock(mutex_);
    input_.push_back(std::move(line));
  }
  input_cv_.notify_all();
}

void MemoryTransport::end_input() {
  {
    std::lock_guard lock(mutex_);
    input_ended_ = true;
  }
  input_cv_.notify_all();
}

void MemoryTransport::fail_writes() {
  std::lock_guard lock(mutex_);
  writes_fail_ = true;
}

void MemoryTransport::stall_writes() {
  std::lock_guard lock(mutex_);
  writes_stalled_ = true;
}

void MemoryTransport::resume_writes() {
  {
    std::lock_guard lock(mutex_);
    writes_stalled_ = false;
  }
  stall_cv_.notify_all();
}

void MemoryTransport::abort_writes() {
  {
    std::lock_guard lock(mutex_);
    writes_aborted_ = true;
  }
  stall_cv_.notify_all();
}

std::vector<std::string> MemoryTransport::written() const {
  std::lock_guard lock(mutex_);
  return output_;
}

std::optional<nlohmann::json> MemoryTransport::wait_for(
    const std::function<bool(const nlohmann::json&)>& match, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  std::size_t checked = 0;
  std::optional<nlohmann::json> found;
  output_cv_.wait_for(lock, timeout, [&] {
    for (; checked < output_.size(); ++checked) {
      auto message = nlohmann::json::parse(output_[checked], nullptr, false);
      if (!message.is_discarded() && match(message)) {
        found = std::move(message);
        return true;
      }
    }
    return false;
  });
  return found;
}

std::optional<nlohmann::json> MemoryTransport::wait_for_response(
    const nlohmann::json& id, std::chrono::milliseconds timeout) {
  return wait_for(
      [&](const nlohmann::json& m) {
        return m.contains("id") && m["id"] == id && (m.contains("result") || m.contains("error"));
      },
      timeout);
}

std::optional<std::string> MemoryTransport::read_line() {
  std::unique_lock lock(mutex_);
  input_cv_.wait(lock, [&] { return closed_ || input_ended_ || !input_.empty(); });
  if (closed_ || input_.empty()) return std::nullopt;
  std::string line = std::move(input_.front());
  input_.pop_front();
  return line;
}

bool MemoryTransport::write_line(std::string_view message) {
  {
    std::unique_lock lock(mutex_);
    stall_cv_.wait(lock, [&] { return !writes_stalled_ || writes_aborted_; });
    if (writes_fail_ || writes_aborted_) return false;
    output_.emplace_back(message);
  }
  output_cv_.notify_all();
  return true;
}

bool MemoryTransport::try_write_line(std::string_view message) {
  {
    std::lock_guard lock(mutex_);
    if (writes_stalled_ || writes_fail_ || writes_aborted_) return false;
    output_.emplace_back(message);
  }
  output_cv_.notify_all();
  return true;
}

void MemoryTransport::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  input_cv_.notify_all();
}

}  // namespace execmcp::host::mcp
