// Tests of the audit log's JSON lines: shape, escaping of odd bytes, appending.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "agent/audit_log.hpp"
#include "config/config.hpp"
#include "test_support.hpp"

namespace execmcp::host {
namespace {

TEST(AuditLog, JsonLineHasEveryField) {
  AuditRecord record;
  record.agent_id = "a";
  record.instance_id = "1-f";
  record.command = "echo \"hi\"\n";
  record.verdict = "blocked:sanitize/sudo";
  record.reason = "no sudo";
  record.exit_code = -1;
  const std::string line = AuditLog::to_json_line(record);
  EXPECT_EQ(line.find('\n'), std::string::npos);  // one record, one line
  const auto json = nlohmann::json::parse(line);
  EXPECT_EQ(json["command"], "echo \"hi\"\n");
  EXPECT_EQ(json["verdict"], "blocked:sanitize/sudo");
  EXPECT_EQ(json["reason"], "no sudo");
  EXPECT_FALSE(json.contains("error"));
  EXPECT_THAT(json["time"].get<std::string>(),
              ::testing::MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T.*Z"));
}

TEST(AuditLog, AnEgressRecordNamesTheHostPortAndMethodOthersDoNot) {
  AuditRecord record;
  record.tool = "egress";
  record.verdict = "refused";
  record.remote_host = "denied.test";
  record.remote_port = 80;
  record.method = "GET";
  const auto json = nlohmann::json::parse(AuditLog::to_json_line(record));
  EXPECT_EQ(json["host"], "denied.test");
  EXPECT_EQ(json["port"], 80);
  EXPECT_EQ(json["method"], "GET");
  record.remote_host = std::string(128 * 1024, 'h');  // bounded like every string field
  const auto cut = nlohmann::json::parse(AuditLog::to_json_line(record));
  EXPECT_LE(cut["host"].get<std::string>().size(), 4096u + 32u);
  EXPECT_EQ(cut["cut"]["host"]["bytes"], 131072);

  AuditRecord command;
  command.tool = "execute_command";
  const auto plain = nlohmann::json::parse(AuditLog::to_json_line(command));
  EXPECT_FALSE(plain.contains("host"));
  EXPECT_FALSE(plain.contains("port"));
}

TEST(AuditLog, InvalidUtf8IsReplacedNotFatal) {
  AuditRecord record;
  record.command = std::string("cat \xff\xfe file");
  const auto json = nlohmann::json::parse(AuditLog::to_json_line(record));
  EXPECT_THAT(json["command"].get<std::string>(), ::testing::HasSubstr("file"));
}

std::string hex(const TokenDigest& digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  for (const unsigned char byte : digest) {
    text += kHex[byte >> 4];
    text += kHex[byte & 15];
  }
  return text;
}

// Issue 17: the writer bounds every string field itself, so no tool can write an unbounded
// record; a cut field keeps its size and SHA-256, which match the whole value kept elsewhere.
TEST(AuditLog, EveryStringFieldIsCutWithAMarkerAndTheCommandKeepsItsDigest) {
  const std::string big(128 * 1024, 'x');
  AuditRecord record;
  record.agent_id = record.instance_id = record.tool = record.principal = big;
  record.path = record.command = record.work_dir = record.shell_id = big;
  record.verdict = record.reason = record.error = big;
  const std::string line = AuditLog::to_json_line(record);
  EXPECT_LE(line.size(), 64u * 1024u);
  const auto json = nlohmann::json::parse(line);
  for (const char* field : {"agent", "instance", "tool", "principal", "path", "command", "work_dir",
                            "shell_id", "verdict", "reason", "error"}) {
    ASSERT_TRUE(json.contains(field)) << field;
    const std::string value = json[field].get<std::string>();
    EXPECT_LE(value.size(), 4096u + 32u) << field;
    EXPECT_THAT(value, ::testing::EndsWith("\xE2\x80\xA6 (131072 bytes, cut)")) << field;
  }
  ASSERT_TRUE(json.contains("cut")) << line.substr(0, 200);
  EXPECT_EQ(json["cut"]["command"]["bytes"], 131072);
  EXPECT_EQ(json["cut"]["command"]["sha256"], hex(sha256_digest(big)));

  AuditRecord small;
  small.command = "ls";
  EXPECT_FALSE(nlohmann::json::parse(AuditLog::to_json_line(small)).contains("cut"));
}

TEST(AuditLog, TheFileGetsTheBoundedLineToo) {
  tests::TempDir dir;
  const auto file = dir.path() / "audit.jsonl";
  {
    AuditLog log(file.string());
    AuditRecord record;
    record.tool = "execute_command";
    record.command = std::string(1024 * 1024, 'c');
    record.error = std::string(1024 * 1024, 'e');
    log.record(record);
  }
  const std::string text = tests::read_text(file);
  EXPECT_LE(text.size(), 16u * 1024u);
  EXPECT_EQ(text.find('\n'), text.size() - 1);
}

TEST(AuditLog, AppendsToAnExistingFile) {
  tests::TempDir dir;
  const auto file = dir.path() / "nested" / "audit.jsonl";
  tests::write_text(file, "{\"old\":true}\n");
  {
    AuditLog log(file.string());
    AuditRecord record;
    record.command = "ls";
    log.record(record);
  }
  const std::string text = tests::read_text(file);
  EXPECT_EQ(text.rfind("{\"old\":true}\n", 0), 0u);
  EXPECT_THAT(text, ::testing::HasSubstr("\"command\":\"ls\""));
}

TEST(AuditLog, UnwritableFileIsAClearError) {
  EXPECT_THROW(AuditLog("/proc/execmcp-cannot-write-here/audit.jsonl"), std::runtime_error);
}

}  // namespace
}  // namespace execmcp::host
