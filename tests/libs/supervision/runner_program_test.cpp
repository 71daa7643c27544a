// execmcp-runner driven on the host through its stdin and stdout, exactly as the docker-api
// backend drives it inside a container (there the Engine carries the bytes): calls, stdin, kills,
// concurrency, capping, output that imitates the protocol, and the file calls.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "supervision/runner_protocol.hpp"

extern char** environ;

namespace execmcp::plugins::supervision::runner {
namespace {

using namespace std::chrono_literals;

struct Outcome {
  std::string out, err;
  std::optional<DoneReport> done;
  std::optional<FileReport> file;  // a file call's end
};

bool gone(pid_t pid) {
  // The spare (a subreaper) reaps what it kills, so a killed process disappears entirely.
  for (int i = 0; i < 500; ++i) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

class Runner {
 public:
  Runner() {
    int in[2], out[2];
    EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    char* argv[] = {const_cast<char*>(EXECMCP_RUNNER_PATH), const_cast<char*>(kChannelArg),
                    nullptr};
    EXPECT_EQ(::posix_spawn(&pid_, EXECMCP_RUNNER_PATH, &actions, nullptr, argv, environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    to_ = in[1];
    from_ = out[0];
    auto hello = next(10s);
    EXPECT_TRUE(hello && hello->type == FrameType::kHello && hello->payload == kVersion);
  }
  ~Runner() {
    close_channel();
    if (from_ >= 0) ::close(from_);
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
  }
  void close_channel() {
    if (to_ >= 0) ::close(to_);
    to_ = -1;
  }
  int wait_exit() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  void send_raw(const std::string& bytes) {
    ASSERT_EQ(::write(to_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  void send(FrameType type, std::uint32_t call, std::string_view payload = {}) {
    std::string frame;
    append_frame(frame, type, call, payload);
    send_raw(frame);
  }
  void run(std::uint32_t call, const std::string& command, std::size_t cap = 1 << 20,
           const std::string* stdin_data = nullptr) {
    RunSpec spec;
    spec.output_cap = cap;
    spec.work_dir = "/tmp";
    spec.shell = "/bin/sh";
    spec.command = command;
    spec.env = {"EXECMCP_TEST_VAR=from the call"};
    send(FrameType::kRun, call, encode_run(spec));
    if (stdin_data != nullptr) {
      for (std::size_t at = 0; at < stdin_data->size(); at += kMaxPayload)
        send(FrameType::kStdin, call, std::string_view(*stdin_data).substr(at, kMaxPayload));
    }
    send(FrameType::kStdinEnd, call);
  }

  // A file call, its input in frames of at most kMaxPayload, then kStdinEnd.
  Outcome file(std::uint32_t call, FileOp op, const std::string& cwd, const std::string& path,
               std::uint64_t max_bytes = 1 << 20, const std::string& input = {}) {
    FileRequest request;
    request.op = op;
    request.cwd = cwd;
    request.path = path;
    request.max_bytes = max_bytes;
    send(FrameType::kFile, call, encode_file(request));
    for (std::size_t at = 0; at < input.size(); at += kMaxPayload)
      send(FrameType::kStdin, call, std::string_view(input).substr(at, kMaxPayload));
    send(FrameType::kStdinEnd, call);
    return collect(call, 10s);
  }

  std::optional<Frame> next(std::chrono::milliseconds wait) {
    const auto end = std::chrono::steady_clock::now() + wait;
    for (;;) {
      if (auto f = reader_.next()) return f;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{from_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[65536];
      const ssize_t n = ::read(from_, buf, sizeof buf);
      if (n <= 0) return std::nullopt;
      reader_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    }
  }

  // Reads frames until `call` is done; frames of other calls are kept for them.
  Outcome collect(std::uint32_t call, std::chrono::milliseconds wait = 30s) {
    auto& o = outcomes_[call];
    const auto end = std::chrono::steady_clock::now() + wait;
    while (!o.done && !o.file && std::chrono::steady_clock::now() < end) {
      auto f = next(100ms);
      if (!f) continue;
      auto& target = outcomes_[f->call];
      if (f->type == FrameType::kStdout) target.out += f->payload;
      if (f->type == FrameType::kStderr) target.err += f->payload;
      if (f->type == FrameType::kDone) target.done = decode_done(f->payload);
      if (f->type == FrameType::kFileDone) {
        target.file = decode_file_done(f->payload);
        EXPECT_TRUE(target.file) << "a malformed file report";
      }
    }
    return outcomes_[call];
  }
  // Stdout of `call` so far, waiting until it holds `what` (`times` times).
  std::string wait_output(std::uint32_t call, const std::string& what, int times = 1) {
    const auto end = std::chrono::steady_clock::now() + 10s;
    auto count = [&] {
      int n = 0;
      const std::string& out = outcomes_[call].out;
      for (auto at = out.find(what); at != std::string::npos; at = out.find(what, at + 1)) ++n;
      return n;
    };
    while (count() < times && std::chrono::steady_clock::now() < end) {
      auto f = next(100ms);
      if (f && f->type == FrameType::kStdout) outcomes_[f->call].out += f->payload;
      if (f && f->type == FrameType::kDone) outcomes_[f->call].done = decode_done(f->payload);
    }
    return outcomes_[call].out;
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  FrameReader reader_;
  std::map<std::uint32_t, Outcome> outcomes_;
};

TEST(Runner, RunsACommandWithItsEnvironmentWorkDirAndExitCode) {
  Runner r;
  r.run(1, "echo \"$EXECMCP_TEST_VAR\"; pwd; echo oops >&2; exit 3");
  auto o = r.collect(1);
  ASSERT_TRUE(o.done);
  EXPECT_EQ(o.out, "from the call\n/tmp\n");
  EXPECT_EQ(o.err, "oops\n");
  EXPECT_EQ(o.done->exit_code, 3);
  EXPECT_FALSE(o.done->killed);
  EXPECT_TRUE(o.done->error.empty()) << o.done->error;
}

TEST(Runner, StdinReachesTheCommandByteForByte) {
  Runner r;
  std::string data;
  for (int i = 0; i < 3 * 1024 * 1024; ++i) data.push_back(static_cast<char>(i * 7));
  r.run(1, "cksum", 1 << 20, &data);
  auto o = r.collect(1);
  ASSERT_TRUE(o.done);
  EXPECT_EQ(o.done->exit_code, 0);
  // The same bytes through cksum on the host.
  FILE* p = ::popen("cksum > /tmp/execmcp-runner-test-cksum", "w");
  ASSERT_NE(p, nullptr);
  std::fwrite(data.data(), 1, data.size(), p);
  ::pclose(p);
  FILE* f = std::fopen("/tmp/execmcp-runner-test-cksum", "r");
  char expected[128] = {};
  ASSERT_NE(std::fgets(expected, sizeof expected, f), nullptr);
  std::fclose(f);
  std::remove("/tmp/execmcp-runner-test-cksum");
  EXPECT_EQ(o.out, expected);
}

TEST(Runner, KillEndsTheWholeTreeIncludingSetsidEscapees) {
  Runner r;
  r.run(1, "setsid sleep 300 & echo $!; sleep 300");
  const std::string out = r.wait_output(1, "\n");
  const pid_t escapee = std::atoi(out.c_str());
  ASSERT_GT(escapee, 0) << out;
  r.send(FrameType::kKill, 1);
  auto o = r.collect(1, 20s);
  ASSERT_TRUE(o.done);
  EXPECT_TRUE(o.done->killed);
  EXPECT_EQ(o.done->exit_code, 137);
  EXPECT_TRUE(gone(escapee));
}

// Issue 17 item 2, as inside a container: a call kills the spare pool program; another call's
// kill still ends its whole tree (its spare outlived the program), and later calls run.
TEST(Runner, KillingTheSparePoolLeavesEveryRunningCallKillable) {
  Runner r;
  r.run(1, "setsid sleep 300 & echo $!; sleep 300");
  const pid_t escapee = std::atoi(r.wait_output(1, "\n").c_str());
  ASSERT_GT(escapee, 0);
  r.run(2, "pool=$(awk '{print $4}' /proc/$PPID/stat); echo $pool; kill -9 $pool");
  const auto killer = r.collect(2, 20s);
  ASSERT_TRUE(killer.done);
  // Until the program has exited (a zombie of the runner's), a call may still reach it.
  const std::string stat_path = "/proc/" + std::to_string(std::atoi(killer.out.c_str())) + "/stat";
  for (int i = 0; i < 1000; ++i) {
    FILE* f = std::fopen(stat_path.c_str(), "r");
    char line[512] = {};
    const bool read = f != nullptr && std::fgets(line, sizeof line, f) != nullptr;
    if (f != nullptr) std::fclose(f);
    const char* paren = read ? std::strrchr(line, ')') : nullptr;
    if (paren == nullptr || paren[1] == '\0' || paren[2] == 'Z') break;
    std::this_thread::sleep_for(5ms);
  }
  r.run(3, "echo again");
  const auto again = r.collect(3, 20s);
  ASSERT_TRUE(again.done);
  EXPECT_EQ(again.out, "again\n");
  r.send(FrameType::kKill, 1);
  auto o = r.collect(1, 20s);
  ASSERT_TRUE(o.done);
  EXPECT_TRUE(o.done->killed);
  EXPECT_EQ(o.done->error, "");
  EXPECT_TRUE(gone(escapee));
  if (!gone(escapee)) ::kill(escapee, SIGKILL);
}

// A call's own spare killed (by another call, say): the pool program, a subreaper, gets what the
// spare's command left and kills it, setsid escapees included; the call ends with an error.
TEST(Runner, KillingACallsSpareLeavesNoEscapee) {
  Runner r;
  r.run(1, "echo $PPID; setsid sleep 300 & echo $!; sleep 300");
  const std::string out = r.wait_output(1, "\n", 2);
  const pid_t spare = std::atoi(out.c_str());
  const pid_t escapee = std::atoi(out.c_str() + out.find('\n') + 1);
  ASSERT_GT(spare, 1) << out;
  ASSERT_GT(escapee, 0) << out;
  ASSERT_EQ(::kill(spare, SIGKILL), 0);
  auto o = r.collect(1, 20s);
  ASSERT_TRUE(o.done);
  EXPECT_FALSE(o.done->killed);
  EXPECT_NE(o.done->error, "");
  EXPECT_TRUE(gone(escapee)) << "the setsid child outlived its supervisor";
  if (!gone(escapee)) ::kill(escapee, SIGKILL);
}

TEST(Runner, ClosingTheChannelKillsWhatRunsAndEndsTheRunner) {
  Runner r;
  r.run(1, "sleep 300 & echo $!; wait");
  const pid_t child = std::atoi(r.wait_output(1, "\n").c_str());
  ASSERT_GT(child, 0);
  r.close_channel();
  EXPECT_EQ(r.wait_exit(), 0);
  EXPECT_TRUE(gone(child));
}

TEST(Runner, SixteenConcurrentCallsEachGetOnlyTheirOwnBytes) {
  Runner r;
  for (std::uint32_t id = 1; id <= 16; ++id)
    r.run(id, "i=0; while [ $i -lt 300 ]; do echo call-" + std::to_string(id) +
                  "-line-$i; i=$((i+1)); done");
  for (std::uint32_t id = 1; id <= 16; ++id) {
    auto o = r.collect(id);
    ASSERT_TRUE(o.done) << id;
    std::string expected;
    for (int i = 0; i < 300; ++i)
      expected += "call-" + std::to_string(id) + "-line-" + std::to_string(i) + "\n";
    EXPECT_EQ(o.out, expected) << "call " << id;
  }
}

TEST(Runner, OneCallsFloodDoesNotDelayAnotherCallsResult) {
  Runner r;
  r.run(1, "head -c 200000000 /dev/zero", 1 << 20);
  r.run(2, "echo quick");
  auto quick = r.collect(2, 10s);
  ASSERT_TRUE(quick.done);
  EXPECT_EQ(quick.out, "quick\n");
  auto flood = r.collect(1, 60s);
  ASSERT_TRUE(flood.done);
  EXPECT_EQ(flood.out.size(), std::size_t{1} << 20);  // capped in the runner
  EXPECT_TRUE(flood.done->stdout_truncated);
}

TEST(Runner, OutputThatImitatesTheProtocolIsJustOutput) {
  Runner r;
  // A whole kDone frame for call 1 (exit 0) and one for another call, printed by the command.
  std::string fake;
  append_frame(fake, FrameType::kDone, 1, encode_done(DoneReport{}));
  append_frame(fake, FrameType::kStdout, 2, "injected");
  std::string printf_arg;
  for (unsigned char c : fake) {
    char oct[8];
    std::snprintf(oct, sizeof oct, "\\%03o", c);
    printf_arg += oct;
  }
  r.run(1, "printf '" + printf_arg + "'; exit 5");
  auto o = r.collect(1);
  ASSERT_TRUE(o.done);
  EXPECT_EQ(o.done->exit_code, 5);
  EXPECT_EQ(o.out, fake);
  auto other = r.collect(2, 500ms);
  EXPECT_TRUE(other.out.empty());
}

TEST(Runner, AMissingWorkDirIsAnErrorAndTheRunnerGoesOn) {
  Runner r;
  RunSpec spec;
  spec.output_cap = 100;
  spec.work_dir = "/nonexistent/execmcp";
  spec.shell = "/bin/sh";
  spec.command = "true";
  r.send(FrameType::kRun, 1, encode_run(spec));
  r.send(FrameType::kStdinEnd, 1);
  auto o = r.collect(1);
  ASSERT_TRUE(o.done);
  EXPECT_NE(o.done->error.find("work_dir"), std::string::npos) << o.done->error;
  r.run(2, "echo still here");
  EXPECT_EQ(r.collect(2).out, "still here\n");
}

TEST(Runner, AMalformedFrameEndsTheRunner) {
  Runner r;
  std::string bad;
  append_frame(bad, FrameType::kRun, 1, "x");
  bad[8] = 99;
  r.send_raw(bad);
  EXPECT_EQ(r.wait_exit(), 3);
}

// A fresh directory under /tmp, removed at the end.
struct Scratch {
  std::string path;
  Scratch() {
    std::string tmpl = "/tmp/execmcp-runner-files-XXXXXX";
    EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
    path = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::string host_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(RunnerFiles, WriteThenReadKeepsAll256ByteValuesAndMakesTheDirectories) {
  Runner r;
  Scratch dir;
  std::string data;
  for (int round = 0; round < 3 * 4096 + 1; ++round)
    for (int i = 0; i < 256; ++i) data.push_back(static_cast<char>(i));  // > kMaxPayload
  auto w = r.file(1, FileOp::kWrite, dir.path, "deep/er/all.bin", 0, data);
  ASSERT_TRUE(w.file);
  EXPECT_EQ(w.file->error, "");
  EXPECT_EQ(w.file->size, data.size());
  EXPECT_EQ(host_file(dir.path + "/deep/er/all.bin"), data);
  // Relative to the cwd, or absolute.
  auto rd = r.file(2, FileOp::kRead, dir.path, "deep/er/all.bin", 16 << 20);
  ASSERT_TRUE(rd.file);
  EXPECT_EQ(rd.file->error, "");
  EXPECT_FALSE(rd.file->truncated);
  EXPECT_EQ(rd.out, data);
  EXPECT_EQ(r.file(3, FileOp::kRead, "/", dir.path + "/deep/er/all.bin", 16 << 20).out, data);
  auto empty = r.file(4, FileOp::kWrite, dir.path, "empty.txt");
  ASSERT_TRUE(empty.file);
  EXPECT_EQ(empty.file->error, "");
  EXPECT_EQ(r.file(5, FileOp::kRead, dir.path, "empty.txt").out, "");
}

TEST(RunnerFiles, AWriteTruncatesInPlaceKeepingTheInodeAndMode) {
  Runner r;
  Scratch dir;
  const std::string path = dir.path + "/kept.txt";
  std::ofstream(path) << "a longer original text";
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  auto w = r.file(1, FileOp::kWrite, dir.path, "kept.txt", 0, "short");
  ASSERT_TRUE(w.file);
  EXPECT_EQ(w.file->error, "");
  struct stat after {};
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_mode & 07777, 0640u);
  EXPECT_EQ(host_file(path), "short");
}

TEST(RunnerFiles, AReadStopsAtMaxBytesAndSaysSo) {
  Runner r;
  Scratch dir;
  std::ofstream(dir.path + "/f.txt") << "abcdef";
  auto t = r.file(1, FileOp::kRead, dir.path, "f.txt", 4);
  ASSERT_TRUE(t.file);
  EXPECT_EQ(t.out, "abcd");
  EXPECT_TRUE(t.file->truncated);
  auto exact = r.file(2, FileOp::kRead, dir.path, "f.txt", 6);
  EXPECT_EQ(exact.out, "abcdef");
  EXPECT_FALSE(exact.file->truncated);
  auto none = r.file(3, FileOp::kRead, dir.path, "f.txt", 0);
  EXPECT_EQ(none.out, "");
  EXPECT_TRUE(none.file->truncated);
}

TEST(RunnerFiles, DirectoriesFifosSocketsAndMissingFilesAreRefusedWithoutBlocking) {
  Runner r;
  Scratch dir;
  ASSERT_EQ(::mkfifo((dir.path + "/fifo").c_str(), 0600), 0);
  ASSERT_EQ(::mkdir((dir.path + "/sub").c_str(), 0700), 0);
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock_path = dir.path + "/sock";
  std::strncpy(addr.sun_path, sock_path.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const auto start = std::chrono::steady_clock::now();
  std::uint32_t id = 0;  // a new id per call: the runner frees one only after its report
  for (auto op : {FileOp::kRead, FileOp::kWrite}) {
    auto fifo = r.file(++id, op, dir.path, "fifo", 100, "x");
    ASSERT_TRUE(fifo.file);
    EXPECT_EQ(fifo.file->error, "'fifo' is not a regular file (a FIFO, socket or device)");
    EXPECT_EQ(fifo.file->kind, 'p');
    auto sub = r.file(++id, op, dir.path, "sub", 100, "x");
    ASSERT_TRUE(sub.file);
    EXPECT_EQ(sub.file->error, "'sub' is a directory");
    auto socket = r.file(++id, op, dir.path, "sock", 100, "x");
    ASSERT_TRUE(socket.file);
    EXPECT_NE(socket.file->error.find("not a regular file"), std::string::npos);
    auto device = r.file(++id, op, "/", "/dev/null", 100, "x");
    ASSERT_TRUE(device.file);
    EXPECT_NE(device.file->error.find("not a regular file"), std::string::npos);
  }
  auto missing = r.file(++id, FileOp::kRead, dir.path, "nope.txt");
  ASSERT_TRUE(missing.file);
  EXPECT_EQ(missing.file->error, "nope.txt: No such file or directory");
  auto list_fifo = r.file(++id, FileOp::kList, dir.path, "fifo");
  ASSERT_TRUE(list_fifo.file);
  EXPECT_EQ(list_fifo.file->error, "'fifo' is not a directory");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);  // nothing waited for a peer
  ::close(sock);
  // Nothing was written through the FIFO, and the write made no file of it.
  struct stat st {};
  ASSERT_EQ(::stat((dir.path + "/fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST(RunnerFiles, StatAndListDescribeWhatIsThere) {
  Runner r;
  Scratch dir;
  std::ofstream(dir.path + "/a.txt") << "12345";
  ASSERT_EQ(::mkdir((dir.path + "/sub").c_str(), 0750), 0);
  ASSERT_EQ(::symlink("a.txt", (dir.path + "/link").c_str()), 0);
  auto st = r.file(1, FileOp::kStat, dir.path, "a.txt");
  ASSERT_TRUE(st.file);
  EXPECT_EQ(st.file->error, "");
  EXPECT_EQ(st.file->kind, 'f');
  EXPECT_EQ(st.file->size, 5u);
  auto sub = r.file(2, FileOp::kStat, dir.path, "sub");
  EXPECT_EQ(sub.file->kind, 'd');
  EXPECT_EQ(sub.file->mode, 0750u);
  EXPECT_EQ(r.file(3, FileOp::kStat, dir.path, "link").file->kind, 'f');  // followed
  auto missing = r.file(4, FileOp::kStat, dir.path, "nope");
  EXPECT_EQ(missing.file->error, "");
  EXPECT_EQ(missing.file->kind, '-');
  auto list = r.file(5, FileOp::kList, dir.path, ".");
  ASSERT_TRUE(list.file);
  EXPECT_EQ(list.file->error, "");
  auto entries = decode_entries(list.out);
  ASSERT_TRUE(entries);
  std::map<std::string, char> kinds;
  for (const auto& e : *entries) kinds[e.name] = e.kind;
  EXPECT_EQ(kinds, (std::map<std::string, char>{{"a.txt", 'f'}, {"link", 'l'}, {"sub", 'd'}}));
  EXPECT_EQ(list.file->size, 3u);
  auto bounded = r.file(6, FileOp::kList, dir.path, ".", 2);
  EXPECT_TRUE(bounded.file->truncated);
  EXPECT_EQ(decode_entries(bounded.out)->size(), 2u);
  EXPECT_EQ(r.file(7, FileOp::kList, dir.path, "a.txt").file->error, "'a.txt' is not a directory");
}

TEST(RunnerFiles, AMalformedFileRequestEndsTheRunner) {
  Runner r;
  using namespace std::string_view_literals;
  r.send(FrameType::kFile, 1, "r\0relative\0p\0\x30\0\x31\0"sv);  // a relative cwd
  EXPECT_EQ(r.wait_exit(), 3);
}

}  // namespace
}  // namespace execmcp::plugins::supervision::runner
