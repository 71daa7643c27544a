// Tests for the stdio transport over real pipes, and serve_stdio in a forked child process.
#include "transport/stdio/stdio_transport.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "mcp/fake_agent.hpp"
#include "transport/stdio/stdio_server.hpp"

namespace execmcp::host::mcp {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

ServerOptions server_options(std::string version, std::size_t max_concurrent_calls) {
  ServerOptions options;
  options.server_version = std::move(version);
  options.max_concurrent_calls = max_concurrent_calls;
  return options;
}

struct Pipe {
  Pipe() { EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0); }
  ~Pipe() {
    close_read();
    close_write();
  }
  void close_read() {
    if (fds[0] >= 0) ::close(fds[0]);
    fds[0] = -1;
  }
  void close_write() {
    if (fds[1] >= 0) ::close(fds[1]);
    fds[1] = -1;
  }
  void write(std::string_view bytes) const {
    ASSERT_EQ(::write(fds[1], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  int fds[2] = {-1, -1};
};

// Reads one line from fd, waiting at most `timeout`.
std::optional<std::string> read_line(int fd, std::string& buffer,
                                     std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (const auto nl = buffer.find('\n'); nl != std::string::npos) {
      std::string line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char chunk[4096];
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0) return std::nullopt;
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
}

TEST(StdioTransport, ReadsLinesSplitAcrossWritesAndStripsCr) {
  Pipe in;
  Pipe out;
  StdioTransport transport(in.fds[0], out.fds[1], MessageLimits::kDefaultMaxBytes);
  in.write("{\"a\":");
  in.write("1}\r\n{\"b\":2}\n\nlast-without-newline");
  in.close_write();
  EXPECT_EQ(transport.read_line(), "{\"a\":1}");
  EXPECT_EQ(transport.read_line(), "{\"b\":2}");
  EXPECT_EQ(transport.read_line(), "");
  EXPECT_EQ(transport.read_line(), "last-without-newline");
  EXPECT_EQ(transport.read_line(), std::nullopt);
}

TEST(StdioTransport, AnOverlongLineIsCutJustPastTheLimitAndTheRestDiscarded) {
  Pipe in;
  Pipe out;
  StdioTransport transport(in.fds[0], out.fds[1], 100);
  auto reader = std::async(std::launch::async, [&] {
    std::vector<std::string> lines;
    while (auto line = transport.read_line()) lines.push_back(*line);
    return lines;
  });
  in.write(std::string(100, 'a') + "\n");                          // exactly the limit: whole
  in.write(std::string(150, 'b') + "\n");                          // in one read: cut
  for (int i = 0; i < 40; ++i) in.write(std::string(10000, 'c'));  // over many reads: cut
  in.write("\n{\"after\":1}\n");
  in.close_write();
  ASSERT_EQ(reader.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(reader.get(), (std::vector<std::string>{std::string(100, 'a'), std::string(101, 'b'),
                                                    std::string(101, 'c'), "{\"after\":1}"}));
}

TEST(StdioTransport, TryWriteLineNeverBlocksAndLeavesLongLinesToWriteLine) {
  Pipe in;
  Pipe out;
  StdioTransport transport(in.fds[0], out.fds[1], MessageLimits::kDefaultMaxBytes);
  EXPECT_FALSE(transport.try_write_line(std::string(PIPE_BUF, 'x')));  // with its newline: too long
  const std::string line(100, 'y');
  int written = 0;
  while (transport.try_write_line(line)) ASSERT_LT(++written, 100000) << "the pipe never filled";
  EXPECT_GT(written, 100);  // the pipe took lines until it was full, then refused without blocking
  auto reader = std::async(std::launch::async, [&] {
    std::string buffer;
    int lines = 0;
    while (auto got = read_line(out.fds[0], buffer, 10s)) {
      EXPECT_EQ(*got, line);
      if (++lines == written) break;
    }
    return lines;
  });
  EXPECT_EQ(reader.get(), written);
}

TEST(StdioTransport, WritesOneMessagePerLineFromManyThreads) {
  Pipe in;
  Pipe out;
  StdioTransport transport(in.fds[0], out.fds[1], MessageLimits::kDefaultMaxBytes);
  const std::string payload(5000, 'x');  // larger than PIPE_BUF, so atomicity is ours
  auto reader = std::async(std::launch::async, [&] {
    std::string buffer;
    int lines = 0;
    while (auto line = read_line(out.fds[0], buffer, 10s)) {
      EXPECT_EQ(*line, payload);
      if (++lines == 400) break;
    }
    return lines;
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&] {
      for (int i = 0; i < 100; ++i) EXPECT_TRUE(transport.write_line(payload));
    });
  }
  for (auto& w : writers) w.join();
  EXPECT_EQ(reader.get(), 400);
}

TEST(StdioTransport, CloseWakesABlockedReader) {
  Pipe in;
  Pipe out;
  StdioTransport transport(in.fds[0], out.fds[1], MessageLimits::kDefaultMaxBytes);
  auto reader = std::async(std::launch::async, [&] { return transport.read_line(); });
  EXPECT_EQ(reader.wait_for(50ms), std::future_status::timeout);
  transport.close();
  ASSERT_EQ(reader.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(reader.get(), std::nullopt);
  EXPECT_TRUE(transport.write_line("{}"));  // writing still works after close()
}

TEST(StdioTransport, WriteToClosedPipeFailsWithoutKillingUs) {
  struct sigaction ignore {};
  struct sigaction old {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &old);
  Pipe in;
  Pipe out;
  StdioTransport transport(in.fds[0], out.fds[1], MessageLimits::kDefaultMaxBytes);
  out.close_read();
  EXPECT_FALSE(transport.write_line("{}"));
  EXPECT_FALSE(transport.write_line("{}"));
  ::sigaction(SIGPIPE, &old, nullptr);
}

// Runs `serve` (returning the exit code) in a forked child whose stdin and stdout are the far
// ends of the two pipes; the parent keeps the near ends. Returns the child's pid, -1 on failure.
template <typename Serve>
pid_t fork_server(Pipe& to_child, Pipe& from_child, Serve serve) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(to_child.fds[0], STDIN_FILENO);
    ::dup2(from_child.fds[1], STDOUT_FILENO);
    to_child.close_write();
    from_child.close_read();
    ::_exit(serve());
  }
  if (pid > 0) {
    to_child.close_read();
    from_child.close_write();
  }
  return pid;
}

// The whole server in a child process with real stdin/stdout pipes; SIGTERM ends it cleanly.
TEST(ServeStdio, ServesOverPipesAndStopsOnSigterm) {
  Pipe to_child;
  Pipe from_child;
  const pid_t pid = fork_server(to_child, from_child, [] {
    testing::FakeAgent agent;
    const int code = serve_stdio(agent, server_options("9.9", 2));
    return code == 0 ? 0 : 10 + code;
  });
  ASSERT_GE(pid, 0);
  std::string buffer;

  to_child.write(
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}})"
      "\n");
  const auto init = read_line(from_child.fds[0], buffer, 10s);
  ASSERT_TRUE(init.has_value());
  EXPECT_EQ(json::parse(*init)["result"]["protocolVersion"], "2025-03-26");

  to_child.write(
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_command","arguments":{"command":"slow"}}})"
      "\n");
  to_child.write(R"({"jsonrpc":"2.0","id":3,"method":"ping"})"
                 "\n");
  const auto ping = read_line(from_child.fds[0], buffer, 10s);
  ASSERT_TRUE(ping.has_value());
  EXPECT_EQ(json::parse(*ping)["id"], 3);

  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  const auto cancelled = read_line(from_child.fds[0], buffer, 10s);
  ASSERT_TRUE(cancelled.has_value());
  const json response = json::parse(*cancelled);
  EXPECT_EQ(response["id"], 2);
  // Cancelled while running (structured result) or, if SIGTERM won the race, before it started.
  const json& result = response["result"];
  EXPECT_TRUE(result.contains("structuredContent")
                  ? result["structuredContent"]["cancelled"] == true
                  : result["content"][0]["text"].get<std::string>().find("cancelled") !=
                        std::string::npos)
      << result;

  int status = 0;
  for (int i = 0; i < 1000 && ::waitpid(pid, &status, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(WIFEXITED(status)) << "server did not exit after SIGTERM";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ServeStdio, EndOfInputEndsTheServer) {
  Pipe to_child;
  Pipe from_child;
  const pid_t pid = fork_server(to_child, from_child, [] {
    testing::FakeAgent agent;
    return serve_stdio(agent, ServerOptions{});
  });
  ASSERT_GE(pid, 0);
  to_child.write(R"({"jsonrpc":"2.0","id":1,"method":"ping"})"
                 "\n");
  to_child.close_write();
  std::string buffer;
  const auto ping = read_line(from_child.fds[0], buffer, 10s);
  ASSERT_TRUE(ping.has_value());
  EXPECT_EQ(json::parse(*ping)["result"], json::object());
  int status = 0;
  for (int i = 0; i < 1000 && ::waitpid(pid, &status, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Waits until `path` exists, at most `timeout`.
bool wait_for_file(const std::string& path, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// Waits for the child to exit, at most `timeout`; kills it (and says so) if it does not.
std::optional<int> wait_exit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(10ms);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return std::nullopt;
}

// A client that never reads stdout (the pipe stays full) once blocked a progress write under the
// reporter's lock on the call's thread: a cancel took effect only when the write returned, and
// SIGTERM could not end the server. Outbound messages now go through a queue with its own writer.
TEST(ServeStdio, AClientThatNeverReadsCannotBlockCancelsCallsOrSigterm) {
  char dir_template[] = "/tmp/execmcp-stall-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  Pipe to_child;
  Pipe from_child;
  const pid_t pid = fork_server(to_child, from_child, [&] {
    testing::FakeAgent agent;
    agent.set_marker_dir(dir);
    return serve_stdio(agent, server_options("9.9", 4));
  });
  ASSERT_GE(pid, 0);
  auto call = [&](int id, const std::string& command, bool progress) {
    json params{{"name", "execute_command"}, {"arguments", {{"command", command}}}};
    if (progress) params["_meta"] = {{"progressToken", id}};
    to_child.write(
        json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", params}}.dump() +
        "\n");
  };

  call(1, "flood", true);
  ASSERT_TRUE(wait_for_file(dir + "/flood-started", 10s));
  // Wait until the pipe to the client is full (it holds the same bytes for half a second): from
  // here on every write to it would block.
  int queued = -1;
  int previous = -2;
  for (int i = 0; i < 100 && (queued != previous || queued < 16384); ++i) {
    previous = queued;
    std::this_thread::sleep_for(500ms);
    ASSERT_EQ(::ioctl(from_child.fds[0], FIONREAD, &queued), 0);
  }
  ASSERT_GE(queued, 16384) << "the server did not fill the pipe";

  to_child.write(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})"
                 "\n");
  EXPECT_TRUE(wait_for_file(dir + "/flood-done", 10s)) << "the cancel did not reach the call";
  call(2, "touch other-call", false);
  EXPECT_TRUE(wait_for_file(dir + "/other-call", 10s)) << "another call did not run";
  call(3, "flood", true);  // one more call in flight, flooding, when SIGTERM arrives

  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  const auto status = wait_exit(pid, 20s);
  ASSERT_TRUE(status.has_value()) << "the server did not exit after SIGTERM (killed it)";
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace execmcp::host::mcp
