// At most `burst` records per window, then a count (see log_throttle.hpp).
#include "auth/log_throttle.hpp"

#include <spdlog/spdlog.h>

namespace execmcp::host::auth {

LogThrottle::LogThrottle(std::string what, std::size_t burst, std::chrono::seconds window, Now now)
    : what_(std::move(what)),
      burst_(burst),
      window_(window),
      now_(now ? std::move(now) : Now([] { return std::chrono::steady_clock::now(); })) {
  window_start_ = now_();
}

bool LogThrottle::admit() {
  std::uint64_t report = 0;
  std::chrono::seconds seconds{};
  bool admitted = false;
  {
    std::lock_guard lock(mutex_);
    const auto now = now_();
    if (now - window_start_ >= window_) {
      report = left_out_;
      seconds = std::chrono::duration_cast<std::chrono::seconds>(now - window_start_);
      window_start_ = now;
      logged_ = 0;
      left_out_ = 0;
    }
    if (logged_ < burst_) {
      ++logged_;
      admitted = true;
    } else {
      ++left_out_;
    }
  }
  if (report > 0) {
    spdlog::warn("{} more {} were not logged in the last {} s (at most {} are logged per {} s)",
                 report, what_, seconds.count(), burst_, window_.count());
  }
  return admitted;
}

std::uint64_t LogThrottle::left_out() const {
  std::lock_guard lock(mutex_);
  return left_out_;
}

}  // namespace execmcp::host::auth
