// The backend's side of the channel to execmcp-runner, against a fake peer that plays the engine
// and the runner: on a socketpair wrapping frames in Docker's stream multiplexing, as the Engine
// API does, or raw on pipes (or one socket) with the runner's stderr on a pipe of its own, as a
// `docker exec -i` child gives them. Every byte from the peer is untrusted: bad input ends the
// channel and fails its calls, never more.
#include "runner_client/runner_channel.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <functional>
#include <mutex>
#include <thread>

namespace execmcp::plugins::runner_client {
namespace {

namespace rp = supervision::runner;
using namespace std::chrono_literals;

// Docker's multiplexing: [stream, 0, 0, 0, size (big-endian u32)] then the payload.
std::string mux(int stream, std::string_view payload) {
  std::string out(8, '\0');
  out[0] = static_cast<char>(stream);
  const auto n = static_cast<std::uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) out[4 + i] = static_cast<char>((n >> (24 - 8 * i)) & 0xff);
  return out + std::string(payload);
}

std::string frame(rp::FrameType type, std::uint32_t call, std::string_view payload = {}) {
  std::string f;
  rp::append_frame(f, type, call, payload);
  return f;
}

class FakePeer {
 public:
  FakePeer() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    mine_ = sv[0];
    theirs_ = sv[1];
  }
  ~FakePeer() {
    if (mine_ >= 0) ::close(mine_);
  }
  int take_channel_end() { return theirs_; }
  void send_stdout(std::string_view bytes) { write_all(mux(1, bytes)); }
  void write_all(const std::string& bytes) {
    ASSERT_EQ(::write(mine_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  void hang_up() {
    ::close(mine_);
    mine_ = -1;
  }
  // The next frame the channel sent (the host writes raw frames, no multiplexing).
  rp::Frame next() {
    for (;;) {
      if (auto f = reader_.next()) return *f;
      char buf[4096];
      const ssize_t n = ::read(mine_, buf, sizeof buf);
      if (n <= 0) return {};
      reader_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    }
  }

 private:
  int mine_ = -1, theirs_ = -1;
  rp::FrameReader reader_;
};

struct Fixture {
  FakePeer peer;
  std::vector<std::string> logged;
  std::mutex log_mutex;
  RunnerChannel channel{peer.take_channel_end(), "", [this](sdk::LogLevel, const std::string& l) {
                          std::lock_guard lock(log_mutex);
                          logged.push_back(l);
                        }};
};

rp::DoneReport done_with(int exit_code, std::vector<std::string> notices) {
  rp::DoneReport d;
  d.exit_code = exit_code;
  d.notices = std::move(notices);
  return d;
}

rp::RunSpec spec_of(const std::string& command, std::size_t cap = 100) {
  rp::RunSpec s;
  s.output_cap = cap;
  s.work_dir = "/";
  s.shell = "/bin/sh";
  s.command = command;
  return s;
}

// Waits for the call to end; returns its output, stdout then stderr.
std::string finish(RunnerCall& call) {
  std::vector<RunnerCall::Chunk> chunks;
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (!call.wait(50ms, chunks) && std::chrono::steady_clock::now() < end) {
  }
  std::string out;
  for (const auto& c : chunks) out += c.data;
  return out;
}

TEST(RunnerChannel, ACallGoesOutAsFramesAndItsOutputAndReportComeBack) {
  Fixture f;
  f.peer.send_stdout(frame(rp::FrameType::kHello, 0, rp::kVersion));
  ASSERT_EQ(f.channel.wait_ready(5s), "");
  std::string error;
  const std::string input = "some stdin";
  auto call = f.channel.start(spec_of("cat"), &input, error);
  ASSERT_TRUE(call) << error;
  auto run = f.peer.next();
  EXPECT_EQ(run.type, rp::FrameType::kRun);
  EXPECT_EQ(rp::decode_run(run.payload)->command, "cat");
  auto in = f.peer.next();
  EXPECT_EQ(in.type, rp::FrameType::kStdin);
  EXPECT_EQ(in.payload, input);
  EXPECT_EQ(f.peer.next().type, rp::FrameType::kStdinEnd);
  // The reply split at arbitrary points across Docker frames.
  const std::string reply =
      frame(rp::FrameType::kStarted, run.call) + frame(rp::FrameType::kStdout, run.call, "hello ") +
      frame(rp::FrameType::kStdout, run.call, "world") +
      frame(rp::FrameType::kDone, run.call, rp::encode_done(done_with(7, {"a notice"})));
  f.peer.send_stdout(reply.substr(0, 5));
  f.peer.send_stdout(reply.substr(5, 20));
  f.peer.write_all(mux(2, "runner diagnostics\n"));
  f.peer.send_stdout(reply.substr(25));
  EXPECT_EQ(finish(*call), "hello world");
  ASSERT_TRUE(call->done());
  EXPECT_TRUE(call->started());
  EXPECT_EQ(call->done()->exit_code, 7);
  EXPECT_EQ(call->done()->notices, std::vector<std::string>{"a notice"});
  // A kill goes out as a frame.
  f.channel.kill(*call);
  auto kill = f.peer.next();
  EXPECT_EQ(kill.type, rp::FrameType::kKill);
  EXPECT_EQ(kill.call, run.call);
  std::lock_guard lock(f.log_mutex);
  EXPECT_EQ(f.logged, std::vector<std::string>{"runner diagnostics"});
}

TEST(RunnerChannel, OutputPastTheCapIsDroppedHereEvenIfTheRunnerSendsIt) {
  Fixture f;
  f.peer.send_stdout(frame(rp::FrameType::kHello, 0, rp::kVersion));
  ASSERT_EQ(f.channel.wait_ready(5s), "");
  std::string error;
  auto call = f.channel.start(spec_of("flood", 10), nullptr, error);
  ASSERT_TRUE(call);
  const auto id = f.peer.next().call;
  f.peer.send_stdout(frame(rp::FrameType::kStdout, id, "0123456789abcdef") +
                     frame(rp::FrameType::kDone, id, rp::encode_done(done_with(0, {}))));
  EXPECT_EQ(finish(*call), "0123456789");
  EXPECT_TRUE(call->dropped(sdk::StreamKind::Stdout));
}

TEST(RunnerChannel, AFileCallGoesOutAsFramesAndItsBytesAndReportComeBackCapped) {
  Fixture f;
  f.peer.send_stdout(frame(rp::FrameType::kHello, 0, rp::kVersion));
  ASSERT_EQ(f.channel.wait_ready(5s), "");
  rp::FileRequest request;
  request.op = rp::FileOp::kWrite;
  request.cwd = "/workspace";
  request.path = "sub/x.bin";
  const std::string input(rp::kMaxPayload + 5, 'w');  // two kStdin frames
  std::string error;
  auto write = f.channel.start_file(request, &input, 100, error);
  ASSERT_TRUE(write) << error;
  auto sent = f.peer.next();
  EXPECT_EQ(sent.type, rp::FrameType::kFile);
  EXPECT_EQ(rp::decode_file(sent.payload)->path, "sub/x.bin");
  EXPECT_EQ(f.peer.next().payload.size(), rp::kMaxPayload);
  EXPECT_EQ(f.peer.next().payload, "wwwww");
  EXPECT_EQ(f.peer.next().type, rp::FrameType::kStdinEnd);
  rp::FileReport report;
  report.kind = 'f';
  report.size = input.size();
  f.peer.send_stdout(frame(rp::FrameType::kFileDone, sent.call, rp::encode_file_done(report)));
  EXPECT_EQ(finish(*write), "");
  ASSERT_TRUE(write->file_done());
  EXPECT_EQ(write->file_done()->size, input.size());
  EXPECT_FALSE(write->done());
  // A read's bytes past its cap are dropped here; a malformed report loses only its call.
  request.op = rp::FileOp::kRead;
  auto read = f.channel.start_file(request, nullptr, 4, error);
  ASSERT_TRUE(read) << error;
  const auto id = f.peer.next().call;
  EXPECT_EQ(f.peer.next().type, rp::FrameType::kStdinEnd);
  f.peer.send_stdout(frame(rp::FrameType::kStdout, id, "abcdef") +
                     frame(rp::FrameType::kFileDone, id, "not a report"));
  EXPECT_EQ(finish(*read), "abcd");
  EXPECT_TRUE(read->dropped(sdk::StreamKind::Stdout));
  EXPECT_FALSE(read->file_done());
  EXPECT_EQ(read->lost(), "execmcp-runner sent a malformed report");
  EXPECT_TRUE(f.channel.alive());
}

TEST(RunnerChannel, AMalformedFrameEndsTheChannelAndFailsItsCalls) {
  for (const std::string& bad : {std::string("\x7f\xff\xff\xff\0\0\0\1\6", 9),  // a 2 GiB frame
                                 std::string("\0\0\0\0\0\0\0\1\x63", 9)}) {     // type 99
    Fixture f;
    f.peer.send_stdout(frame(rp::FrameType::kHello, 0, rp::kVersion));
    ASSERT_EQ(f.channel.wait_ready(5s), "");
    std::string error;
    auto call = f.channel.start(spec_of("x"), nullptr, error);
    ASSERT_TRUE(call);
    f.peer.send_stdout(bad);
    finish(*call);
    EXPECT_FALSE(call->done());
    EXPECT_NE(call->lost().find("execmcp-runner sent"), std::string::npos) << call->lost();
    EXPECT_FALSE(f.channel.alive());
    EXPECT_FALSE(f.channel.start(spec_of("y"), nullptr, error));
    EXPECT_FALSE(error.empty());
  }
}

TEST(RunnerChannel, ABrokenDockerStreamEndsTheChannel) {
  Fixture f;
  f.peer.write_all(std::string("\x09\0\0\0\0\0\0\1x", 9));  // stream type 9
  EXPECT_NE(f.channel.wait_ready(5s).find("malformed"), std::string::npos);
}

TEST(RunnerChannel, ARunnerOfAnotherBuildIsRefused) {
  Fixture f;
  f.peer.send_stdout(frame(rp::FrameType::kHello, 0, "execmcp-runner/0"));
  EXPECT_NE(f.channel.wait_ready(5s).find("execmcp-runner/0"), std::string::npos);
}

TEST(RunnerChannel, WhatTheRuntimeSaidInsteadOfAHelloIsInTheError) {
  Fixture f;
  f.peer.send_stdout("OCI runtime exec failed: exec failed: no such file or directory\r\n");
  f.peer.hang_up();
  const auto error = f.channel.wait_ready(5s);
  EXPECT_NE(error.find("the container said: OCI runtime exec failed"), std::string::npos) << error;
}

TEST(RunnerChannel, AHangUpFailsTheCallsAndTellsWhetherTheRunnerHadTakenThem) {
  Fixture f;
  f.peer.send_stdout(frame(rp::FrameType::kHello, 0, rp::kVersion));
  ASSERT_EQ(f.channel.wait_ready(5s), "");
  std::string error;
  auto taken = f.channel.start(spec_of("a"), nullptr, error);
  auto waiting = f.channel.start(spec_of("b"), nullptr, error);
  ASSERT_TRUE(taken && waiting);
  f.peer.send_stdout(frame(rp::FrameType::kStarted, taken->id()));
  // The started frame arrives before the hang-up is seen.
  for (int i = 0; i < 100 && !taken->started(); ++i) std::this_thread::sleep_for(10ms);
  f.peer.hang_up();
  finish(*taken);
  finish(*waiting);
  EXPECT_TRUE(taken->started());
  EXPECT_FALSE(waiting->started());
  EXPECT_NE(taken->lost().find("ended"), std::string::npos) << taken->lost();
  EXPECT_FALSE(waiting->lost().empty());
}

// The peer of a `docker exec -i` child: no multiplexing. The runner's stdout (frames) and stdin
// on two pipes, or on one socket as the CLI backend will use; its stderr on a pipe.
class RawPeer {
 public:
  explicit RawPeer(bool one_socket) {
    int p[2];
    if (one_socket) {
      EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p), 0);
      out_ = in_ = p[0];
      ends_ = ChannelEnds::raw(p[1], p[1]);
    } else {
      EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
      ends_ = ChannelEnds::raw(p[0], -1);
      out_ = p[1];
      EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
      in_ = p[0];
      ends_.write_fd = p[1];
    }
    EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
    ends_.diagnostics_fd = p[0];
    err_ = p[1];
  }
  ~RawPeer() {
    hang_up();
    close_stderr();
  }
  ChannelEnds take_channel_ends() { return std::move(ends_); }
  void send_stdout(std::string_view bytes) { write_all(out_, bytes); }
  void send_stderr(std::string_view bytes) { write_all(err_, bytes); }
  void close_stderr() { close_fd(err_); }
  // The runner stops reading its stdin (with one socket: it shuts down that direction).
  void close_stdin() {
    if (in_ == out_)
      ::shutdown(in_, SHUT_RD);
    else
      close_fd(in_);
  }
  // The runner's process ends: its stdout and stdin close.
  void hang_up() {
    if (in_ != out_) close_fd(in_);
    in_ = -1;
    close_fd(out_);
  }
  rp::Frame next() {
    for (;;) {
      if (auto f = reader_.next()) return *f;
      char buf[4096];
      const ssize_t n = ::read(in_, buf, sizeof buf);
      if (n <= 0) return {};
      reader_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    }
  }

 private:
  static void write_all(int fd, std::string_view bytes) {
    ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  static void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  ChannelEnds ends_;
  int out_ = -1, in_ = -1, err_ = -1;
  rp::FrameReader reader_;
};

struct RawFixture {
  explicit RawFixture(bool one_socket) : peer(one_socket) {}
  RawPeer peer;
  std::vector<std::string> logged;
  std::mutex log_mutex;
  RunnerChannel channel{peer.take_channel_ends(), [this](sdk::LogLevel, const std::string& l) {
                          std::lock_guard lock(log_mutex);
                          logged.push_back(l);
                        }};
  std::vector<std::string> log() {
    std::lock_guard lock(log_mutex);
    return logged;
  }
};

// Parameter: the runner's stdin and stdout on one socket (true) or on two pipes (false).
class RawRunnerChannel : public ::testing::TestWithParam<bool> {};

INSTANTIATE_TEST_SUITE_P(Ends, RawRunnerChannel, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "OneSocket" : "Pipes";
                         });

TEST_P(RawRunnerChannel, ACallGoesOutAsFramesAndItsOutputAndReportComeBackByteByByte) {
  RawFixture f(GetParam());
  f.peer.send_stderr("runner starting\n");
  f.peer.send_stdout(frame(rp::FrameType::kHello, 0, rp::kVersion));
  ASSERT_EQ(f.channel.wait_ready(5s), "");
  std::string error;
  const std::string input = "some stdin";
  auto call = f.channel.start(spec_of("cat"), &input, error);
  ASSERT_TRUE(call) << error;
  auto run = f.peer.next();
  EXPECT_EQ(run.type, rp::FrameType::kRun);
  EXPECT_EQ(rp::decode_run(run.payload)->command, "cat");
  auto in = f.peer.next();
  EXPECT_EQ(in.type, rp::FrameType::kStdin);
  EXPECT_EQ(in.payload, input);
  EXPECT_EQ(f.peer.next().type, rp::FrameType::kStdinEnd);
  // Raw bytes, no Docker frames around them: split at every byte.
  const std::string reply =
      frame(rp::FrameType::kStarted, run.call) + frame(rp::FrameType::kStdout, run.call, "hello ") +
      frame(rp::FrameType::kStdout, run.call, "world") +
      frame(rp::FrameType::kDone, run.call, rp::encode_done(done_with(7, {"a notice"})));
  for (std::size_t i = 0; i < reply.size(); ++i) {
    f.peer.send_stdout(reply.substr(i, 1));
    if (i == 20) f.peer.send_stderr("runner diag");
    if (i == 30) f.peer.send_stderr("nostics\n");
  }
  EXPECT_EQ(finish(*call), "hello world");
  ASSERT_TRUE(call->done());
  EXPECT_TRUE(call->started());
  EXPECT_EQ(call->done()->exit_code, 7);
  EXPECT_EQ(call->done()->notices, std::vector<std::string>{"a notice"});
  f.channel.kill(*call);
  auto kill = f.peer.next();
  EXPECT_EQ(kill.type, rp::FrameType::kKill);
  EXPECT_EQ(kill.call, run.call);
  EXPECT_EQ(f.log(), (std::vector<std::string>{"runner starting", "runner diagnostics"}));
}

TEST_P(RawRunnerChannel, BytesThatLookLikeDockerFramesAreTheRunnersOwn) {
  // In raw mode nothing is demultiplexed: a Docker stderr header is a malformed runner frame.
  RawFixture f(GetParam());
  f.peer.send_stdout(mux(2, "runner diagnostics\n"));
  const auto error = f.channel.wait_ready(5s);
  EXPECT_NE(error.find("execmcp-runner sent"), std::string::npos) << error;
  EXPECT_TRUE(f.log().empty());
}

TEST_P(RawRunnerChannel, AMalformedFrameEndsTheChannelAndFailsItsCalls) {
  for (const std::string& bad : {std::string("\x7f\xff\xff\xff\0\0\0\1\6", 9),  // a 2 GiB frame
                                 std::string("\0\0\0\0\0\0\0\1\x63", 9)}) {     // type 99
    RawFixture f(GetParam());
    f.peer.send_stdout(frame(rp::FrameType::kHello, 0, rp::kVersion));
    ASSERT_EQ(f.channel.wait_ready(5s), "");
    std::string error;
    auto call = f.channel.start(spec_of("x"), nullptr, error);
    ASSERT_TRUE(call);
    f.peer.send_stdout(bad);
    finish(*call);
    EXPECT_FALSE(call->done());
    EXPECT_NE(call->lost().find("execmcp-runner sent"), std::string::npos) << call->lost();
    EXPECT_FALSE(f.channel.alive());
    EXPECT_FALSE(f.channel.start(spec_of("y"), nullptr, error));
    EXPECT_FALSE(error.empty());
  }
}

TEST_P(RawRunnerChannel, WhatTheCliSaidOnStderrInsteadOfAHelloIsInTheError) {
  RawFixture f(GetParam());
  // The CLI's own error, then its exit: stderr is written before stdout closes.
  f.peer.send_stderr("Error response from daemon: container abc is not running\n");
  f.peer.hang_up();
  const auto error = f.channel.wait_ready(5s);
  EXPECT_NE(error.find("ended"), std::string::npos) << error;
  EXPECT_NE(error.find("the container said: Error response from daemon: container abc is not "
                       "running"),
            std::string::npos)
      << error;
}

TEST_P(RawRunnerChannel, AHangUpFailsTheCallsAndTellsWhetherTheRunnerHadTakenThem) {
  RawFixture f(GetParam());
  f.peer.send_stdout(frame(rp::FrameType::kHello, 0, rp::kVersion));
  ASSERT_EQ(f.channel.wait_ready(5s), "");
  std::string error;
  auto taken = f.channel.start(spec_of("a"), nullptr, error);
  auto waiting = f.channel.start(spec_of("b"), nullptr, error);
  ASSERT_TRUE(taken && waiting);
  f.peer.send_stdout(frame(rp::FrameType::kStarted, taken->id()));
  for (int i = 0; i < 100 && !taken->started(); ++i) std::this_thread::sleep_for(10ms);
  f.peer.hang_up();
  finish(*taken);
  finish(*waiting);
  EXPECT_TRUE(taken->started());
  EXPECT_FALSE(waiting->started());
  EXPECT_NE(taken->lost().find("ended"), std::string::npos) << taken->lost();
  EXPECT_FALSE(waiting->lost().empty());
}

TEST_P(RawRunnerChannel, TheEndOfStderrAloneDoesNotEndTheChannel) {
  // Someone else may hold the CLI's stderr open, or close it early: only stdout's end counts.
  RawFixture f(GetParam());
  f.peer.send_stderr("partial line without newline");
  f.peer.close_stderr();
  f.peer.send_stdout(frame(rp::FrameType::kHello, 0, rp::kVersion));
  ASSERT_EQ(f.channel.wait_ready(5s), "");
  std::string error;
  auto call = f.channel.start(spec_of("true"), nullptr, error);
  ASSERT_TRUE(call) << error;
  const auto id = f.peer.next().call;
  f.peer.send_stdout(frame(rp::FrameType::kDone, id, rp::encode_done(done_with(0, {}))));
  finish(*call);
  ASSERT_TRUE(call->done()) << call->lost();
  EXPECT_TRUE(f.channel.alive());
}

TEST(RawRunnerChannelOnPipes, ARunnerThatClosedItsInputFailsTheNextCallInsteadOfHanging) {
  // A pipe whose reader is gone: the write fails (EPIPE, no SIGPIPE), and so does the call.
  RawFixture f(false);
  f.peer.send_stdout(frame(rp::FrameType::kHello, 0, rp::kVersion));
  ASSERT_EQ(f.channel.wait_ready(5s), "");
  f.peer.close_stdin();
  std::string error;
  const std::string input = "some stdin";
  auto call = f.channel.start(spec_of("cat"), &input, error);
  if (call) {
    finish(*call);
    EXPECT_FALSE(call->done());
    error = call->lost();
  }
  EXPECT_NE(error.find("execmcp-runner ended (its input closed)"), std::string::npos) << error;
  EXPECT_FALSE(f.channel.alive());
}

// A background process's observer: what it was told, in order.
struct Recorder final : RunnerCallObserver {
  std::mutex m;
  std::string events;
  int ends = 0;
  std::thread::id thread;
  void on_pid(long pid) noexcept override {
    std::lock_guard lock(m);
    events += "pid " + std::to_string(pid) + ";";
    thread = std::this_thread::get_id();
  }
  void on_output(sdk::StreamKind kind, std::string_view bytes) noexcept override {
    std::lock_guard lock(m);
    events += (kind == sdk::StreamKind::Stdout ? "out " : "err ") + std::string(bytes) + ";";
  }
  void on_end(const rp::DoneReport* report, const std::string& lost) noexcept override {
    std::lock_guard lock(m);
    ++ends;
    events += report != nullptr ? "done " + std::to_string(report->exit_code) + ";"
                                : "lost " + lost + ";";
  }
  std::string seen() {
    std::lock_guard lock(m);
    return events;
  }
  int end_count() {  // under the lock: on_end() runs on the channel's I/O thread
    std::lock_guard lock(m);
    return ends;
  }
};

bool eventually(const std::function<bool()>& ok) {
  for (int i = 0; i < 500; ++i) {
    if (ok()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return ok();
}

TEST(RunnerChannel, ABackgroundCallHandsEveryByteToItsObserverAndKeepsNone) {
  Fixture f;
  f.peer.send_stdout(frame(rp::FrameType::kHello, 0, rp::kVersion));
  ASSERT_EQ(f.channel.wait_ready(5s), "");
  auto rec = std::make_shared<Recorder>();
  std::string error;
  auto spec = spec_of("loop", 4);
  spec.retain_output = false;
  auto call = f.channel.start(spec, nullptr, error, rec);
  ASSERT_TRUE(call) << error;
  const auto run = f.peer.next();
  EXPECT_FALSE(rp::decode_run(run.payload)->retain_output);
  EXPECT_EQ(f.peer.next().type, rp::FrameType::kStdinEnd);
  f.peer.send_stdout(frame(rp::FrameType::kStarted, run.call) +
                     frame(rp::FrameType::kPid, run.call, rp::encode_pid(42)) +
                     frame(rp::FrameType::kStdout, run.call, "past the cap of 4") +
                     frame(rp::FrameType::kStderr, run.call, "e") +
                     frame(rp::FrameType::kStdout, run.call, "2"));
  EXPECT_EQ(call->wait_pid(5s), 42);
  // A graceful kill carries its grace.
  f.channel.kill(*call, 1500ms);
  const auto kill = f.peer.next();
  EXPECT_EQ(kill.type, rp::FrameType::kKill);
  EXPECT_EQ(rp::decode_kill(kill.payload), 1500u);
  rp::DoneReport done = done_with(143, {});
  done.killed = true;
  f.peer.send_stdout(frame(rp::FrameType::kDone, run.call, rp::encode_done(done)) +
                     frame(rp::FrameType::kStdout, run.call, "after the end"));
  ASSERT_TRUE(eventually([&] { return rec->seen().find("done") != std::string::npos; }));
  EXPECT_EQ(rec->seen(), "pid 42;out past the cap of 4;err e;out 2;done 143;");
  EXPECT_NE(rec->thread, std::this_thread::get_id());  // the channel's I/O thread
  // Nothing was queued for wait().
  std::vector<RunnerCall::Chunk> chunks;
  EXPECT_TRUE(call->wait(0ms, chunks));
  EXPECT_TRUE(chunks.empty());
  EXPECT_FALSE(call->claim_end());  // already over
}

TEST(RunnerChannel, ALostChannelEndsEachBackgroundCallOnce) {
  auto rec = std::make_shared<Recorder>();
  {
    Fixture f;
    f.peer.send_stdout(frame(rp::FrameType::kHello, 0, rp::kVersion));
    ASSERT_EQ(f.channel.wait_ready(5s), "");
    std::string error;
    auto call = f.channel.start(spec_of("loop"), nullptr, error, rec);
    ASSERT_TRUE(call);
    const auto id = f.peer.next().call;
    f.peer.send_stdout(frame(rp::FrameType::kPid, id, rp::encode_pid(7)));
    ASSERT_EQ(call->wait_pid(5s), 7);
    f.peer.hang_up();
    ASSERT_TRUE(eventually([&] { return rec->end_count() > 0; }));
  }
  EXPECT_EQ(rec->end_count(), 1);
  EXPECT_NE(rec->seen().find("pid 7;lost execmcp-runner ended"), std::string::npos) << rec->seen();
}

TEST(RunnerChannel, ABackgroundCallEndedHereGetsNothingMore) {
  Fixture f;
  f.peer.send_stdout(frame(rp::FrameType::kHello, 0, rp::kVersion));
  ASSERT_EQ(f.channel.wait_ready(5s), "");
  auto rec = std::make_shared<Recorder>();
  std::string error;
  auto call = f.channel.start(spec_of("loop"), nullptr, error, rec);
  ASSERT_TRUE(call);
  const auto id = f.peer.next().call;
  EXPECT_TRUE(call->claim_end());
  EXPECT_FALSE(call->claim_end());
  f.channel.forget(*call);
  f.peer.send_stdout(frame(rp::FrameType::kStdout, id, "late") +
                     frame(rp::FrameType::kDone, id, rp::encode_done(done_with(0, {}))));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(rec->seen(), "");
  EXPECT_TRUE(f.channel.alive());
  // A repeated pid is a broken call, not a second start.
  auto other = f.channel.start(spec_of("x"), nullptr, error, rec);
  ASSERT_TRUE(other);
  EXPECT_EQ(f.peer.next().type, rp::FrameType::kStdinEnd);  // the first call's
  const auto oid = f.peer.next().call;
  f.peer.send_stdout(frame(rp::FrameType::kPid, oid, rp::encode_pid(9)) +
                     frame(rp::FrameType::kPid, oid, rp::encode_pid(9)));
  ASSERT_TRUE(eventually([&] { return rec->end_count() == 1; }));
  EXPECT_NE(rec->seen().find("pid 9;lost execmcp-runner sent a malformed or repeated pid"),
            std::string::npos)
      << rec->seen();
}

// Issue 17: a command can write to the runner's stderr (/proc/<runner pid>/fd/2). What reaches
// the log is at most kRunnerLogLines lines and kRunnerLogBytes bytes per runner, each line cut
// and escaped, then one line saying the rest is not logged, and at the end how much was not.
constexpr std::size_t kFlood = 4 << 20;

std::string flood_chunk() {
  std::string chunk;
  while (chunk.size() < (64 << 10)) chunk += "\x1b[2J\r\x07junk\x01 line\n";
  chunk += std::string(8000, 'L') + "\n";  // a long line, cut
  return chunk;
}

void expect_bounded_log(const std::vector<std::string>& logged) {
  std::size_t total = 0;
  bool said_rest = false, said_count = false;
  for (const auto& line : logged) {
    total += line.size();
    EXPECT_LE(line.size(), kRunnerLogLine + 64);
    for (unsigned char c : line) ASSERT_TRUE(c >= 0x20 && c != 0x7f) << line;
    said_rest |= line.find("the rest is counted, not logged") != std::string::npos;
    said_count |= line.find("bytes of its stderr were not logged") != std::string::npos;
  }
  EXPECT_LT(total, 128u << 10);
  EXPECT_LE(logged.size(), kRunnerLogLines + 2);
  EXPECT_TRUE(said_rest);
  EXPECT_TRUE(said_count);
  EXPECT_NE(logged.front().find("\\x1b[2J\\x0d\\x07junk\\x01 line"), std::string::npos)
      << logged.front();
}

TEST(RunnerChannel, AFloodOnTheRunnersStderrReachesTheLogBoundedAndEscaped) {
  Fixture f;
  f.peer.send_stdout(frame(rp::FrameType::kHello, 0, rp::kVersion));
  ASSERT_EQ(f.channel.wait_ready(5s), "");
  const std::string chunk = mux(2, flood_chunk());
  for (std::size_t sent = 0; sent < kFlood; sent += chunk.size()) f.peer.write_all(chunk);
  f.peer.hang_up();
  for (int i = 0; i < 500 && f.channel.alive(); ++i) std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(50ms);
  std::lock_guard lock(f.log_mutex);
  expect_bounded_log(f.logged);
}

TEST_P(RawRunnerChannel, AFloodOnTheRunnersStderrReachesTheLogBoundedAndEscaped) {
  RawFixture f(GetParam());
  f.peer.send_stdout(frame(rp::FrameType::kHello, 0, rp::kVersion));
  ASSERT_EQ(f.channel.wait_ready(5s), "");
  const std::string chunk = flood_chunk();
  for (std::size_t sent = 0; sent < kFlood; sent += chunk.size()) f.peer.send_stderr(chunk);
  f.peer.close_stderr();
  f.peer.hang_up();
  for (int i = 0; i < 500 && f.channel.alive(); ++i) std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(50ms);
  expect_bounded_log(f.log());
}

}  // namespace
}  // namespace execmcp::plugins::runner_client
