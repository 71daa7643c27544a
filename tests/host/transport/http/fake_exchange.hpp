// An HttpExchange that records what the endpoint answers, for the HttpEndpoint tests (no sockets).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "transport/http/http_exchange.hpp"

namespace execmcp::host::testing {

using namespace std::chrono_literals;
inline constexpr auto kWait = 10s;

class FakeExchange final : public http::HttpExchange {
 public:
  void respond(int status, http::Headers headers, std::string body) override {
    std::lock_guard lock(mutex_);
    if (done_) return;
    status_ = status;
    headers_ = std::move(headers);
    body_ = std::move(body);
    done_ = true;
    cv_.notify_all();
  }
  void start_stream(http::Headers headers) override {
    std::lock_guard lock(mutex_);
    streaming_ = true;
    status_ = 200;
    headers_ = std::move(headers);
  }
  void send_event(std::string data, bool) override {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(data));
  }
  void end_stream() override {
    std::lock_guard lock(mutex_);
    done_ = true;
    cv_.notify_all();
  }
  void on_peer_gone(std::function<void()> callback) override {
    std::lock_guard lock(mutex_);
    gone_callback_ = std::move(callback);
  }
  [[nodiscard]] bool peer_gone() const override { return gone_; }

  // The client closes its end.
  void go_away() {
    std::function<void()> callback;
    {
      std::lock_guard lock(mutex_);
      gone_ = true;
      callback = gone_callback_;
    }
    if (callback) callback();
  }
  bool wait(std::chrono::milliseconds timeout = kWait) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [this] { return done_; });
  }
  int status() {
    std::lock_guard lock(mutex_);
    return status_;
  }
  nlohmann::json body() {
    std::lock_guard lock(mutex_);
    return body_.empty() ? nlohmann::json() : nlohmann::json::parse(body_);
  }
  std::string raw_body() {
    std::lock_guard lock(mutex_);
    return body_;
  }
  std::string header(const std::string& name) {
    std::lock_guard lock(mutex_);
    for (const auto& [key, value] : headers_)
      if (key == name) return value;
    return {};
  }
  std::vector<nlohmann::json> events() {
    std::lock_guard lock(mutex_);
    std::vector<nlohmann::json> out;
    for (const auto& event : events_) out.push_back(nlohmann::json::parse(event));
    return out;
  }
  bool streaming() {
    std::lock_guard lock(mutex_);
    return streaming_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  int status_ = 0;
  http::Headers headers_;
  std::string body_;
  std::vector<std::string> events_;
  bool streaming_ = false;
  bool done_ = false;
  std::atomic<bool> gone_{false};
  std::function<void()> gone_callback_;
};

}  // namespace execmcp::host::testing
