// Tests for the tools called directly: read_file slicing, write_file, read_docstring against a
// real python3 and the execute_command argument handling.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/utf8.hpp"
#include "fake_agent.hpp"
#include "tools/read_docstring_command.hpp"
#include "tools/tool.hpp"

namespace execmcp::host::tools {
namespace {

using nlohmann::json;
using testing::FakeAgent;

class ToolsTest : public ::testing::Test {
 protected:
  ToolOutcome run(const Tool& tool, const json& arguments) {
    ToolContext context{agent_, nullptr, &cancel_, "test"};
    return tool.run(arguments, context);
  }
  ToolResult ok(const Tool& tool, const json& arguments) {
    ToolOutcome outcome = run(tool, arguments);
    if (auto* error = std::get_if<ArgumentError>(&outcome)) {
      ADD_FAILURE() << "argument error: " << error->message;
      return {};
    }
    return std::get<ToolResult>(outcome);
  }
  std::string argument_error(const Tool& tool, const json& arguments) {
    ToolOutcome outcome = run(tool, arguments);
    if (auto* error = std::get_if<ArgumentError>(&outcome)) return error->message;
    ADD_FAILURE() << "expected an argument error for " << arguments;
    return {};
  }

  FakeAgent agent_;
  sdk::CancelToken cancel_;
  Tool read_file_ = make_read_file_tool();
  Tool write_file_ = make_write_file_tool();
  Tool execute_ = make_execute_command_tool();
  Tool docstring_ = make_read_docstring_tool();
};

TEST_F(ToolsTest, ReadFileWholeFile) {
  agent_.put_file("/w/a.txt", "one\ntwo\nthree\n");
  const ToolResult r = ok(read_file_, json{{"path", "/w/a.txt"}});
  EXPECT_FALSE(r.is_error);
  EXPECT_EQ(r.structured["content"], "one\ntwo\nthree\n");
  EXPECT_EQ(r.structured["total_lines"], 3);
  EXPECT_EQ(r.structured["start_line"], 1);
  EXPECT_EQ(r.structured["offset"], 0);
  EXPECT_EQ(r.structured["lines_returned"], 3);
  EXPECT_EQ(r.structured["truncated"], false);
  EXPECT_EQ(r.text, "one\ntwo\nthree\n");
}

TEST_F(ToolsTest, ReadFileSlices) {
  agent_.put_file("/w/a.txt", "1\n2\n3\n4\n5");  // no newline at the end
  // offset counts the lines skipped from the start, as MassGen's file API defines it.
  ToolResult r = ok(read_file_, json{{"path", "/w/a.txt"}, {"offset", 1}, {"line_count", 2}});
  EXPECT_EQ(r.structured["content"], "2\n3\n");
  EXPECT_EQ(r.structured["total_lines"], 5);
  EXPECT_EQ(r.structured["start_line"], 2);
  EXPECT_EQ(r.structured["offset"], 1);
  EXPECT_EQ(r.structured["lines_returned"], 2);
  EXPECT_EQ(r.structured["truncated"], false);

  r = ok(read_file_, json{{"path", "/w/a.txt"}, {"offset", 3}, {"line_count", 100}});
  EXPECT_EQ(r.structured["content"], "4\n5");
  EXPECT_EQ(r.structured["lines_returned"], 2);

  r = ok(read_file_, json{{"path", "/w/a.txt"}, {"offset", 4}});
  EXPECT_EQ(r.structured["content"], "5");
  EXPECT_EQ(r.structured["start_line"], 5);
  EXPECT_EQ(r.structured["lines_returned"], 1);

  r = ok(read_file_, json{{"path", "/w/a.txt"}, {"offset", 2.0}, {"line_count", 1}});
  EXPECT_EQ(r.structured["content"], "3\n");
}

TEST_F(ToolsTest, ReadFileOffsetZeroStartsAtTheFirstLine) {
  agent_.put_file("/w/a.txt", "1\n2\n3\n");
  ToolResult r = ok(read_file_, json{{"path", "/w/a.txt"}, {"offset", 0}});
  EXPECT_FALSE(r.is_error);
  EXPECT_EQ(r.structured["content"], "1\n2\n3\n");
  EXPECT_EQ(r.structured["start_line"], 1);
  EXPECT_EQ(r.structured["offset"], 0);
  EXPECT_EQ(r.structured["lines_returned"], 3);

  r = ok(read_file_, json{{"path", "/w/a.txt"}, {"offset", 0}, {"line_count", 1}});
  EXPECT_EQ(r.structured["content"], "1\n");

  agent_.put_file("/w/empty", "");
  r = ok(read_file_, json{{"path", "/w/empty"}, {"offset", 0}});
  EXPECT_FALSE(r.is_error);
  EXPECT_EQ(r.structured["lines_returned"], 0);
  EXPECT_EQ(r.text, "(empty file)");
}

TEST_F(ToolsTest, ReadFileOffsetPastEndIsEmptyWithNotice) {
  agent_.put_file("/w/a.txt", "1\n2\n");
  const ToolResult r = ok(read_file_, json{{"path", "/w/a.txt"}, {"offset", 2}});
  EXPECT_FALSE(r.is_error);
  EXPECT_EQ(r.structured["content"], "");
  EXPECT_EQ(r.structured["lines_returned"], 0);
  EXPECT_EQ(r.structured["total_lines"], 2);
  EXPECT_NE(r.text.find("past the end"), std::string::npos) << r.text;

  const ToolResult far = ok(read_file_, json{{"path", "/w/a.txt"}, {"offset", INT64_MAX}});
  EXPECT_FALSE(far.is_error);
  EXPECT_EQ(far.structured["lines_returned"], 0);
  EXPECT_EQ(far.structured["offset"], INT64_MAX);
}

TEST_F(ToolsTest, ReadFileEmptyFile) {
  agent_.put_file("/w/empty", "");
  const ToolResult r = ok(read_file_, json{{"path", "/w/empty"}});
  EXPECT_EQ(r.structured["total_lines"], 0);
  EXPECT_EQ(r.structured["lines_returned"], 0);
  EXPECT_EQ(r.text, "(empty file)");
}

TEST_F(ToolsTest, ReadFileBadArguments) {
  EXPECT_NE(argument_error(read_file_, json{{"path", "/a"}, {"line_count", 0}}).find("line_count"),
            std::string::npos);
  EXPECT_NE(argument_error(read_file_, json{{"path", "/a"}, {"line_count", -1}}).find("line_count"),
            std::string::npos);
  EXPECT_NE(argument_error(read_file_, json{{"path", "/a"}, {"offset", -2}}).find("offset"),
            std::string::npos);
  EXPECT_NE(argument_error(read_file_, json{{"path", "/a"}, {"offset", -1}}).find("offset"),
            std::string::npos);
  EXPECT_NE(argument_error(read_file_, json::object()).find("path"), std::string::npos);
  EXPECT_NE(argument_error(read_file_, json{{"path", ""}}).find("path"), std::string::npos);
}

TEST_F(ToolsTest, ReadFileMissingIsToolError) {
  const ToolResult r = ok(read_file_, json{{"path", "/w/none"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(r.text.find("no such file"), std::string::npos);
  EXPECT_NE(r.text.find("/w/none"), std::string::npos);
}

TEST_F(ToolsTest, ReadFileBinaryIsReplacedWithNotice) {
  agent_.put_file("/w/bin", std::string("\x7F"
                                        "ELF\x02\x01\x01\x00\xFF\xFE\n\x89PNG",
                                        14));
  const ToolResult r = ok(read_file_, json{{"path", "/w/bin"}});
  EXPECT_FALSE(r.is_error);
  const std::string content = r.structured["content"];
  EXPECT_TRUE(is_valid_utf8(content));
  EXPECT_NE(content.find("\xEF\xBF\xBD"), std::string::npos);
  EXPECT_NE(r.structured["notice"].get<std::string>().find("not valid UTF-8"), std::string::npos);
  EXPECT_NO_THROW((void)r.structured.dump());
}

TEST_F(ToolsTest, ReadFileCapsLinesAndSaysHowToContinue) {
  std::string big;
  for (int i = 1; i <= 25000; ++i) big += std::to_string(i) + "\n";
  agent_.put_file("/w/big", big);
  const ToolResult r = ok(read_file_, json{{"path", "/w/big"}});
  EXPECT_EQ(r.structured["total_lines"], 25000);
  EXPECT_EQ(r.structured["lines_returned"], 20000);
  EXPECT_EQ(r.structured["truncated"], true);
  EXPECT_NE(r.text.find("pass offset=20000 "), std::string::npos) << r.text;
}

TEST_F(ToolsTest, WriteFileStoresAndReportsBytes) {
  const ToolResult r = ok(write_file_, json{{"path", "/w/new.txt"}, {"content", "hello\n"}});
  EXPECT_FALSE(r.is_error);
  EXPECT_EQ(r.structured["bytes_written"], 6);
  EXPECT_EQ(r.structured["path"], "/w/new.txt");
  EXPECT_EQ(agent_.file("/w/new.txt"), "hello\n");
}

TEST_F(ToolsTest, WriteFileRefusedIsToolError) {
  const ToolResult r = ok(write_file_, json{{"path", "/readonly/x"}, {"content", "x"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(r.text.find("outside"), std::string::npos);
  EXPECT_FALSE(agent_.file("/readonly/x").has_value());
}

TEST_F(ToolsTest, ExecuteCommandResultsCarryTheCommandAndTheDirectory) {
  ToolResult r = ok(execute_, json{{"command", "echo hi"}});
  EXPECT_EQ(r.structured["command"], "echo hi");
  // The agent did not say where it ran: the host reports the agent's cwd.
  EXPECT_EQ(r.structured["work_dir"], "/workspace/agent_a");
  r = ok(execute_, json{{"command", "echo hi"}, {"work_dir", "sub/../src"}});
  EXPECT_EQ(r.structured["work_dir"], "/workspace/agent_a/src");
  r = ok(execute_, json{{"command", "blocked"}, {"work_dir", "/abs"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(r.structured["command"], "blocked");
  EXPECT_EQ(r.structured["work_dir"], "/abs");
  const json required = execute_.output_schema["required"];
  EXPECT_NE(std::find(required.begin(), required.end(), "command"), required.end());
  EXPECT_NE(std::find(required.begin(), required.end(), "work_dir"), required.end());
}

TEST_F(ToolsTest, ExecuteCommandRejectsBadTimeoutsAndEmptyCommand) {
  EXPECT_NE(argument_error(execute_, json{{"command", "ls"}, {"timeout", 0}}).find("timeout"),
            std::string::npos);
  EXPECT_NE(argument_error(execute_, json{{"command", "ls"}, {"timeout", 1e12}}).find("timeout"),
            std::string::npos);
  EXPECT_NE(argument_error(execute_, json{{"command", "  "}}).find("command"), std::string::npos);
  EXPECT_EQ(agent_.executions(), 0);
}

TEST_F(ToolsTest, PathsWithANulByteAreRefused) {
  const std::string nul_path("/w/a.txt\0/../../etc/passwd", 27);
  agent_.put_file("/w/a.txt", "cut");
  EXPECT_NE(argument_error(read_file_, json{{"path", nul_path}}).find("NUL"), std::string::npos);
  EXPECT_NE(argument_error(write_file_, json{{"path", nul_path}, {"content", "x"}}).find("NUL"),
            std::string::npos);
  EXPECT_EQ(agent_.file("/w/a.txt"), "cut");
  EXPECT_NE(argument_error(execute_, json{{"command", "ls"}, {"work_dir", std::string("d\0x", 3)}})
                .find("work_dir"),
            std::string::npos);
  EXPECT_EQ(agent_.executions(), 0);
}

// An agent whose every command returns one prepared outcome, to test the rendering alone.
class CannedAgent final : public Agent {
 public:
  explicit CannedAgent(ExecuteOutcome outcome) : outcome_(std::move(outcome)) {}
  ExecuteOutcome execute(const ExecuteArgs&, sdk::OutputSink*, const sdk::CancelToken*) override {
    return outcome_;
  }
  sdk::ExecResult run_internal(const std::string&, const sdk::CancelToken*,
                               const std::string&) override {
    return {};
  }
  sdk::FileReadResult read_file(const sdk::FileReadRequest&, const std::string&) override {
    return {};
  }
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest&, const std::string&) override {
    return {};
  }
  [[nodiscard]] const std::string& id() const override { return id_; }
  [[nodiscard]] const std::string& cwd() const override { return id_; }
  [[nodiscard]] sdk::BackendTraits traits() const override { return {}; }
  BackgroundShellControl* background_shells() override { return &shells_; }
  // Only kill is asked; the rest answer as an agent without shells.
  struct CannedShells final : BackgroundShellControl {
    BackgroundStartResult start(const BackgroundStartArgs& args) override {
      return UnavailableBackgroundShells().start(args);
    }
    BackgroundOutput output(const std::string&, const std::optional<std::string>&,
                            std::optional<std::size_t>, const std::string&) override {
      return {};
    }
    std::optional<BackgroundShellStatus> status(const std::string&, const std::string&) override {
      return std::nullopt;
    }
    BackgroundKillResult kill(const std::string&, const std::string&) override { return kill_; }
    std::vector<BackgroundShellStatus> list(const std::string&) override { return {}; }
    BackgroundKillResult kill_;
  } shells_;

 private:
  ExecuteOutcome outcome_;
  std::string id_ = "canned";
};

// A kill whose process tree the backend could not confirm ended (its supervisor was killed) is
// not answered "killed": the answer says what the shell's status is and why.
TEST(KillBackgroundShellTool, SaysKilledOnlyWhenTheShellEndedKilled) {
  const auto tools = make_background_shell_tools();
  const auto kill = std::find_if(tools.begin(), tools.end(),
                                 [](const Tool& t) { return t.name == "kill_background_shell"; });
  ASSERT_NE(kill, tools.end());
  CannedAgent agent{ExecuteOutcome{}};
  ToolContext context{agent, nullptr, nullptr, "test"};
  agent.shells_.kill_.was_running = true;
  agent.shells_.kill_.status.shell_id = "shell_0000000a";
  agent.shells_.kill_.status.status = "killed";
  auto result = std::get<ToolResult>(kill->run(json{{"shell_id", "shell_0000000a"}}, context));
  EXPECT_FALSE(result.is_error);
  EXPECT_EQ(result.structured["status"], "killed");

  agent.shells_.kill_.status.status = "failed";
  agent.shells_.kill_.status.error = "the supervisor of the process was lost";
  result = std::get<ToolResult>(kill->run(json{{"shell_id", "shell_0000000a"}}, context));
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(result.structured["success"], false);
  EXPECT_EQ(result.structured["status"], "failed");
  EXPECT_EQ(result.structured["error"], "the supervisor of the process was lost");
  EXPECT_NE(result.text.find("the supervisor of the process was lost"), std::string::npos);
}

TEST(ExecuteCommandTool, ReportsTheBackendsDirectoryAndRepairsTheCommand) {
  ExecuteOutcome outcome;
  outcome.result.exit_code = 0;
  outcome.result.work_dir = "/real/place";
  CannedAgent agent(outcome);
  ToolContext context{agent, nullptr, nullptr, "test"};
  const auto result = std::get<ToolResult>(
      make_execute_command_tool().run(json{{"command", "echo \xFF"}}, context));
  EXPECT_EQ(result.structured["work_dir"], "/real/place");
  EXPECT_EQ(result.structured["command"], "echo \xEF\xBF\xBD");
}

// The size of the tools/call result as the session sends it: text and structuredContent.
std::size_t response_size(const ToolResult& r) {
  const json response{{"content", json::array({json{{"type", "text"}, {"text", r.text}}})},
                      {"structuredContent", r.structured},
                      {"isError", r.is_error}};
  return response.dump(-1, ' ', false, json::error_handler_t::replace).size();
}

TEST(ExecuteCommandOutput, ResponseSizeIsBoundedByTheCapWhateverTheBytes) {
  constexpr std::size_t kCap = 64 * 1024;
  const std::string cases[] = {
      std::string(kCap, '\0'),  // \u0000: 6 bytes each
      std::string(kCap, '\x01'),
      std::string(kCap, '\xFF'),  // U+FFFD: 3 bytes each
      std::string(kCap, '"'),
      std::string(kCap, '\\'),  // 2 bytes each
      std::string(kCap / 2, '\xC3') + std::string(kCap / 2, '\n'),
  };
  for (const auto& data : cases) {
    ExecuteOutcome outcome;
    outcome.output_cap = kCap;
    outcome.result.exit_code = 0;
    outcome.result.stdout_data = data;
    outcome.result.stderr_data = data;
    CannedAgent agent(outcome);
    ToolContext context{agent, nullptr, nullptr, "test"};
    const auto result =
        std::get<ToolResult>(make_execute_command_tool().run(json{{"command", "flood"}}, context));
    EXPECT_LE(response_size(result), 2 * (kCap + kCap) + 4096)
        << "first byte " << static_cast<int>(data[0]);
    EXPECT_EQ(result.structured["truncated"], true);
    EXPECT_NE(result.text.find("output truncated"), std::string::npos);
  }
  // Plain text up to the cap is shown whole and not called truncated.
  ExecuteOutcome plain;
  plain.output_cap = kCap;
  plain.result.exit_code = 0;
  plain.result.stdout_data = std::string(kCap, 'a');
  CannedAgent agent(plain);
  ToolContext context{agent, nullptr, nullptr, "test"};
  const auto result =
      std::get<ToolResult>(make_execute_command_tool().run(json{{"command", "a"}}, context));
  EXPECT_EQ(result.structured["stdout"].get<std::string>().size(), kCap);
  EXPECT_EQ(result.structured["truncated"], false);
}

TEST_F(ToolsTest, ReadFileContentIsBoundedAsEscapedAndSaysHowToContinue) {
  std::string data;
  for (int i = 0; i < 100000; ++i) data += std::string(9, '\0') + "\n";  // 56 bytes escaped
  agent_.put_file("/w/nul.txt", data);
  const ToolResult r = ok(read_file_, json{{"path", "/w/nul.txt"}});
  EXPECT_LE(response_size(r), 2 * 1024 * 1024 + 4096);
  EXPECT_EQ(r.structured["truncated"], true);
  const auto returned = r.structured["lines_returned"].get<std::int64_t>();
  EXPECT_GT(returned, 0);
  EXPECT_LT(returned, 100000);
  EXPECT_EQ(r.structured["content"].get<std::string>().size(), 10u * returned) << "cut mid-line";
  EXPECT_NE(r.text.find("pass offset=" + std::to_string(returned) + " "), std::string::npos);
}

TEST(Utf8Budget, CutsBetweenCharactersAtTheEscapedSize) {
  bool cut = false;
  EXPECT_EQ(sanitize_utf8_within(std::string("a\0b", 3), 7, cut), std::string("a\0", 2));
  EXPECT_TRUE(cut);
  EXPECT_EQ(sanitize_utf8_within("\xE2\x82\xAC\xE2\x82\xAC", 5, cut), "\xE2\x82\xAC");
  EXPECT_TRUE(cut);
  EXPECT_EQ(sanitize_utf8_within("x\xFFy", 5, cut), "x\xEF\xBF\xBDy");
  EXPECT_FALSE(cut);
  EXPECT_EQ(json_escaped_size("\"\\\n\x7F"), 7u);
}

TEST(ShellQuote, RoundTripsThroughSh) {
  const std::string nasty = "it's $(rm -rf /) `x` \"q\" \\ ; | & \n end";
  const auto result = execmcp::host::testing::run_shell("printf %s " + shell_quote(nasty));
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.stdout_data, nasty);
}

class ReadDocstringTest : public ToolsTest {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("execmcp-docstring-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_ / "mytools");
    // Importing the package would create this marker; parsing must not.
    write("mytools/__init__.py",
          "open(" + quoted((dir_ / "imported").string()) + ", 'w').write('yes')\n");
    write("mytools/web.py",
          "\"\"\"Web helpers.\"\"\"\n"
          "import does_not_exist_anywhere\n"
          "def fetch(url):\n"
          "    \"\"\"Fetch a URL.\n\n    Returns the body as text (caf\xC3\xA9).\n    \"\"\"\n"
          "    return url\n"
          "async def poll():\n    \"\"\"Poll forever.\"\"\"\n"
          "def bare():\n    return 1\n"
          "class Client:\n"
          "    \"\"\"A client.\"\"\"\n"
          "    def get(self, key):\n        \"\"\"Get one key.\"\"\"\n");
    agent_.set_tools_dir(dir_.string());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void write(const std::string& relative, const std::string& text) {
    std::ofstream(dir_ / relative) << text;
  }
  static std::string quoted(const std::string& s) { return "'" + s + "'"; }

  std::filesystem::path dir_;
};

TEST_F(ReadDocstringTest, ReadsFunctionDocstringWithoutImporting) {
  const ToolResult r = ok(docstring_, json{{"module", "mytools.web"}, {"function", "fetch"}});
  ASSERT_FALSE(r.is_error) << r.text;
  EXPECT_EQ(r.structured["docstring"], "Fetch a URL.\n\nReturns the body as text (caf\xC3\xA9).");
  EXPECT_EQ(r.structured["module"], "mytools.web");
  EXPECT_EQ(r.structured["function"], "fetch");
  EXPECT_EQ(r.text, r.structured["docstring"]);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "imported"));
  EXPECT_NE(agent_.last_internal().find("python3"), std::string::npos);
}

TEST_F(ReadDocstringTest, ReadsMethodsAsyncFunctionsAndMissingDocstrings) {
  EXPECT_EQ(ok(docstring_, json{{"module", "mytools.web"}, {"function", "Client.get"}})
                .structured["docstring"],
            "Get one key.");
  EXPECT_EQ(
      ok(docstring_, json{{"module", "mytools.web"}, {"function", "poll"}}).structured["docstring"],
      "Poll forever.");
  const ToolResult bare = ok(docstring_, json{{"module", "mytools.web"}, {"function", "bare"}});
  EXPECT_FALSE(bare.is_error);
  EXPECT_EQ(bare.structured["docstring"], "");
  EXPECT_NE(bare.text.find("no docstring"), std::string::npos);
}

TEST_F(ReadDocstringTest, NotFoundIsToolError) {
  ToolResult r = ok(docstring_, json{{"module", "mytools.web"}, {"function", "nothing"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(r.text.find("'nothing' not found"), std::string::npos) << r.text;
  r = ok(docstring_, json{{"module", "mytools.absent"}, {"function", "f"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(r.text.find("not found"), std::string::npos) << r.text;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "imported"));
}

TEST_F(ReadDocstringTest, RejectsNamesThatAreNotIdentifiers) {
  for (const char* module : {"a;b", "a..b", ".a", "a b", "1abc", "a/b", ""}) {
    EXPECT_NE(
        argument_error(docstring_, json{{"module", module}, {"function", "f"}}).find("module"),
        std::string::npos)
        << module;
  }
  for (const char* function : {"f()", "a.b.c", "x'y", "-f"}) {
    EXPECT_NE(
        argument_error(docstring_, json{{"module", "m"}, {"function", function}}).find("function"),
        std::string::npos)
        << function;
  }
  EXPECT_TRUE(agent_.last_internal().empty());
}

TEST(ReadDocstringOutput, HelperFailureIsReported) {
  sdk::ExecResult result;
  result.exit_code = 127;
  result.stderr_data = "sh: python3: not found\n";
  const DocstringLookup lookup = parse_read_docstring_output(result);
  EXPECT_NE(lookup.error.find("python3: not found"), std::string::npos);
  EXPECT_NE(lookup.error.find("127"), std::string::npos);
}

// The helper runs in the agent's Python environment, so its output is the agent's to shape: a
// reply nested 200,000 levels deep is refused like any over-deep message, never parsed
// recursively (which overflowed the stack).
TEST(ReadDocstringOutput, DeeplyNestedReplyIsRefusedNotParsedRecursively) {
  sdk::ExecResult result;
  result.exit_code = 0;
  const std::size_t depth = 200000;
  result.stdout_data =
      "{\"ok\":true,\"docstring\":" + std::string(depth, '[') + std::string(depth, ']') + "}\n";
  const DocstringLookup lookup = parse_read_docstring_output(result);
  EXPECT_NE(lookup.error.find("the Python helper failed"), std::string::npos) << lookup.error;
}

}  // namespace
}  // namespace execmcp::host::tools
