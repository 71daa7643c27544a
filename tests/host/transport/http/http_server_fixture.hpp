// What the HTTP server tests share: a handler that holds its exchanges for the test to answer, an
// echo handler, a one-shot signal and a polling wait.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "transport/http/http_server.hpp"

namespace execmcp::host::http::testing_support {

using namespace std::chrono_literals;

// Keeps every request and exchange the handler got, for the test thread to answer later.
class HeldExchanges {
 public:
  HttpHandler handler() {
    return [this](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
      std::lock_guard lock(mutex_);
      requests_.push_back(std::move(request));
      exchanges_.push_back(std::move(exchange));
      changed_.notify_all();
    };
  }
  // The index-th exchange, waiting up to 10 s for it.
  std::shared_ptr<HttpExchange> wait(std::size_t index) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, 10s, [&] { return exchanges_.size() > index; });
    return exchanges_.size() > index ? exchanges_[index] : nullptr;
  }
  HttpRequest request(std::size_t index) {
    std::lock_guard lock(mutex_);
    return requests_.at(index);
  }
  std::size_t count() {
    std::lock_guard lock(mutex_);
    return exchanges_.size();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<HttpRequest> requests_;
  std::vector<std::shared_ptr<HttpExchange>> exchanges_;
};

// Answers "<method> <target> <body>" at once.
inline HttpHandler echo_handler() {
  return [](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    exchange->respond(200, {{"Content-Type", "text/plain"}},
                      request.method + " " + request.target + " " + request.body);
  };
}

// A one-shot flag a callback sets and a test waits for.
class Signal {
 public:
  void set() {
    std::lock_guard lock(mutex_);
    set_ = true;
    changed_.notify_all();
  }
  bool wait_for(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return set_; });
  }
  bool is_set() {
    std::lock_guard lock(mutex_);
    return set_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool set_ = false;
};

// Polls `condition` for up to 10 s.
template <typename Condition>
bool eventually(Condition condition) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

}  // namespace execmcp::host::http::testing_support
