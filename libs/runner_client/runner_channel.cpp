// See runner_channel.hpp. One thread per channel does all of its I/O with poll(): it writes the
// queued frames, reads the exec stream, takes Docker's stream multiplexing off it if it has one
// (the runner's stdout carries the frames, its stderr its diagnostics), reads the diagnostics fd
// if there is one, and hands each frame to its call.
#include "runner_client/runner_channel.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "execmcp/sdk/log_text.hpp"
#include "runner_client/exec_stream_decoder.hpp"

namespace execmcp::plugins::runner_client {

namespace rp = supervision::runner;

namespace {

// Reports and notices from the container are shown to the user: bounded.
constexpr std::size_t kMaxReportText = 8192;
constexpr std::size_t kMaxNotices = 16;

void bound(std::string& s) {
  if (s.size() > kMaxReportText) s.resize(kMaxReportText);
}

}  // namespace

bool RunnerCall::wait(std::chrono::milliseconds wait, std::vector<Chunk>& chunks) {
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, wait, [&] { return over_ || !chunks_.empty(); });
  while (!chunks_.empty()) {
    chunks.push_back(std::move(chunks_.front()));
    chunks_.pop_front();
  }
  return over_;
}

long RunnerCall::wait_pid(std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, wait, [&] { return over_ || pid_ != 0; });
  return pid_;
}

bool RunnerCall::claim_end() {
  std::lock_guard lock(mutex_);
  if (over_) return false;
  over_ = true;
  return true;
}

ChannelEnds ChannelEnds::docker_multiplexed(int socket, std::string leftover) {
  ChannelEnds ends;
  ends.framing = Framing::kDockerMultiplexed;
  ends.read_fd = socket;
  ends.write_fd = socket;
  ends.leftover = std::move(leftover);
  return ends;
}

ChannelEnds ChannelEnds::raw(int read_fd, int write_fd, int diagnostics_fd) {
  ChannelEnds ends;
  ends.framing = Framing::kRaw;
  ends.read_fd = read_fd;
  ends.write_fd = write_fd;
  ends.diagnostics_fd = diagnostics_fd;
  return ends;
}

RunnerChannel::RunnerChannel(int fd, std::string leftover, Log log)
    : RunnerChannel(ChannelEnds::docker_multiplexed(fd, std::move(leftover)), std::move(log)) {}

RunnerChannel::RunnerChannel(ChannelEnds ends, Log log)
    : ends_(std::move(ends)), log_(std::move(log)) {
  if (ends_.framing == ChannelEnds::Framing::kDockerMultiplexed && ends_.diagnostics_fd >= 0) {
    ::close(ends_.diagnostics_fd);  // Docker's stream carries the runner's stderr itself
    ends_.diagnostics_fd = -1;
  }
  struct stat st {};
  write_is_socket_ = ::fstat(ends_.write_fd, &st) == 0 && S_ISSOCK(st.st_mode);
  // A pipe would block the one I/O thread on a write larger than it holds; a diagnostics pipe is
  // drained without waiting once the runner's output has ended.
  if (ends_.write_fd >= 0 && !write_is_socket_)
    ::fcntl(ends_.write_fd, F_SETFL, ::fcntl(ends_.write_fd, F_GETFL) | O_NONBLOCK);
  if (ends_.diagnostics_fd >= 0)
    ::fcntl(ends_.diagnostics_fd, F_SETFL, ::fcntl(ends_.diagnostics_fd, F_GETFL) | O_NONBLOCK);
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
    failure_ = std::string("cannot create a pipe: ") + std::strerror(errno);
    return;
  }
  wake_r_ = p[0];
  wake_w_ = p[1];
  thread_ = std::thread([this] { io_loop(); });
}

RunnerChannel::~RunnerChannel() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  wake();
  if (thread_.joinable()) thread_.join();
  if (ends_.write_fd == ends_.read_fd) ends_.write_fd = -1;  // one socket both ways
  for (int fd : {ends_.read_fd, ends_.write_fd, ends_.diagnostics_fd, wake_r_, wake_w_})
    if (fd >= 0) ::close(fd);
  ends_.owner.reset();
}

void RunnerChannel::wake() noexcept {
  const char b = 'w';
  if (wake_w_ >= 0) [[maybe_unused]]
    auto n = ::write(wake_w_, &b, 1);
}

std::string RunnerChannel::wait_ready(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!ready_cv_.wait_for(lock, timeout, [&] { return ready_ || !failure_.empty(); }))
    return "execmcp-runner did not answer within " + std::to_string(timeout.count()) + " ms";
  return failure_;
}

bool RunnerChannel::alive() const {
  std::lock_guard lock(mutex_);
  return ready_ && failure_.empty();
}

std::string RunnerChannel::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

std::shared_ptr<RunnerCall> RunnerChannel::start(const rp::RunSpec& spec,
                                                 const std::string* stdin_data, std::string& error,
                                                 std::shared_ptr<RunnerCallObserver> observer) {
  const std::string run = rp::encode_run(spec);
  if (run.size() > rp::kMaxPayload) {
    error = "the command and its environment are longer than the runner accepts (" +
            std::to_string(rp::kMaxPayload) + " bytes)";
    return nullptr;
  }
  return send_call(rp::FrameType::kRun, run, stdin_data, spec.output_cap, error,
                   std::move(observer));
}

std::shared_ptr<RunnerCall> RunnerChannel::start_file(const rp::FileRequest& request,
                                                      const std::string* input, std::size_t cap,
                                                      std::string& error) {
  const std::string file = rp::encode_file(request);
  if (file.size() > rp::kMaxPayload) {
    error = "the path is longer than the runner accepts (" + std::to_string(rp::kMaxPayload) +
            " bytes)";
    return nullptr;
  }
  return send_call(rp::FrameType::kFile, file, input, cap, error, nullptr);
}

std::shared_ptr<RunnerCall> RunnerChannel::send_call(rp::FrameType type, const std::string& payload,
                                                     const std::string* input, std::size_t cap,
                                                     std::string& error,
                                                     std::shared_ptr<RunnerCallObserver> observer) {
  std::string frames;
  std::shared_ptr<RunnerCall> call;
  {
    std::lock_guard lock(mutex_);
    if (!failure_.empty() || !ready_) {
      error = failure_.empty() ? "the runner is not ready" : failure_;
      return nullptr;
    }
    const std::uint32_t id = next_id_++;
    if (next_id_ == 0) next_id_ = 1;
    call = std::shared_ptr<RunnerCall>(new RunnerCall(id, cap));
    call->observer_ = std::move(observer);
    calls_.emplace(id, call);
    rp::append_frame(frames, type, id, payload);
    if (input != nullptr) {
      std::string_view rest = *input;
      while (!rest.empty()) {
        const auto n = std::min(rest.size(), rp::kMaxPayload);
        rp::append_frame(frames, rp::FrameType::kStdin, id, rest.substr(0, n));
        rest.remove_prefix(n);
      }
    }
    rp::append_frame(frames, rp::FrameType::kStdinEnd, id, {});
    outbox_ += frames;
  }
  wake();
  return call;
}

void RunnerChannel::kill(const RunnerCall& call, std::chrono::milliseconds grace) {
  const auto ms = std::clamp<std::int64_t>(grace.count(), 0, 24 * 3600 * 1000);
  {
    std::lock_guard lock(mutex_);
    if (!failure_.empty()) return;
    rp::append_frame(outbox_, rp::FrameType::kKill, call.id(),
                     ms > 0 ? rp::encode_kill(static_cast<std::uint32_t>(ms)) : std::string());
  }
  wake();
}

void RunnerChannel::forget(const RunnerCall& call) {
  std::lock_guard lock(mutex_);
  calls_.erase(call.id());
}

void RunnerChannel::fail(const std::string& why) {
  std::map<std::uint32_t, std::shared_ptr<RunnerCall>> calls;
  {
    std::lock_guard lock(mutex_);
    if (failure_.empty()) {
      failure_ = why;
      // Before its hello, what came is likely the runtime saying why the program did not start.
      std::string said = before_hello_;
      while (!said.empty() && (said.back() == '\n' || said.back() == '\r')) said.pop_back();
      if (!ready_ && !said.empty())
        failure_ += " (" + ends_.peer + " said: " + sdk::log_text(said) + ")";
    }
    calls.swap(calls_);
  }
  ready_cv_.notify_all();
  for (auto& [id, call] : calls) {
    bool tell = false;
    {
      std::lock_guard lock(call->mutex_);
      if (!call->over_) {
        call->lost_ = why;
        tell = call->observer_ != nullptr;
      }
      call->over_ = true;
    }
    call->cv_.notify_all();
    if (tell) call->observer_->on_end(nullptr, why);
  }
}

void RunnerChannel::on_frame(rp::Frame& frame) {
  if (frame.type == rp::FrameType::kHello) {
    {
      std::lock_guard lock(mutex_);
      if (ready_ || frame.payload != rp::kVersion) {
        // A runner of another build: refused, not misread.
        if (!ready_)
          failure_ = "execmcp-runner in " + ends_.peer + " speaks '" + frame.payload.substr(0, 64) +
                     "', this backend '" + std::string(rp::kVersion) + "'";
      } else {
        ready_ = true;
      }
    }
    ready_cv_.notify_all();
    if (!failure().empty()) fail(failure());
    return;
  }
  std::shared_ptr<RunnerCall> call;
  {
    std::lock_guard lock(mutex_);
    if (!ready_) {
      failure_ = "execmcp-runner sent a frame before its hello";
    } else if (auto it = calls_.find(frame.call); it != calls_.end()) {
      call = it->second;
      if (frame.type == rp::FrameType::kDone || frame.type == rp::FrameType::kFileDone)
        calls_.erase(it);
    }
  }
  if (!call) return;  // a call we gave up on (or a stray id): nothing waits for it
  if (call->observer_) return on_observed_frame(*call, frame);
  std::lock_guard lock(call->mutex_);
  if (call->over_) return;
  switch (frame.type) {
    case rp::FrameType::kStarted:
      call->started_ = true;
      return;
    case rp::FrameType::kPid:  // only a background process's observer wants it
      return;
    case rp::FrameType::kStdout:
    case rp::FrameType::kStderr: {
      const bool out = frame.type == rp::FrameType::kStdout;
      std::size_t& got = out ? call->got_out_ : call->got_err_;
      const std::size_t room = got < call->cap_ ? call->cap_ - got : 0;
      if (frame.payload.size() > room) {
        frame.payload.resize(room);
        (out ? call->dropped_out_ : call->dropped_err_) = true;
      }
      got += frame.payload.size();
      if (!frame.payload.empty())
        call->chunks_.push_back(
            {out ? sdk::StreamKind::Stdout : sdk::StreamKind::Stderr, std::move(frame.payload)});
      break;
    }
    case rp::FrameType::kDone: {
      auto report = rp::decode_done(frame.payload);
      if (!report) {
        call->lost_ = "execmcp-runner sent a malformed report";
      } else {
        bound(report->error);
        if (report->notices.size() > kMaxNotices) report->notices.resize(kMaxNotices);
        for (auto& n : report->notices) bound(n);
        call->done_ = std::move(*report);
      }
      call->over_ = true;
      break;
    }
    case rp::FrameType::kFileDone: {
      auto report = rp::decode_file_done(frame.payload);
      if (!report) {
        call->lost_ = "execmcp-runner sent a malformed report";
      } else {
        bound(report->error);
        call->file_done_ = std::move(*report);
      }
      call->over_ = true;
      break;
    }
    default:
      call->lost_ = "execmcp-runner sent an unexpected frame";
      call->over_ = true;
      break;
  }
  call->cv_.notify_all();
}

void RunnerChannel::on_observed_frame(RunnerCall& call, rp::Frame& frame) {
  // Only this thread calls the observer, outside every lock: it may take its own.
  RunnerCallObserver& observer = *call.observer_;
  std::optional<rp::DoneReport> report;
  std::string lost;
  {
    std::lock_guard lock(call.mutex_);
    if (call.over_) return;
    switch (frame.type) {
      case rp::FrameType::kStarted:
        call.started_ = true;
        return;
      case rp::FrameType::kPid:
        if (const auto pid = rp::decode_pid(frame.payload); pid && call.pid_ == 0) {
          call.pid_ = static_cast<long>(*pid);
        } else {
          lost = "execmcp-runner sent a malformed or repeated pid";
        }
        break;
      case rp::FrameType::kStdout:
      case rp::FrameType::kStderr:
        break;
      case rp::FrameType::kDone:
        report = rp::decode_done(frame.payload);
        if (report) {
          bound(report->error);
          if (report->notices.size() > kMaxNotices) report->notices.resize(kMaxNotices);
          for (auto& n : report->notices) bound(n);
          call.done_ = *report;
        } else {
          lost = "execmcp-runner sent a malformed report";
        }
        call.over_ = true;
        break;
      default:
        lost = "execmcp-runner sent an unexpected frame";
        break;
    }
    if (!lost.empty()) {
      call.lost_ = lost;
      call.over_ = true;
    }
    if (call.over_ || frame.type == rp::FrameType::kPid) call.cv_.notify_all();
  }
  if (!lost.empty()) {
    forget(call);  // its report, should one still come, is not this call's any more
    return observer.on_end(nullptr, lost);
  }
  if (report) return observer.on_end(&*report, {});
  if (frame.type == rp::FrameType::kPid) return observer.on_pid(call.pid_);
  if (!frame.payload.empty())
    observer.on_output(
        frame.type == rp::FrameType::kStdout ? sdk::StreamKind::Stdout : sdk::StreamKind::Stderr,
        frame.payload);
}

void RunnerChannel::on_output(rp::FrameReader& frames, std::string_view data) {
  if (!alive() && before_hello_.size() < 512)
    before_hello_.append(data.substr(0, 512 - before_hello_.size()));
  frames.feed(data);
}

void RunnerChannel::on_diagnostics(std::string_view data) {
  if (!alive() && before_hello_.size() < 512)
    before_hello_.append(data.substr(0, 512 - before_hello_.size()));
  while (!data.empty()) {
    const auto newline = data.find('\n');
    const auto part = data.substr(0, newline);
    // Past kRunnerLogLine a line is only counted: a 20 MB line costs one log line, not 20,000.
    const std::size_t keep = std::min(part.size(), kRunnerLogLine - stderr_line_.size());
    stderr_line_.append(part.substr(0, keep));
    stderr_line_cut_ += part.size() - keep;
    if (newline == std::string_view::npos) break;
    log_diagnostic_line();
    stderr_budget_.count(1);  // the newline, when its line was not logged
    data.remove_prefix(newline + 1);
  }
}

void RunnerChannel::log_diagnostic_line() {
  auto text = stderr_budget_.take(stderr_line_, stderr_line_cut_);
  stderr_line_.clear();
  stderr_line_cut_ = 0;
  if (!log_) return;
  if (text) {
    log_(sdk::LogLevel::Warn, *text);
  } else if (stderr_budget_.just_spent()) {
    log_(sdk::LogLevel::Warn, "more than " + std::to_string(kRunnerLogLines) + " lines or " +
                                  std::to_string(kRunnerLogBytes / 1024) +
                                  " KiB on its stderr: the rest is counted, not logged");
  }
}

void RunnerChannel::end_diagnostics() {
  if (!stderr_line_.empty() || stderr_line_cut_ > 0) log_diagnostic_line();
  if (log_ && stderr_budget_.dropped() > 0)
    log_(sdk::LogLevel::Warn,
         std::to_string(stderr_budget_.dropped()) + " bytes of its stderr were not logged");
}

void RunnerChannel::drain_diagnostics() {
  if (ends_.diagnostics_fd < 0) return;
  char buf[4096];
  // Bounded: a writer that keeps the pipe full must not hold the I/O thread here.
  for (int i = 0; i < 16; ++i) {
    const ssize_t n = ::read(ends_.diagnostics_fd, buf, sizeof buf);
    if (n <= 0) return;
    on_diagnostics(std::string_view(buf, static_cast<std::size_t>(n)));
  }
}

void RunnerChannel::io_loop() {
  // A write to a pipe whose reader is gone raises SIGPIPE (there is no MSG_NOSIGNAL for write());
  // blocked in this thread, it is only EPIPE, and a pending one dies with the thread.
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);

  const bool multiplexed = ends_.framing == ChannelEnds::Framing::kDockerMultiplexed;
  rp::FrameReader frames;
  // Docker's multiplexing, then the runner's frames on its stdout.
  struct Demux final : ExecStreamDecoder::Handler {
    RunnerChannel& channel;
    rp::FrameReader& frames;
    std::string daemon_error;
    Demux(RunnerChannel& c, rp::FrameReader& f) : channel(c), frames(f) {}
    void on_payload(ExecStreamDecoder::Stream stream, std::string_view data) override {
      if (stream == ExecStreamDecoder::Stream::Stdout) {
        channel.on_output(frames, data);
      } else if (stream == ExecStreamDecoder::Stream::Stderr) {
        channel.on_diagnostics(data);
      } else if (stream == ExecStreamDecoder::Stream::SystemError) {
        daemon_error.append(data.substr(0, 1024));
      }
    }
  } demux(*this, frames);
  ExecStreamDecoder decoder;
  auto take = [&](std::string_view bytes) -> bool {
    if (!multiplexed) {
      on_output(frames, bytes);
    } else if (!decoder.feed(bytes, demux)) {
      fail("the runner's exec stream is malformed: " + decoder.error());
      return false;
    }
    if (!demux.daemon_error.empty()) {
      fail("Docker reported an error on the runner's stream: " + demux.daemon_error);
      return false;
    }
    while (auto frame = frames.next()) on_frame(*frame);
    if (!frames.error().empty()) {
      fail("execmcp-runner sent " + frames.error());
      return false;
    }
    return failure().empty();
  };
  if (!ends_.leftover.empty() && !take(ends_.leftover)) return end_diagnostics();
  ends_.leftover.clear();

  const bool one_socket = ends_.read_fd == ends_.write_fd;
  bool write_closed = ends_.write_fd < 0;  // a separate write end whose reader is gone
  std::string pending;                     // frames taken from the outbox, not yet written
  std::vector<char> buf(64 * 1024);
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (closing_) break;
      if (pending.empty()) pending.swap(outbox_);
    }
    if (!pending.empty() && write_closed) {
      drain_diagnostics();
      fail("execmcp-runner ended (its input closed)");
      break;
    }
    const short want_out = pending.empty() ? 0 : POLLOUT;
    // wake, read (and write, when it is the same socket), write, diagnostics; -1 is not polled.
    pollfd pfds[4] = {{wake_r_, POLLIN, 0},
                      {ends_.read_fd, static_cast<short>(POLLIN | (one_socket ? want_out : 0)), 0},
                      {one_socket || write_closed ? -1 : ends_.write_fd, want_out, 0},
                      {ends_.diagnostics_fd, POLLIN, 0}};
    if (::poll(pfds, 4, -1) < 0) {
      if (errno == EINTR) continue;
      fail(std::string("poll failed: ") + std::strerror(errno));
      break;
    }
    if ((pfds[0].revents & POLLIN) != 0) {
      char drain[64];
      while (::read(wake_r_, drain, sizeof drain) > 0) {
      }
    }
    const short write_revents = one_socket ? pfds[1].revents : pfds[2].revents;
    if ((write_revents & POLLOUT) != 0 && !pending.empty()) {
      const ssize_t n = write_is_socket_
                            ? ::send(ends_.write_fd, pending.data(), pending.size(), MSG_NOSIGNAL)
                            : ::write(ends_.write_fd, pending.data(), pending.size());
      if (n > 0) {
        pending.erase(0, static_cast<std::size_t>(n));
      } else if (n < 0 && errno == EPIPE && !one_socket) {
        write_closed = true;  // the runner is going; its output's end says why
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        fail(std::string("writing to execmcp-runner failed: ") + std::strerror(errno));
        break;
      }
    } else if (!one_socket && (pfds[2].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) {
      write_closed = true;  // stop polling it, or poll() would report it again at once
    }
    if ((pfds[3].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t n = ::read(ends_.diagnostics_fd, buf.data(), buf.size());
      if (n > 0) {
        on_diagnostics(std::string_view(buf.data(), static_cast<std::size_t>(n)));
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        // Its end is not the runner's: only the output's end is (someone else may hold it open).
        ::close(ends_.diagnostics_fd);
        ends_.diagnostics_fd = -1;
      }
    }
    if ((pfds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t n = ::read(ends_.read_fd, buf.data(), buf.size());
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        const int read_errno = n < 0 ? errno : 0;
        drain_diagnostics();  // what the runtime said as it ended is part of why
        fail(n == 0 || read_errno == ECONNRESET
                 ? "execmcp-runner ended (its exec stream closed)"
                 : std::string("reading from execmcp-runner failed: ") + std::strerror(read_errno));
        break;
      }
      if (n > 0 && !take(std::string_view(buf.data(), static_cast<std::size_t>(n)))) break;
    }
  }
  fail("the channel to execmcp-runner was closed");
  end_diagnostics();
}

}  // namespace execmcp::plugins::runner_client
