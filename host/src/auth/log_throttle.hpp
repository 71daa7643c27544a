// A budget for log records that a peer without credentials can cause (a refused request is one
// record): at most `burst` records per window, then one line saying how many were left out, so a
// stranger's flood costs the log a bounded number of bytes per minute whatever its rate.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace execmcp::host::auth {

class LogThrottle {
 public:
  using Now = std::function<std::chrono::steady_clock::time_point()>;

  LogThrottle(std::string what, std::size_t burst, std::chrono::seconds window, Now now = {});

  // True when this record may be logged. When a window in which records were left out is over,
  // the first call after it logs one warning naming how many (`what`, e.g. "refused requests").
  [[nodiscard]] bool admit();

  // Records left out in the current window so far (for tests).
  [[nodiscard]] std::uint64_t left_out() const;

 private:
  const std::string what_;
  const std::size_t burst_;
  const std::chrono::seconds window_;
  const Now now_;
  mutable std::mutex mutex_;
  std::chrono::steady_clock::time_point window_start_{};
  std::size_t logged_ = 0;
  std::uint64_t left_out_ = 0;
};

}  // namespace execmcp::host::auth
