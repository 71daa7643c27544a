// Tests of the audit log's JSON lines: shape, escaping of odd bytes, appending.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "agent/audit_log.hpp"
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

TEST(AuditLog, InvalidUtf8IsReplacedNotFatal) {
  AuditRecord record;
  record.command = std::string("cat \xff\xfe file");
  const auto json = nlohmann::json::parse(AuditLog::to_json_line(record));
  EXPECT_THAT(json["command"].get<std::string>(), ::testing::HasSubstr("file"));
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
