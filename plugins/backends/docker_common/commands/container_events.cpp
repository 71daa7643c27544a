// One container's engine events on a thread: lines split and bounded, parsed leniently (Docker's
// shape and Podman's), deaths counted for the commands' StopCheck, the stream opened again with a
// growing pause when it ends or is refused.
#include "docker_common/commands/container_events.hpp"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <utility>

#include <nlohmann/json.hpp>

#include "docker_common/log_text.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using Clock = ContainerEvents::Clock;
using namespace std::chrono_literals;
using nlohmann::json;

// How long one read of the stream waits: stop() returns within about this.
constexpr auto kReadWait = 100ms;
constexpr auto kFirstRetry = 250ms;
constexpr auto kLastRetry = 30s;
// A stream that lived this long was a good one: the next failure starts the pauses afresh.
constexpr auto kHealthyStream = 10s;
// A kill event counts for the die that follows within this (docker stop's default grace is 10 s);
// an oom event for a die this close before or after it.
constexpr auto kKillCounts = 15s;
constexpr auto kOomCounts = 5s;

const json* member(const json& doc, const char* key) {
  const auto it = doc.find(key);
  return it == doc.end() ? nullptr : &*it;
}

std::string string_member(const json& doc, const char* key) {
  const auto* v = member(doc, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

std::optional<int> int_text(const std::string& text) {
  int value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<ContainerEvent> parse_container_event(std::string_view line) {
  const auto doc = json::parse(line, nullptr, false);
  if (!doc.is_object()) return std::nullopt;
  const std::string type = string_member(doc, "Type");
  if (!type.empty() && type != "container") return std::nullopt;
  // Docker: Action ("die", and "exec_die" etc. for other things); Podman: Status ("died").
  std::string action = string_member(doc, "Action");
  if (action.empty()) action = string_member(doc, "Status");
  if (action.empty()) action = string_member(doc, "status");
  ContainerEvent event;
  if (action == "die" || action == "died") {
    event.kind = ContainerEvent::Kind::kDie;
  } else if (action == "kill") {
    event.kind = ContainerEvent::Kind::kKill;
  } else if (action == "oom") {
    event.kind = ContainerEvent::Kind::kOom;
  } else if (action == "stop") {
    event.kind = ContainerEvent::Kind::kStop;
  } else if (action == "destroy" || action == "remove") {
    event.kind = ContainerEvent::Kind::kDestroy;
  } else {
    return std::nullopt;
  }
  if (const auto* actor = member(doc, "Actor"); actor != nullptr && actor->is_object()) {
    if (const auto* attrs = member(*actor, "Attributes"); attrs != nullptr && attrs->is_object()) {
      event.name = string_member(*attrs, "name");
      if (event.kind == ContainerEvent::Kind::kDie)
        event.exit_code = int_text(string_member(*attrs, "exitCode"));
    }
  }
  if (event.name.empty()) event.name = string_member(doc, "Name");
  if (const auto* code = member(doc, "ContainerExitCode");
      event.kind == ContainerEvent::Kind::kDie && !event.exit_code && code != nullptr &&
      code->is_number_integer())
    event.exit_code = code->get<int>();
  return event;
}

ContainerEvents::ContainerEvents(Engine& engine, std::string container, LogFn log)
    : engine_(engine), container_(std::move(container)), log_(std::move(log)) {}

ContainerEvents::~ContainerEvents() {
  stop();
}

void ContainerEvents::start() {
  std::lock_guard lock(thread_mutex_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
}

void ContainerEvents::stop() noexcept {
  std::lock_guard lock(thread_mutex_);
  if (!thread_.joinable()) return;
  {
    std::lock_guard stop_lock(stop_mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
}

ContainerEvents::Mark ContainerEvents::mark() const {
  std::lock_guard lock(mutex_);
  return mark_;
}

ContainerEvents::Mark ContainerEvents::wait_change(const Mark& seen,
                                                   std::chrono::milliseconds wait) const {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, wait, [&] {
    return mark_.live != seen.live || mark_.epoch != seen.epoch || mark_.deaths != seen.deaths;
  });
  return mark_;
}

ContainerEvents::Death ContainerEvents::last_death() const {
  std::lock_guard lock(mutex_);
  return death_;
}

ContainerEvents::Counts ContainerEvents::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

bool ContainerEvents::pause(std::chrono::milliseconds wait) {
  std::unique_lock lock(stop_mutex_);
  return !stop_cv_.wait_for(lock, wait, [this] { return stopping_.load(); });
}

void ContainerEvents::set_live(bool live) {
  std::lock_guard lock(mutex_);
  mark_.live = live;
  if (live) {
    ++mark_.epoch;
    ++counts_.streams;
  } else {
    partial_.clear();  // a new stream starts at a line's start
    skipping_ = false;
  }
  changed_.notify_all();
}

void ContainerEvents::run() {
  auto retry = std::chrono::milliseconds(kFirstRetry);
  std::string failed;  // why the last open failed ("" after a good one): logged once
  while (!stopping_) {
    // From a second back: a death between the last stream's end and this one's start comes as an
    // event too (the StopCheck looks once at a new stream anyway; a replayed one costs a look).
    const auto since = std::to_string(static_cast<long long>(std::time(nullptr)) - 1);
    EngineError error;
    auto stream = engine_.follow_events(container_, since, error);
    const auto opened = Clock::now();
    if (stream) {
      set_live(true);
      if (!failed.empty() && log_)
        log_(sdk::LogLevel::Info,
             "following the engine's events of container " + container_ + " again");
      failed.clear();
      while (!stopping_) {
        std::string chunk;
        const auto status = stream->read(kReadWait, chunk);
        if (!chunk.empty()) take(chunk);
        if (!status.error.empty()) error = EngineError::of(EngineError::Kind::kOther, status.error);
        if (status.eof || !status.error.empty()) break;
      }
      stream.reset();  // a CLI child is ended here
      set_live(false);
      if (stopping_) break;
      if (error.ok()) error = EngineError::of(EngineError::Kind::kOther, "the engine ended it");
    }
    {
      std::lock_guard lock(mutex_);
      ++counts_.failures;
    }
    // Said once per outage: the next failures' words differ only by the `since` in a URL.
    if (failed.empty() && log_)
      log_(sdk::LogLevel::Info,
           log_text(describe_failure(error,
                                     "following the engine's events of container " + container_)) +
               "; until they come, a command asks the engine once a second whether its "
               "container still runs");
    failed = error.message.empty() ? "failed" : error.message;
    if (Clock::now() - opened >= kHealthyStream) retry = kFirstRetry;
    if (!pause(retry)) break;
    retry = std::min<std::chrono::milliseconds>(retry * 2, kLastRetry);
  }
}

std::size_t ContainerEvents::take(std::string_view chunk) {
  std::size_t taken = 0;
  std::lock_guard lock(mutex_);
  while (!chunk.empty()) {
    const auto end = chunk.find('\n');
    const auto piece = chunk.substr(0, end);
    if (!skipping_ && partial_.size() + piece.size() <= kEventLineMax) {
      partial_.append(piece);
    } else if (!skipping_) {
      skipping_ = true;
      partial_.clear();
      ++counts_.oversized;
    }
    if (end == std::string_view::npos) break;
    if (!skipping_ && !partial_.empty()) {
      const auto before = counts_.events;
      take_line(partial_);
      taken += counts_.events - before;
    }
    partial_.clear();
    skipping_ = false;
    chunk.remove_prefix(end + 1);
  }
  if (taken > 0) changed_.notify_all();
  return taken;
}

void ContainerEvents::take_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  if (line.empty()) return;
  const auto event = parse_container_event(line);
  if (!event) {
    ++counts_.malformed;
    return;
  }
  // The engine's container filter matches names by prefix: execmcp-a-t1 is asked, execmcp-a-t12
  // comes too.
  if (!event->name.empty() && event->name != container_) {
    ++counts_.others;
    return;
  }
  ++counts_.events;
  const auto now = Clock::now();
  switch (event->kind) {
    case ContainerEvent::Kind::kKill:
      last_kill_ = now;
      break;
    case ContainerEvent::Kind::kOom:
      last_oom_ = now;
      // The engine may learn of the OOM after the exit it already reported.
      if (death_.seq != 0 && now - death_.at <= kOomCounts) death_.oom = true;
      break;
    case ContainerEvent::Kind::kDie:
      ++mark_.deaths;
      death_.seq = mark_.deaths;
      death_.exit_code = event->exit_code;
      death_.at = now;
      death_.oom = last_oom_ != Clock::time_point{} && now - last_oom_ <= kOomCounts;
      death_.killed = last_kill_ != Clock::time_point{} && now - last_kill_ <= kKillCounts;
      last_kill_ = last_oom_ = Clock::time_point{};
      break;
    case ContainerEvent::Kind::kStop:
    case ContainerEvent::Kind::kDestroy:
      ++mark_.deaths;
      break;
  }
}

}  // namespace execmcp::plugins::docker_common
