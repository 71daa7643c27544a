// Issue 17's class tests: whatever a client sends and whatever a plugin logs, every line the
// server logs and every audit record it writes is bounded and escaped, and a read of a background
// shell costs about what it asks. The calls go through a real MCP session and ConfiguredAgent, and
// every tool tools/list offers is called, so a new tool, log call or audit field that forgets the
// bound fails here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <set>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "agent/audit_log.hpp"
#include "agent/bounded_text.hpp"
#include "agent/configured_agent.hpp"
#include "agent/fake_background_backend.hpp"
#include "agent/spdlog_sink.hpp"
#include "common/utf8.hpp"
#include "test_support.hpp"
#include "transport/stdio/memory_transport.hpp"
#include "transport/stdio/session.hpp"

namespace execmcp::host {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Every formatted line the logger writes, as the terminal would get it.
class CapturedLines final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::vector<std::string> lines() {
    std::lock_guard lock(mutex_);
    return lines_;
  }
  std::size_t bytes() {
    std::size_t total = 0;
    for (const auto& line : lines()) total += line.size();
    return total;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    lines_.emplace_back(formatted.data(), formatted.size());
  }
  void flush_() override {}

 private:
  std::vector<std::string> lines_;
};

// Installs the server's logger on a CapturedLines for the test; puts the previous one back.
class ServerLog {
 public:
  ServerLog() : previous_(spdlog::default_logger()), level_(spdlog::get_level()) {
    install_server_logger(sink_, spdlog::level::trace);
  }
  ~ServerLog() {
    spdlog::set_default_logger(previous_);
    spdlog::set_level(level_);
  }
  ServerLog(const ServerLog&) = delete;
  ServerLog& operator=(const ServerLog&) = delete;
  CapturedLines& sink() { return *sink_; }

 private:
  std::shared_ptr<CapturedLines> sink_ = std::make_shared<CapturedLines>();
  std::shared_ptr<spdlog::logger> previous_;
  spdlog::level::level_enum level_;
};

// The time and level the pattern puts before a message, and the newline after it.
constexpr std::size_t kLinePrefixBytes = 64;

// One log line is bounded and carries no control byte (but its final newline) and no invalid
// UTF-8.
void expect_safe_line(const std::string& line) {
  ASSERT_FALSE(line.empty());
  EXPECT_LE(line.size(), kLogRecordBytes + kLinePrefixBytes) << line.substr(0, 200);
  EXPECT_EQ(line.back(), '\n');
  const std::string_view body(line.data(), line.size() - 1);
  for (const char c : body) {
    const auto byte = static_cast<unsigned char>(c);
    ASSERT_TRUE(byte >= 0x20 && byte != 0x7F)
        << "control byte " << int(byte) << " in " << body.substr(0, 200);
  }
  EXPECT_TRUE(is_valid_utf8(body)) << body.substr(0, 200);
  EXPECT_EQ(body.find("\xC2\x9B"), std::string_view::npos);  // C1 CSI
}

// Valid UTF-8 that a terminal or a log reader would obey: ESC sequences (clear screen, set the
// window title), CR to overwrite a line, LF to forge one, NUL, DEL, C1 CSI, RIGHT-TO-LEFT OVERRIDE.
std::string hostile(std::size_t bytes) {
  static const std::string unit(
      "ok \x1b[2J\x1b]0;pwned\x07 \r\n[fake] audit ok\t\x7f\xc2\x9b"
      "31m \xe2\x80\xae evil\0 ",
      52);
  std::string text;
  text.reserve(bytes + unit.size());
  while (text.size() < bytes) text += unit;
  return text;
}

TEST(ServerLogger, ALargeRecordWithControlBytesIsOneBoundedEscapedLine) {
  ServerLog log;
  std::string message = hostile(1024 * 1024);
  message += "\xff\xfe";  // and invalid UTF-8
  spdlog::info("run {}", message);
  SpdlogSink plugin_sink("fake-plugin", "alpha");
  plugin_sink.log(sdk::LogLevel::Warn, message);
  const auto lines = log.sink().lines();
  ASSERT_EQ(lines.size(), 2u);
  for (const auto& line : lines) {
    expect_safe_line(line);
    EXPECT_NE(line.find("ok \\x1b[2J\\x1b]0;pwned\\x07 \\x0d\\x0a[fake]"), std::string::npos)
        << line.substr(0, 200);
    EXPECT_NE(line.find(" more bytes not logged)"), std::string::npos);
  }
  EXPECT_NE(lines[1].find("[fake-plugin agent=alpha] ok "), std::string::npos);

  // Short text passes as it is; escaping twice changes nothing.
  EXPECT_EQ(log_safe_text("plain text, caf\xC3\xA9"), "plain text, caf\xC3\xA9");
  const std::string once = log_safe_text(hostile(200) + "\xff");
  EXPECT_EQ(log_safe_text(once), once);
}

// A backend whose every answer and log message repeats what it was asked, as a hostile or broken
// plugin would.
class EchoingBackend final : public sdk::ExecutorBackend, public sdk::BackgroundProcesses {
 public:
  explicit EchoingBackend(sdk::LogSink& log) : log_(log) {}
  std::string start() override { return {}; }
  void stop() noexcept override {}
  void cleanup() noexcept override {}
  sdk::ExecResult execute(const sdk::ExecRequest& request) override {
    log_.log(sdk::LogLevel::Warn, "running " + request.command);
    sdk::ExecResult result;
    result.exit_code = 1;
    result.error = "cannot run " + request.command;
    result.stdout_data = request.command;
    result.stderr_data = request.work_dir;
    return result;
  }
  sdk::FileReadResult read_file(const sdk::FileReadRequest& request) override {
    log_.log(sdk::LogLevel::Error, "reading " + request.path);
    sdk::FileReadResult result;
    result.error = "cannot read " + request.path;
    return result;
  }
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest& request) override {
    log_.log(sdk::LogLevel::Info, "writing " + request.path);
    sdk::FileWriteResult result;
    result.error = "cannot write " + request.path;
    return result;
  }
  [[nodiscard]] sdk::BackendTraits traits() const override { return {}; }
  [[nodiscard]] void* query_interface(std::string_view id) noexcept override {
    if (id == sdk::kBackgroundProcessesId) return static_cast<sdk::BackgroundProcesses*>(this);
    return nullptr;
  }
  sdk::BackgroundStarted start_background(const sdk::BackgroundRequest& request,
                                          sdk::BackgroundObserver* observer) noexcept override {
    log_.log(sdk::LogLevel::Warn, "starting " + request.command);
    std::lock_guard lock(mutex_);
    observers_[next_id_] = observer;
    observer->on_output(sdk::StreamKind::Stdout, request.command);
    sdk::BackgroundStarted started;
    started.id = next_id_++;
    started.pid = 4242;
    return started;
  }
  void terminate_background(std::uint64_t id, std::chrono::milliseconds) noexcept override {
    sdk::BackgroundObserver* observer = nullptr;
    {
      std::lock_guard lock(mutex_);
      observer = std::exchange(observers_[id], nullptr);
    }
    if (observer != nullptr)
      observer->on_exit(sdk::BackgroundExit{-1, 15, true, hostile(64 * 1024)});
  }

 private:
  sdk::LogSink& log_;
  std::mutex mutex_;
  std::map<std::uint64_t, sdk::BackgroundObserver*> observers_;
  std::uint64_t next_id_ = 1;
};

// One agent served over an in-memory MCP session, its audit trail in a file.
struct ServedAgent {
  tests::TempDir dir;
  std::string audit_file = (dir.path() / "audit.jsonl").string();
  std::unique_ptr<ConfiguredAgent> agent;
  mcp::MemoryTransport transport;
  std::unique_ptr<mcp::Session> session;
  std::future<int> done;
  int next_id = 1;

  // `backend` takes the agent's plugin log sink.
  void serve(const std::function<PluginPtr<sdk::ExecutorBackend>(sdk::LogSink&)>& backend) {
    ConfiguredAgent::Parts parts;
    parts.id = "alpha";
    parts.cwd = "/ws";
    parts.backend_name = "fake";
    parts.log_sinks.push_back(std::make_unique<SpdlogSink>("fake", "alpha"));
    parts.backend = backend(*parts.log_sinks.back());
    parts.background.enabled = true;
    parts.background.max_running = 20;
    parts.audit = AuditLog::shared(audit_file);
    agent = std::make_unique<ConfiguredAgent>(std::move(parts));
    agent->start();
    mcp::ServerOptions options;
    options.server_version = "test";
    options.limits.max_bytes = 64 * 1024 * 1024;
    options.limits.max_values = 1000000;
    session = std::make_unique<mcp::Session>(*agent, transport, options);
    done = std::async(std::launch::async, [this] { return session->run(); });
  }
  ~ServedAgent() {
    transport.end_input();
    if (done.valid()) done.wait();
  }

  // Sends a request; returns its response line, as written ("" after 30 s).
  std::string request(const std::string& method, json params) {
    const int id = next_id++;
    transport.push_line(
        json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}}
            .dump());
    if (!transport.wait_for_response(id, 30s)) return {};
    for (const auto& line : transport.written()) {
      const auto message = json::parse(line, nullptr, false);
      if (message.is_object() && message.value("id", json()) == id) return line;
    }
    return {};
  }
  std::string call(const std::string& tool, json arguments) {
    return request("tools/call", json{{"name", tool}, {"arguments", std::move(arguments)}});
  }
  std::string audit_text() { return tests::read_text(audit_file); }
};

// Issue 17: with 10 shells of 128 KiB commands, one 150-byte status read wrote 128 KiB to the
// audit file and 128 KiB to stderr, and a list answered 2.6 MB.
TEST(BackgroundReads, CostAboutWhatTheyAskWhateverTheCommands) {
  ServerLog log;
  ServedAgent served;
  served.serve([](sdk::LogSink&) {
    return adopt_plugin_object<sdk::ExecutorBackend>(
        std::make_unique<testing::FakeBackgroundBackend>());
  });
  ASSERT_NE(served.request("initialize", json{{"protocolVersion", "2025-06-18"},
                                              {"capabilities", json::object()},
                                              {"clientInfo", {{"name", "t"}, {"version", "1"}}}}),
            "");
  const std::string command = "echo " + std::string(128 * 1024 - 5, 'x');
  std::string shell_id;
  for (int i = 0; i < 10; ++i) {
    const auto started = json::parse(served.call("start_background_shell", {{"command", command}}));
    ASSERT_EQ(started["result"]["structuredContent"]["success"], true) << started.dump();
    shell_id = started["result"]["structuredContent"]["shell_id"];
    EXPECT_EQ(started["result"]["structuredContent"]["command_truncated"], true);
  }

  const std::size_t audit_before = served.audit_text().size();
  const std::size_t log_before = log.sink().bytes();
  const std::string status = served.call("get_background_shell_status", {{"shell_id", shell_id}});
  const std::size_t audit_bytes = served.audit_text().size() - audit_before;
  const std::size_t log_bytes = log.sink().bytes() - log_before;
  const std::string list = served.call("list_background_shells", json::object());
  std::printf("status: answer %zu bytes, audit record %zu bytes, log %zu bytes; list: answer %zu\n",
              status.size(), audit_bytes, log_bytes, list.size());

  EXPECT_LE(audit_bytes, 2u * 1024u);
  EXPECT_LE(log_bytes, 4u * 1024u);
  EXPECT_LE(status.size(), 4u * 1024u);
  EXPECT_LE(list.size(), 10u * 3u * 1024u);
  const auto shown = json::parse(status)["result"]["structuredContent"];
  EXPECT_EQ(shown["command_truncated"], true);
  const std::string text = shown["command"];
  EXPECT_LE(text.size(), kBackgroundCommandShownBytes);
  EXPECT_THAT(text, ::testing::EndsWith("x\xE2\x80\xA6 (131072 bytes, cut)"));
  // Parsed into a local: a range-for over a member of a temporary would read freed memory.
  const json listed = json::parse(list);
  for (const auto& shell : listed["result"]["structuredContent"]["shells"])
    EXPECT_EQ(shell["command_truncated"], true);
}

// The arguments a hostile client sends to `tool` (every property of its input schema).
json hostile_arguments(const json& tool, const std::string& text) {
  json arguments = json::object();
  for (const auto& [name, schema] : tool["inputSchema"]["properties"].items()) {
    const json type = schema.value("type", json());
    if (type == "integer" || type == "number") {
      arguments[name] = 1;
    } else if (type == "boolean") {
      arguments[name] = true;
    } else {
      arguments[name] = text;
    }
  }
  return arguments;
}

TEST(HostileInput, EveryLogLineAndAuditRecordIsBoundedAndEscaped) {
  ServerLog log;
  ServedAgent served;
  served.serve([](sdk::LogSink& sink) {
    return adopt_plugin_object<sdk::ExecutorBackend>(std::make_unique<EchoingBackend>(sink));
  });
  const std::string big = hostile(256 * 1024);  // 16 times the log's bound, 64 times the audit's
  ASSERT_NE(served.request("initialize", json{{"protocolVersion", "2025-06-18"},
                                              {"capabilities", json::object()},
                                              {"clientInfo", {{"name", big}, {"version", big}}}}),
            "");
  served.transport.push_line(
      json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}.dump());

  const auto tools = json::parse(served.request("tools/list", json::object()))["result"]["tools"];
  ASSERT_GE(tools.size(), 9u);  // the four tools and the five background-shell tools
  // Twice: as it is, and without its NULs, which a path argument refuses before the agent sees it.
  std::string no_nul = big;
  std::replace(no_nul.begin(), no_nul.end(), '\0', '0');
  std::size_t calls = 0;
  for (const auto& tool : tools) {
    SCOPED_TRACE(tool["name"].get<std::string>());
    EXPECT_NE(served.call(tool["name"], hostile_arguments(tool, big)), "");
    EXPECT_NE(served.call(tool["name"], hostile_arguments(tool, no_nul)), "");
    calls += 2;
  }
  // A shell that exists, so the reads find a hostile command (and the kill a hostile error).
  const auto started =
      json::parse(served.call("start_background_shell", {{"command", big}}))["result"];
  const std::string id = started["structuredContent"].value("shell_id", "");
  ASSERT_FALSE(id.empty()) << started.dump().substr(0, 300);
  for (const char* tool : {"get_background_shell_status", "get_background_shell_output",
                           "kill_background_shell", "get_background_shell_status"})
    EXPECT_NE(served.call(tool, {{"shell_id", id}}), "");
  EXPECT_NE(served.call("list_background_shells", json::object()), "");
  calls += 6;
  // What the session itself logs: an unknown tool, an unknown method, an odd id, a cancel reason.
  EXPECT_NE(served.call(big, json::object()), "");
  EXPECT_NE(served.request(big, json::object()), "");
  served.transport.push_line(json{{"jsonrpc", "2.0"}, {"id", big}, {"method", "ping"}}.dump());
  served.transport.push_line(json{{"jsonrpc", "2.0"},
                                  {"method", "notifications/cancelled"},
                                  {"params", {{"requestId", big}, {"reason", big}}}}
                                 .dump());
  served.transport.push_line(big);                        // not JSON at all
  EXPECT_NE(served.request("ping", json::object()), "");  // all the above were handled
  served.transport.end_input();
  ASSERT_EQ(served.done.wait_for(30s), std::future_status::ready);
  served.agent->shutdown();

  const auto lines = log.sink().lines();
  ASSERT_GT(lines.size(), calls);
  bool escaped_seen = false;
  for (const auto& line : lines) {
    SCOPED_TRACE(line.substr(0, 120));
    expect_safe_line(line);
    escaped_seen |= line.find("\\x1b[2J") != std::string::npos;
  }
  EXPECT_TRUE(escaped_seen) << "no hostile text reached the log: the test tests nothing";

  const std::string audit = served.audit_text();
  std::set<std::string> audited;  // the tools whose calls reached the agent
  std::size_t cut_fields = 0;
  for (std::size_t at = 0, end; (end = audit.find('\n', at)) != std::string::npos; at = end + 1) {
    const std::string line = audit.substr(at, end - at);
    const auto record = json::parse(line);
    SCOPED_TRACE(record.value("tool", "?"));
    audited.insert(record.value("tool", ""));
    for (const auto& [key, value] : record.items()) {
      if (value.is_string()) {
        EXPECT_LE(value.get<std::string>().size(), kAuditFieldBytes) << key;
      }
    }
    cut_fields += record.contains("cut") ? record["cut"].size() : 0;
    EXPECT_LE(line.size(), 12u * 6u * kAuditFieldBytes);
  }
  EXPECT_GT(cut_fields, 0u);
  // Every tool but read_docstring (which refuses a module name that is not one) reached the agent.
  EXPECT_GE(audited.size(), tools.size() - 1) << audit.substr(0, 300);
}

}  // namespace
}  // namespace execmcp::host
