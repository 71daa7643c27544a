// execmcp-runner's listen mode, started on the host on 127.0.0.1 with a key file, reached by
// connect_runner() as a backend reaches a sandbox's runner over the network, and by raw sockets
// that play every other peer: a wrong key, a replayed answer, frames without a handshake, an
// early close, silence. Only the key's holder runs anything; a newer channel replaces the live one.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "peer_io.hpp"
#include "runner_client/runner_channel.hpp"
#include "runner_client/runner_transport.hpp"
#include "supervision/runner_auth.hpp"
#include "supervision/runner_protocol.hpp"

extern char** environ;

namespace execmcp::plugins::runner_client {
namespace {

using tests::runner_peer::read_n;
using tests::runner_peer::read_until_closed;

namespace fs = std::filesystem;
namespace ra = supervision::runner_auth;
namespace rp = supervision::runner;
using namespace std::chrono_literals;

std::string key_bytes(const ra::RunnerKey& key) {
  return std::string(reinterpret_cast<const char*>(key.data()), ra::kKeySize);
}

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/execmcp-listen-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path path;
};

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A runner process with its stderr collected; `started` once it said where it listens.
class ListeningRunner {
 public:
  explicit ListeningRunner(const std::vector<std::string>& args) {
    int err[2];
    EXPECT_EQ(::pipe2(err, O_CLOEXEC), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    std::vector<std::string> all{EXECMCP_RUNNER_PATH};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    EXPECT_EQ(::posix_spawn(&pid_, EXECMCP_RUNNER_PATH, &actions, nullptr, argv.data(), environ),
              0);
    posix_spawn_file_actions_destroy(&actions);
    ::close(err[1]);
    err_ = err[0];
    reader_ = std::thread([this] {
      char buf[4096];
      for (;;) {
        const ssize_t n = ::read(err_, buf, sizeof buf);
        if (n <= 0) break;
        std::lock_guard lock(mutex_);
        stderr_.append(buf, static_cast<std::size_t>(n));
      }
    });
  }
  ~ListeningRunner() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
    reader_.join();
    ::close(err_);
  }
  // The port it listens on, once it says so (0 when it did not within 10 s).
  std::uint16_t port() {
    static const std::regex listening("listening on 127\\.0\\.0\\.1:([0-9]+)");
    for (int i = 0; i < 1000; ++i) {
      std::smatch m;
      const std::string text = err();
      if (std::regex_search(text, m, listening)) return static_cast<std::uint16_t>(std::stoi(m[1]));
      std::this_thread::sleep_for(10ms);
    }
    return 0;
  }
  int wait_exit() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    exited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string err() {
    std::lock_guard lock(mutex_);
    return stderr_;
  }
  // Waits up to 5 s for `count` lines that contain `text`.
  bool wait_log(const std::string& text, std::size_t count = 1) {
    for (int i = 0; i < 500; ++i) {
      const std::string all = err();
      std::size_t found = 0;
      for (auto at = all.find(text); at != std::string::npos; at = all.find(text, at + 1)) ++found;
      if (found >= count) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int err_ = -1;
  std::thread reader_;
  std::mutex mutex_;
  std::string stderr_;
};

struct Ran {
  std::string out;
  std::optional<rp::DoneReport> done;
  std::optional<rp::FileReport> file;
  std::string lost;
};

Ran finish(const std::shared_ptr<RunnerCall>& call, std::chrono::milliseconds limit = 10s) {
  Ran ran;
  if (!call) return ran;
  std::vector<RunnerCall::Chunk> chunks;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  bool over = false;
  while (!over && std::chrono::steady_clock::now() < deadline) over = call->wait(100ms, chunks);
  for (auto& c : chunks)
    if (c.kind == sdk::StreamKind::Stdout) ran.out += c.data;
  ran.done = call->done();
  ran.file = call->file_done();
  ran.lost = call->lost();
  return ran;
}

// A raw TCP connection to 127.0.0.1:port (another peer on the sandbox's network).
int dial(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

std::string frame(rp::FrameType type, std::uint32_t call, std::string_view payload = {}) {
  std::string f;
  rp::append_frame(f, type, call, payload);
  return f;
}

class RunnerListenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    key_file_ = dir_.path / "key";
    write_file(key_file_, key_bytes(key_));
    runner_ = std::make_unique<ListeningRunner>(std::vector<std::string>{
        "--execmcp-runner-listen=0", "--execmcp-runner-key-file=" + key_file_.string(),
        "--execmcp-runner-bind=127.0.0.1"});
    port_ = runner_->port();
    ASSERT_NE(port_, 0) << runner_->err();
  }

  std::unique_ptr<RunnerChannel> open(const ra::RunnerKey& key, TransportError& error) {
    auto ends = connect_runner({"127.0.0.1", port_, ""}, key, 5s, error);
    if (!ends) return nullptr;
    auto channel = std::make_unique<RunnerChannel>(std::move(*ends), [](sdk::LogLevel, auto&) {});
    EXPECT_EQ(channel->wait_ready(5s), "");
    return channel;
  }
  std::unique_ptr<RunnerChannel> open() {
    TransportError error;
    auto channel = open(key_, error);
    EXPECT_TRUE(channel) << error.message;
    return channel;
  }
  Ran run(RunnerChannel& channel, const std::string& command) {
    rp::RunSpec spec;
    spec.output_cap = 1 << 20;
    spec.work_dir = dir_.path.string();
    spec.shell = "/bin/sh";
    spec.command = command;
    std::string error;
    auto call = channel.start(spec, nullptr, error);
    EXPECT_TRUE(call) << error;
    return finish(call);
  }
  // A peer that skips the handshake and speaks frames: a command that would write the marker.
  std::string touch_frames() const {
    rp::RunSpec spec;
    spec.output_cap = 1024;
    spec.work_dir = dir_.path.string();
    spec.shell = "/bin/sh";
    spec.command = "touch " + marker().string();
    return frame(rp::FrameType::kRun, 1, rp::encode_run(spec)) + frame(rp::FrameType::kStdinEnd, 1);
  }
  fs::path marker() const { return dir_.path / "marker"; }

  TempDir dir_;
  ra::RunnerKey key_ = ra::RunnerKey::random();
  fs::path key_file_;
  std::unique_ptr<ListeningRunner> runner_;
  std::uint16_t port_ = 0;
};

TEST_F(RunnerListenTest, TheKeysHolderRunsACommandAndAFileCall) {
  auto channel = open();
  ASSERT_TRUE(channel);
  const Ran ran = run(*channel, "echo hello; exit 3");
  ASSERT_TRUE(ran.done) << ran.lost;
  EXPECT_EQ(ran.done->exit_code, 3);
  EXPECT_EQ(ran.out, "hello\n");
  // The runner holds the key: it set no_new_privs before reading it, and its commands inherit it.
  EXPECT_EQ(run(*channel, "grep NoNewPrivs /proc/self/status").out, "NoNewPrivs:\t1\n");

  rp::FileRequest write{rp::FileOp::kWrite, dir_.path.string(), "notes.txt", 0, 0};
  const std::string input = "over the network\n";
  std::string error;
  Ran wrote = finish(channel->start_file(write, &input, 1 << 20, error));
  ASSERT_TRUE(wrote.file) << error << wrote.lost;
  EXPECT_EQ(wrote.file->error, "");
  rp::FileRequest read{rp::FileOp::kRead, dir_.path.string(), "notes.txt", 0, 1024};
  const Ran got = finish(channel->start_file(read, nullptr, 1 << 20, error));
  ASSERT_TRUE(got.file) << error << got.lost;
  EXPECT_EQ(got.out, input);
}

TEST_F(RunnerListenTest, AWrongKeyIsRefusedNamedAndTheRightKeyServedAfter) {
  const ra::RunnerKey other = ra::RunnerKey::random();
  TransportError error;
  EXPECT_FALSE(open(other, error));
  EXPECT_EQ(error.kind, TransportError::Kind::kRefused) << error.message;
  EXPECT_NE(error.message.find("127.0.0.1:" + std::to_string(port_)), std::string::npos)
      << error.message;
  EXPECT_TRUE(runner_->wait_log("refused a connection from 127.0.0.1:")) << runner_->err();
  EXPECT_NE(runner_->err().find("does not prove the key"), std::string::npos) << runner_->err();

  auto channel = open();
  ASSERT_TRUE(channel);
  const Ran ran = run(*channel, "echo ok");
  ASSERT_TRUE(ran.done);
  EXPECT_EQ(ran.out, "ok\n");
  const std::string log = runner_->err();
  EXPECT_EQ(log.find(key_bytes(key_)), std::string::npos);
  EXPECT_EQ(log.find(key_bytes(other)), std::string::npos);
}

TEST_F(RunnerListenTest, ARecordedServerAnswerOpensNoOtherConnection) {
  // A server's genuine handshake, recorded by an onlooker.
  const int first = dial(port_);
  const std::string hello = read_n(first, ra::kRunnerHelloSize);
  ra::HelloError hello_error;
  const auto nonce_r = ra::parse_runner_hello(hello, hello_error);
  ASSERT_TRUE(nonce_r);
  const std::string answer = ra::server_answer(key_, *nonce_r, ra::random_nonce());
  ASSERT_EQ(::send(first, answer.data(), answer.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(answer.size()));
  EXPECT_EQ(read_n(first, ra::kRunnerAnswerSize).size(), ra::kRunnerAnswerSize);
  ::close(first);

  // Played again on a connection of its own, with frames behind it.
  const int replay = dial(port_);
  EXPECT_EQ(read_n(replay, ra::kRunnerHelloSize).size(), ra::kRunnerHelloSize);
  const std::string bytes = answer + touch_frames();
  ::send(replay, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  bool closed = false;
  EXPECT_EQ(read_until_closed(replay, 5s, closed), "");  // no runner answer, no hello
  EXPECT_TRUE(closed);
  ::close(replay);
  EXPECT_TRUE(runner_->wait_log("does not prove the key")) << runner_->err();
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(fs::exists(marker()));
}

TEST_F(RunnerListenTest, FramesGarbageAndAnEarlyCloseRunNothing) {
  // Frames at once, without reading the runner's handshake.
  const int frames = dial(port_);
  const std::string bytes = touch_frames() + std::string(80, 'x');
  ::send(frames, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  bool closed = false;
  // The runner closes with the frames unread, so its kernel answers with a reset, which may
  // overtake its hello here: at most the hello, then the end.
  EXPECT_LE(read_until_closed(frames, 5s, closed).size(), ra::kRunnerHelloSize);
  EXPECT_TRUE(closed);
  ::close(frames);
  // Garbage of the answer's size.
  const int garbage = dial(port_);
  const std::string junk(ra::kServerAnswerSize, '\x5a');
  ::send(garbage, junk.data(), junk.size(), MSG_NOSIGNAL);
  EXPECT_EQ(read_until_closed(garbage, 5s, closed).size(), ra::kRunnerHelloSize);
  EXPECT_TRUE(closed);
  ::close(garbage);
  // Half an answer, then gone.
  const int early = dial(port_);
  ::send(early, junk.data(), 10, MSG_NOSIGNAL);
  ::close(early);
  EXPECT_TRUE(runner_->wait_log("refused a connection from", 3)) << runner_->err();
  EXPECT_NE(runner_->err().find("closed in the middle of its answer"), std::string::npos)
      << runner_->err();
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(fs::exists(marker()));
  // Still serving.
  auto channel = open();
  ASSERT_TRUE(channel);
  EXPECT_EQ(run(*channel, "echo still").out, "still\n");
}

TEST_F(RunnerListenTest, AConnectionLoopCostsABoundedLog) {
  for (int i = 0; i < 40; ++i) ::close(dial(port_));
  EXPECT_TRUE(runner_->wait_log("refused a connection from", 20)) << runner_->err();
  std::this_thread::sleep_for(300ms);
  const std::string log = runner_->err();
  std::size_t lines = 0;
  for (auto at = log.find("refused a connection"); at != std::string::npos;
       at = log.find("refused a connection", at + 1))
    ++lines;
  EXPECT_EQ(lines, 20u) << log;
  auto channel = open();
  ASSERT_TRUE(channel);
  EXPECT_EQ(run(*channel, "echo served").out, "served\n");
}

TEST_F(RunnerListenTest, SilentPeersAreDroppedAtTheDeadlineAndAtMostFourWaitAtOnce) {
  std::vector<int> silent;
  for (int i = 0; i < ra::kMaxHandshakes; ++i) {
    silent.push_back(dial(port_));
    EXPECT_EQ(read_n(silent.back(), ra::kRunnerHelloSize).size(), ra::kRunnerHelloSize);
  }
  // A fifth is closed at once, before any byte.
  const int fifth = dial(port_);
  bool closed = false;
  EXPECT_EQ(read_until_closed(fifth, 2s, closed), "");
  EXPECT_TRUE(closed);
  ::close(fifth);
  EXPECT_TRUE(runner_->wait_log("handshakes are in progress already")) << runner_->err();
  // The silent ones end at the deadline (5 s), having got nothing more.
  const auto start = std::chrono::steady_clock::now();
  for (int fd : silent) {
    EXPECT_EQ(read_until_closed(fd, 8s, closed), "");
    EXPECT_TRUE(closed);
    ::close(fd);
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_TRUE(runner_->wait_log("no answer within the handshake's deadline", 4)) << runner_->err();
  auto channel = open();
  ASSERT_TRUE(channel);
  EXPECT_EQ(run(*channel, "echo after").out, "after\n");
}

TEST_F(RunnerListenTest, ANewerChannelReplacesTheLiveOneAndItsCommandsAreKilled) {
  auto first = open();
  ASSERT_TRUE(first);
  rp::RunSpec spec;
  spec.output_cap = 1024;
  spec.work_dir = dir_.path.string();
  spec.shell = "/bin/sh";
  spec.command = "echo $$ > pid; exec sleep 60";
  std::string error;
  auto call = first->start(spec, nullptr, error);
  ASSERT_TRUE(call) << error;
  const fs::path pid_file = dir_.path / "pid";
  pid_t pid = 0;
  for (int i = 0; i < 500 && pid == 0; ++i) {
    std::ifstream in(pid_file);
    if (!(in >> pid)) pid = 0;
    if (pid == 0) std::this_thread::sleep_for(10ms);
  }
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, 0), 0);

  auto second = open();
  ASSERT_TRUE(second);
  const Ran lost = finish(call);
  EXPECT_FALSE(lost.done);
  EXPECT_NE(lost.lost, "");
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = ::kill(pid, 0) != 0 && errno == ESRCH;
    if (!gone) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(gone) << "the replaced channel's command still runs";
  EXPECT_FALSE(first->alive());
  EXPECT_EQ(run(*second, "echo second").out, "second\n");
}

// A one-connection server on 127.0.0.1 that plays `peer` (given the accepted socket).
class FakeRunner {
 public:
  explicit FakeRunner(std::function<void(int)> peer) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listener_, 1), 0);
    socklen_t len = sizeof addr;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
    thread_ = std::thread([this, peer = std::move(peer)] {
      const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      peer(fd);
      ::close(fd);
    });
  }
  ~FakeRunner() {
    ::shutdown(listener_, SHUT_RDWR);
    thread_.join();
    ::close(listener_);
  }
  std::uint16_t port = 0;

 private:
  int listener_ = -1;
  std::thread thread_;
};

TEST(ConnectRunner, NamesWhatWentWrongAndTrustsNoRunnerWithoutTheKey) {
  const ra::RunnerKey key = ra::RunnerKey::random();
  TransportError error;
  // A runner that cannot prove the key (a task that took over a dead sandbox's address).
  {
    FakeRunner impostor([](int fd) {
      const std::string hello = ra::runner_hello(ra::random_nonce());
      ::send(fd, hello.data(), hello.size(), MSG_NOSIGNAL);
      read_n(fd, ra::kServerAnswerSize);
      const std::string guess(ra::kRunnerAnswerSize, '\x11');
      ::send(fd, guess.data(), guess.size(), MSG_NOSIGNAL);
      const std::string hello_frame = frame(rp::FrameType::kHello, 0, rp::kVersion);
      ::send(fd, hello_frame.data(), hello_frame.size(), MSG_NOSIGNAL);
    });
    EXPECT_FALSE(
        connect_runner({"127.0.0.1", impostor.port, "the sandbox's runner"}, key, 5s, error));
    EXPECT_EQ(error.kind, TransportError::Kind::kRefused);
    EXPECT_EQ(error.message.rfind("the sandbox's runner: ", 0), 0u) << error.message;
  }
  // Not a runner at all.
  {
    FakeRunner web([](int fd) {
      const std::string reply = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
      ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
      bool closed = false;
      read_until_closed(fd, 2s, closed);
    });
    EXPECT_FALSE(connect_runner({"127.0.0.1", web.port, ""}, key, 5s, error));
    EXPECT_EQ(error.kind, TransportError::Kind::kProtocol) << error.message;
    EXPECT_NE(error.message.find("not an execmcp runner"), std::string::npos) << error.message;
  }
  // Silent: the timeout holds.
  {
    FakeRunner silent([](int fd) {
      bool closed = false;
      read_until_closed(fd, 3s, closed);
    });
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(connect_runner({"127.0.0.1", silent.port, ""}, key, 300ms, error));
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
    EXPECT_EQ(error.kind, TransportError::Kind::kUnreachable) << error.message;
  }
  // Nothing listens there.
  std::uint16_t closed_port = 0;
  {
    FakeRunner gone([](int) {});
    closed_port = gone.port;
  }
  EXPECT_FALSE(connect_runner({"127.0.0.1", closed_port, ""}, key, 2s, error));
  EXPECT_EQ(error.kind, TransportError::Kind::kUnreachable) << error.message;
  EXPECT_NE(error.message.find("cannot connect"), std::string::npos) << error.message;
}

// Not the fixture: runners that must not start.
TEST(RunnerListenSetup, AKeyFileOfTheWrongSizeEndsTheRunnerWithoutShowingIt) {
  TempDir dir;
  for (std::size_t size : {std::size_t{31}, std::size_t{33}, std::size_t{0}}) {
    const std::string secret = std::string(size, 'S');
    const fs::path key = dir.path / "key";
    write_file(key, secret);
    ListeningRunner runner({"--execmcp-runner-listen=0",
                            "--execmcp-runner-key-file=" + key.string(),
                            "--execmcp-runner-bind=127.0.0.1"});
    EXPECT_EQ(runner.wait_exit(), 2) << size;
    std::this_thread::sleep_for(50ms);
    const std::string err = runner.err();
    EXPECT_NE(err.find(key.string()), std::string::npos) << err;
    EXPECT_NE(err.find("exactly 32 bytes"), std::string::npos) << err;
    if (size > 0) {
      EXPECT_EQ(err.find("SSSS"), std::string::npos) << err;
    }
  }
  ListeningRunner missing(
      {"--execmcp-runner-listen=0", "--execmcp-runner-key-file=" + (dir.path / "none").string()});
  EXPECT_EQ(missing.wait_exit(), 2);
}

TEST(RunnerListenSetup, MalformedListenArgumentsAreRefusedAsToday) {
  TempDir dir;
  const std::string key = "--execmcp-runner-key-file=" + (dir.path / "key").string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--execmcp-runner-listen=x7", key},
        std::vector<std::string>{"--execmcp-runner-listen=70000", key},
        std::vector<std::string>{"--execmcp-runner-listen=7077"},
        std::vector<std::string>{"--execmcp-runner-listen=7077", "--execmcp-runner-key-file=k"},
        std::vector<std::string>{"--execmcp-runner-listen=7077", key, "--execmcp-runner-bind=x"},
        std::vector<std::string>{"--execmcp-runner-listen=7077", key, "--other"}}) {
    ListeningRunner runner(args);
    EXPECT_EQ(runner.wait_exit(), 2) << args[0];
    std::this_thread::sleep_for(50ms);
    EXPECT_NE(runner.err().find("not meant to be run by hand"), std::string::npos) << runner.err();
  }
}

}  // namespace
}  // namespace execmcp::plugins::runner_client
