// Tests for the env-file parser of the Docker backends' credentials (KEY=VALUE lines).
#include "docker_common/settings/env_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace execmcp::plugins::docker_common {
namespace {

using Vars = std::map<std::string, std::string>;

struct Case {
  const char* name;
  std::string text;
  Vars vars;
};

TEST(EnvFile, ParsesTheLinesOfTheTable) {
  const Case cases[] = {
      {"empty", "", {}},
      {"plain", "A=1\nB=two\n", {{"A", "1"}, {"B", "two"}}},
      {"no final newline", "A=1", {{"A", "1"}}},
      {"blank and comment lines", "\n   \n# A=1\n  # comment\nB=2\n", {{"B", "2"}}},
      {"export prefix", "export A=1\nexport\tB=2\n", {{"A", "1"}, {"B", "2"}}},
      {"a key named export", "export=1\n", {{"export", "1"}}},
      {"trimmed key and value", "  A  =   spaced out  \n", {{"A", "spaced out"}}},
      {"split at the first =", "A=b=c==\n", {{"A", "b=c=="}}},
      {"empty value", "A=\nB=\"\"\n", {{"A", ""}, {"B", ""}}},
      {"double quotes", "A=\"x y\"\n", {{"A", "x y"}}},
      {"single quotes", "A='x y'\n", {{"A", "x y"}}},
      {"only one pair removed", "A=\"\"x\"\"\n", {{"A", "\"x\""}}},
      {"spaces kept inside quotes", "A=\"  x  \"\n", {{"A", "  x  "}}},
      {"mismatched quotes kept",
       "A=\"x'\nB=\"x\nC=x\"\n",
       {{"A", "\"x'"}, {"B", "\"x"}, {"C", "x\""}}},
      {"one lone quote kept", "A=\"\n", {{"A", "\""}}},
      {"no expansion",
       "A=$HOME\nB=${X:-y}\nC=`id`\n",
       {{"A", "$HOME"}, {"B", "${X:-y}"}, {"C", "`id`"}}},
      {"no escapes", "A=\"a\\nb\"\n", {{"A", "a\\nb"}}},
      {"hash inside a value kept",
       "A=x#y\nB=x # y\nC=\"#\"\n",
       {{"A", "x#y"}, {"B", "x # y"}, {"C", "#"}}},
      {"last duplicate wins", "A=1\nA=2\nB=3\nA=4\n", {{"A", "4"}, {"B", "3"}}},
      {"CRLF", "A=1\r\nB=\"2\"\r\n\r\n# c\r\n", {{"A", "1"}, {"B", "2"}}},
      {"UTF-8 byte order mark",
       "\xEF\xBB\xBF"
       "A=1\n",
       {{"A", "1"}}},
      {"underscores and digits", "_=1\n_A9=2\na_b=3\n", {{"_", "1"}, {"_A9", "2"}, {"a_b", "3"}}},
      {"UTF-8 value", "A=h\xC3\xA9llo\n", {{"A", "h\xC3\xA9llo"}}},
  };
  for (const auto& c : cases) {
    const auto parsed = parse_env_file(c.text, "/etc/x.env");
    EXPECT_EQ(parsed.error, "") << c.name;
    EXPECT_EQ(parsed.vars, c.vars) << c.name;
  }
}

struct BadCase {
  const char* name;
  std::string text;
  std::string error;  // exact
};

TEST(EnvFile, RefusesABadLineWithFileAndLineAndNeverTheValue) {
  const BadCase cases[] = {
      {"no =", "A=1\nsecret-token-value\n",
       "/etc/x.env:2: expected NAME=value (a line without '=')"},
      {"empty key", "=hunter2\n", "/etc/x.env:1: expected NAME=value (the name is empty)"},
      {"bad key", "\n\nMY-KEY=hunter2\n",
       "/etc/x.env:3: 'MY-KEY' is not a variable name (letters, digits and '_', not starting "
       "with a digit)"},
      {"key starting with a digit", "1A=hunter2\n",
       "/etc/x.env:1: '1A' is not a variable name (letters, digits and '_', not starting with a "
       "digit)"},
      {"space inside the key", "A B=hunter2\n",
       "/etc/x.env:1: 'A B' is not a variable name (letters, digits and '_', not starting with "
       "a digit)"},
      {"NUL in the value", std::string("A=hun\0ter2\n", 11),
       "/etc/x.env:1: the value of A holds a NUL byte, which no environment can carry"},
      {"export alone", "export\n", "/etc/x.env:1: expected NAME=value (a line without '=')"},
  };
  for (const auto& c : cases) {
    const auto parsed = parse_env_file(c.text, "/etc/x.env");
    EXPECT_EQ(parsed.error, c.error) << c.name;
    EXPECT_TRUE(parsed.vars.empty()) << c.name;
    EXPECT_EQ(parsed.error.find("hunter2"), std::string::npos) << c.name;
    EXPECT_EQ(parsed.error.find("secret-token"), std::string::npos) << c.name;
  }
}

TEST(EnvFile, ALongBadKeyIsCutShortInTheError) {
  const std::string key(500, '-');
  const auto parsed = parse_env_file(key + "=v\n", "f");
  EXPECT_LT(parsed.error.size(), 200u);
  EXPECT_NE(parsed.error.find("f:1:"), std::string::npos);
}

// Found by fuzz.env_file: a valid but long name was quoted whole when its value held a NUL.
TEST(EnvFile, ALongValidKeyIsCutShortInTheNulError) {
  const std::string key(500, 'K');
  const auto parsed = parse_env_file(key + std::string("=a\0b\n", 5), "f");
  EXPECT_LT(parsed.error.size(), 200u) << parsed.error;
  EXPECT_NE(parsed.error.find("f:1: the value of KKK"), std::string::npos) << parsed.error;
  EXPECT_NE(parsed.error.find("NUL"), std::string::npos) << parsed.error;
}

TEST(EnvFile, ReadsAFileAndNamesAMissingOne) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("execmcp-env-file-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / "a.env").string();
  std::ofstream(path) << "export TOKEN='abc def'\n";
  auto read = read_env_file(path);
  EXPECT_EQ(read.error, "");
  EXPECT_EQ(read.vars, (Vars{{"TOKEN", "abc def"}}));

  const auto missing = read_env_file((dir / "nope.env").string());
  EXPECT_EQ(missing.error, "env_file '" + (dir / "nope.env").string() +
                               "' cannot be read: No such file or directory");
  const auto directory = read_env_file(dir.string());
  EXPECT_NE(directory.error.find("is not a regular file"), std::string::npos) << directory.error;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace execmcp::plugins::docker_common
