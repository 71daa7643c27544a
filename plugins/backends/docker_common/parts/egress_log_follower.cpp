// The egress proxy's log followed on a thread: lines split and bounded, replays after a
// reconnection skipped, refusals delivered to the host's sink within a budget (repeats and the
// excess summed up once a minute) and kept for the notice of the command that ran while they
// happened.
#include "docker_common/parts/egress_log_follower.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <ctime>
#include <utility>
#include <vector>

#include "docker_common/log_text.hpp"
#include "execmcp/egress_secrets/event_line.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using Clock = EgressLogFollower::Clock;
using namespace std::chrono_literals;

// How long one read of the stream waits: stop() returns within about this.
constexpr auto kReadWait = 100ms;
constexpr auto kFirstRetry = 100ms;
constexpr auto kLastRetry = 2s;
// A DNS name is at most 253 bytes; a method a few.
constexpr std::size_t kHostMax = 255;
constexpr std::size_t kMethodMax = 32;
constexpr std::size_t kSecretNameMax = 128;
constexpr std::size_t kSecretPathMax = 256;
constexpr std::size_t kSecretDetailMax = 512;

bool digits(std::string_view text, std::size_t at, std::size_t n, int& out) {
  if (at + n > text.size()) return false;
  const auto [ptr, ec] = std::from_chars(text.data() + at, text.data() + at + n, out);
  return ec == std::errc() && ptr == text.data() + at + n;
}

}  // namespace

bool parse_log_time(std::string_view text, std::int64_t& sec, std::int64_t& nsec) {
  // 2026-11-26T10:16:56[.fraction](Z|+hh:mm|-hh:mm)
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!digits(text, 0, 4, year) || text.size() < 20 || text[4] != '-' ||
      !digits(text, 5, 2, month) || text[7] != '-' || !digits(text, 8, 2, day) || text[10] != 'T' ||
      !digits(text, 11, 2, hour) || text[13] != ':' || !digits(text, 14, 2, minute) ||
      text[16] != ':' || !digits(text, 17, 2, second))
    return false;
  std::size_t at = 19;
  nsec = 0;
  if (text[at] == '.') {
    std::int64_t scale = 100000000;
    for (++at; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at) {
      nsec += (text[at] - '0') * scale;
      scale /= 10;
    }
  }
  int offset = 0;
  if (at < text.size() && text[at] == 'Z') {
    ++at;
  } else if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
    int oh = 0, om = 0;
    if (!digits(text, at + 1, 2, oh) || at + 3 >= text.size() || text[at + 3] != ':' ||
        !digits(text, at + 4, 2, om))
      return false;
    offset = (text[at] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    at += 6;
  } else {
    return false;
  }
  if (at != text.size()) return false;
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  sec = static_cast<std::int64_t>(::timegm(&tm)) - offset;
  return true;
}

EgressLogFollower::EgressLogFollower(Engine& engine, std::string proxy, const EgressPolicy& policy,
                                     sdk::LogSink* log, ClockFn clock)
    : engine_(engine),
      proxy_(std::move(proxy)),
      log_(log),
      clock_(clock ? std::move(clock) : ClockFn([] { return Clock::now(); })),
      notices_(policy) {}

EgressLogFollower::~EgressLogFollower() {
  stop();
}

void EgressLogFollower::start() {
  std::lock_guard lock(thread_mutex_);
  if (thread_.joinable()) return;
  stop_.requested = false;
  thread_ = std::thread([this] { run(); });
}

void EgressLogFollower::stop() noexcept {
  std::lock_guard lock(thread_mutex_);
  if (thread_.joinable()) {
    {
      std::lock_guard stop_lock(stop_.mutex);
      stop_.requested = true;
    }
    stop_.cv.notify_all();
    thread_.join();
  }
  // What was held back is reported now: the agent may never start again.
  std::optional<sdk::NetworkEvent> last;
  {
    std::lock_guard state(mutex_);
    streaming_ = false;
    activity_.notify_all();
    last = budget_.summary(clock_(), true, counts_);
  }
  if (last) deliver(*last);
}

bool EgressLogFollower::running() const {
  std::lock_guard lock(thread_mutex_);
  return thread_.joinable() && !stop_.requested.load();
}

bool EgressLogFollower::pause(std::chrono::milliseconds wait) {
  std::unique_lock lock(stop_.mutex);
  return !stop_.cv.wait_for(lock, wait, [this] { return stop_.requested.load(); });
}

void EgressLogFollower::run() {
  auto retry = kFirstRetry;
  std::string failed;  // the last failure logged, so a proxy that stays down is logged once
  while (!stop_.requested) {
    EngineError error;
    auto stream = engine_.follow_logs(proxy_, since(), error);
    std::size_t fresh = 0;
    if (stream) {
      {
        std::lock_guard lock(mutex_);
        streaming_ = true;
      }
      while (!stop_.requested) {
        std::string chunk;
        const auto status = stream->read(kReadWait, chunk);
        if (!chunk.empty()) fresh += take(chunk);
        tick();
        if (!status.error.empty()) error = EngineError::of(EngineError::Kind::kOther, status.error);
        if (status.eof || !status.error.empty()) break;
      }
      stream.reset();
      std::lock_guard lock(mutex_);
      streaming_ = false;
      lines_.restart_line();
      activity_.notify_all();
    }
    if (!error.ok()) {
      auto why = describe_failure(error, "following the log of egress proxy " + proxy_);
      if (why != failed) log(sdk::LogLevel::Debug, log_text(why));
      failed = std::move(why);
    }
    retry = fresh > 0 ? kFirstRetry : std::min<std::chrono::milliseconds>(retry * 2, kLastRetry);
    if (!pause(retry)) break;
  }
}

std::size_t EgressLogFollower::take(std::string_view chunk) {
  std::vector<std::string> lines;
  {
    std::lock_guard lock(mutex_);
    last_bytes_ = Clock::now();
    counts_.dropped_lines += lines_.split(chunk, lines);
  }
  std::size_t fresh = 0;
  for (const auto& line : lines) {
    const auto space = line.find(' ');
    std::int64_t sec = 0, nsec = 0;
    if (space == std::string::npos || !parse_log_time(line.substr(0, space), sec, nsec)) continue;
    {
      std::lock_guard lock(mutex_);
      if (!lines_.take_time(sec, nsec)) continue;  // replayed
    }
    ++fresh;
    const auto text = std::string_view(line).substr(space + 1);
    const auto unix_ms = sec * 1000 + nsec / 1000000;
    if (secret_line(text, unix_ms)) continue;
    const auto record = parse_egress_log_line(text);
    if (record && record->refused) refused(*record, unix_ms);
  }
  std::lock_guard lock(mutex_);
  activity_.notify_all();
  return fresh;
}

void EgressLogFollower::refused(const EgressLogRecord& record, std::int64_t unix_ms) {
  sdk::NetworkEvent event;
  event.host = log_text(record.host, kHostMax);
  event.port = record.port;
  event.method = log_text(record.method, kMethodMax);
  event.refused = true;
  event.reason = kEgressRefusalReason;
  event.unix_ms = unix_ms;
  std::optional<sdk::NetworkEvent> due;
  bool now_too = false;
  {
    std::lock_guard lock(mutex_);
    ++counts_.refusals;
    notices_.add(event.host + ":" + std::to_string(event.port));
    const auto now = clock_();
    now_too = budget_.admit(event, now, counts_);
    due = budget_.summary(now, false, counts_);
  }
  // The summary first: it covers refusals before this one.
  if (due) deliver(*due);
  if (now_too) deliver(event);
}

bool EgressLogFollower::secret_line(std::string_view line, std::int64_t unix_ms) {
  const auto parsed = egress_secrets::parse_event_line(line);
  if (!parsed) return false;
  using Kind = egress_secrets::SecretEvent::Kind;
  sdk::SecretEvent event;
  switch (parsed->kind) {
    case Kind::kInjected:
      event.kind = sdk::SecretEvent::Kind::kInjected;
      break;
    case Kind::kWithheld:
      event.kind = sdk::SecretEvent::Kind::kWithheld;
      break;
    case Kind::kScrubbed:
      event.kind = sdk::SecretEvent::Kind::kScrubbed;
      break;
    case Kind::kRefused:
      event.kind = sdk::SecretEvent::Kind::kRefused;
      break;
  }
  // The injector escaped them; the request's parts came from the sandbox: bounded here again.
  event.secret = log_text(parsed->secret, kSecretNameMax);
  event.host = log_text(parsed->host, kHostMax);
  event.method = log_text(parsed->method, kMethodMax);
  event.path = log_text(parsed->path, kSecretPathMax);
  event.detail = log_text(parsed->detail, kSecretDetailMax);
  event.unix_ms = unix_ms;
  bool admitted = false;
  {
    std::lock_guard lock(mutex_);
    ++counts_.secret_events;
    admitted = secret_budget_.admit(event, clock_());
  }
  if (admitted) {
    std::lock_guard lock(sink_mutex_);
    if (secret_sink_ != nullptr) secret_sink_->on_secret_event(event);
  }
  return true;
}

void EgressLogFollower::tick() {
  std::optional<sdk::NetworkEvent> due;
  {
    std::lock_guard lock(mutex_);
    due = budget_.summary(clock_(), false, counts_);
  }
  if (due) deliver(*due);
}

void EgressLogFollower::deliver(const sdk::NetworkEvent& event) {
  std::lock_guard lock(sink_mutex_);
  if (sink_ != nullptr) sink_->on_network_event(event);
}

void EgressLogFollower::subscribe(sdk::NetworkEventSink* sink) noexcept {
  std::lock_guard lock(sink_mutex_);
  sink_ = sink;
}

void EgressLogFollower::subscribe_secrets(sdk::SecretEventSink* sink) noexcept {
  std::lock_guard lock(sink_mutex_);
  secret_sink_ = sink;
}

std::uint64_t EgressLogFollower::mark() const {
  std::lock_guard lock(mutex_);
  return notices_.mark();
}

std::string EgressLogFollower::notice(std::uint64_t mark, std::chrono::milliseconds quiet) {
  std::unique_lock lock(mutex_);
  const auto called = Clock::now();
  const auto give_up = called + 8 * quiet;
  while (streaming_) {
    const auto settled = std::max(called, last_bytes_) + quiet;
    const auto now = Clock::now();
    if (now >= settled || now >= give_up) break;
    activity_.wait_until(lock, std::min(settled, give_up));
  }
  return notices_.notice(mark);
}

std::string EgressLogFollower::since() const {
  std::lock_guard lock(mutex_);
  return lines_.since();
}

std::uint64_t TimedLogLines::split(std::string_view chunk, std::vector<std::string>& lines) {
  std::uint64_t dropped = 0;
  while (!chunk.empty()) {
    const auto end = chunk.find('\n');
    const auto piece = chunk.substr(0, end);
    if (!skipping_ && partial_.size() + piece.size() <= kEgressLogLineMax) {
      partial_.append(piece);
    } else if (!skipping_) {
      skipping_ = true;
      partial_.clear();
      ++dropped;
    }
    if (end == std::string_view::npos) break;
    if (!skipping_) lines.push_back(std::move(partial_));
    partial_.clear();
    skipping_ = false;
    chunk.remove_prefix(end + 1);
  }
  return dropped;
}

bool TimedLogLines::take_time(std::int64_t sec, std::int64_t nsec) {
  if (sec < last_sec_ || (sec == last_sec_ && nsec <= last_nsec_)) return false;
  last_sec_ = sec;
  last_nsec_ = nsec;
  return true;
}

void TimedLogLines::restart_line() {
  partial_.clear();
  skipping_ = false;
}

std::string TimedLogLines::since() const {
  // Whole seconds (what the socket proxy lets through); the lines of that second seen already are
  // skipped by their times.
  if (last_nsec_ < 0) return {};
  return std::to_string(last_sec_);
}

EgressLogFollower::Counts EgressLogFollower::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

void EgressLogFollower::log(sdk::LogLevel level, const std::string& message) const {
  if (log_ != nullptr) log_->log(level, message);
}

}  // namespace execmcp::plugins::docker_common
