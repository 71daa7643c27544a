// Tests for the sanitize rules: lines that must be blocked (with their rule), lines that must pass.
#include "execmcp/plugins/sanitize/sanitize_rules.hpp"

#include <stdexcept>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace execmcp::plugins::sanitize {
namespace {

using ::testing::HasSubstr;

struct Blocked {
  const char* line;
  const char* rule;
};

// Each line must be denied by exactly this rule with the default settings.
const Blocked kBlocked[] = {
    {"rm -rf /", "rm-root"},
    {"rm -fr /", "rm-root"},
    {"rm -r -f /*", "rm-root"},
    {"rm -Rf /", "rm-root"},
    {"rm --recursive --force /", "rm-root"},
    {"rm -r /", "rm-root"},
    {"rm -rf ~", "rm-root"},
    {"rm -rf ~/", "rm-root"},
    {"rm -rf ~/*", "rm-root"},
    {"rm -rf $HOME", "rm-root"},
    {"rm -rf \"$HOME\"", "rm-root"},
    {"rm -rf ${HOME}", "rm-root"},
    {"rm -rf $HOME/*", "rm-root"},
    {"rm -rf //", "rm-root"},
    {"rm -rf /./", "rm-root"},
    {"rm -rf /..", "rm-root"},
    {"rm -rf /tmp/../", "rm-root"},
    {"rm -rf / --no-preserve-root", "rm-root"},
    {"rm --no-preserve-root -r /", "rm-root"},
    {"rm -v -rf -- /", "rm-root"},
    {"/bin/rm -rf /", "rm-root"},
    {"cd /tmp && rm -rf /", "rm-root"},
    {"echo hi; rm -rf /", "rm-root"},
    {"ls | rm -rf /", "rm-root"},
    {"false || rm -rf /", "rm-root"},
    {"(rm -rf /)", "rm-root"},
    {"{ rm -rf /; }", "rm-root"},
    {"bash -c 'rm -rf /'", "rm-root"},
    {"sh -c \"cd / && rm -rf /*\"", "rm-root"},
    {"$(rm -rf /)", "rm-root"},
    {"echo $(rm -rf /)", "rm-root"},
    {"echo `rm -rf ~`", "rm-root"},
    {"eval 'rm -rf /'", "rm-root"},
    {"sudo rm -rf /", "rm-root"},
    {"nohup rm -rf / &", "rm-root"},
    {"FOO=1 env BAR=2 rm -rf /", "rm-root"},
    {"r\"m\" -rf /", "rm-root"},
    {"if true; then rm -rf /; fi", "rm-root"},
    {"time rm -rf /", "rm-root"},
    {"\\rm -rf /", "rm-root"},
    {"rm -rf ~root", "rm-root"},
    {"xargs rm -rf /", "rm-root"},
    {"cat /dev/sda > /dev/sdb", "block-device-write"},
    {"> /dev/sda", "block-device-write"},
    {"echo x 1>/dev/sda", "block-device-write"},
    {"mv ~/.bashrc /dev/null", "move-to-dev-null"},
    {"bash <<'EOF'\nrm -rf /\nEOF", "rm-root"},
    {"dd if=/dev/zero of=/dev/sda", "dd-device"},
    {"dd if=image.iso of=/dev/nvme0n1 bs=4M", "dd-device"},
    {"dd of=/dev/mmcblk0 if=x", "dd-device"},
    {"dd if=/dev/zero of=/dev/mapper/root", "dd-device"},
    {"echo x > /dev/sda", "block-device-write"},
    {"cat image >> /dev/vda", "block-device-write"},
    {"cat image >| /dev/xvda", "block-device-write"},
    {"cmd &> /dev/hda", "block-device-write"},
    {"echo x | tee /dev/sdb", "block-device-write"},
    {"mkfs.ext4 /dev/sda1", "block-device-write"},
    {"mkfs -t xfs /dev/nvme0n1p1", "block-device-write"},
    {"fdisk /dev/sda", "block-device-write"},
    {"wipefs -a /dev/sda", "block-device-write"},
    {"shred -n 3 /dev/sda", "block-device-write"},
    {"cp disk.img /dev/loop0", "block-device-write"},
    {"mv file /dev/null", "move-to-dev-null"},
    {"mv -f a b /dev/null", "move-to-dev-null"},
    {"mv -t /dev/null a", "move-to-dev-null"},
    {":(){ :|:& };:", "fork-bomb"},
    {":(){ :|: & };:", "fork-bomb"},
    {"bomb(){ bomb|bomb& }; bomb", "fork-bomb"},
    {"f() { f | f & }; f", "fork-bomb"},
    {"function boom { boom | boom & }; boom", "fork-bomb"},
    {"sudo apt install x", "sudo"},
    {"sudo -u root ls", "sudo"},
    {"doas ls", "sudo"},
    {"pkexec ls", "sudo"},
    {"echo $(sudo id)", "sudo"},
    {"su -", "su"},
    {"su root -c 'ls'", "su"},
    {"chown root f", "chown"},
    {"chown -R user:group .", "chown"},
    {"chgrp wheel f", "chown"},
    {"chmod 777 f", "chmod"},
    {"chmod -R 777 /", "chmod"},
    {"chmod 4755 /usr/bin/x", "chmod"},
    {"chmod u+s prog", "chmod"},
    {"chmod o+w f", "chmod"},
    {"chmod a=rwx f", "chmod"},
    {"chmod 666 f", "chmod"},
    {"chmod +x build.sh", "chmod"},
    {"chmod 755 script.sh", "chmod"},
    {"chmod -R u+rwX,go-w dir", "chmod"},
};

// Each line must pass with the default settings.
const char* const kPassing[] = {
    "rm -rf /tmp/build",
    "rm -rf ./build",
    "rm -rf build/",
    "rm -rf ~/project/build",
    "rm -rf $HOME/.cache/pip",
    "rm -rf \"$HOMEDIR\"",
    "rm -f /tmp/x.txt",
    "rm /*.log",
    "rm -rf *",
    "rm -rf .",
    "echo sudoku",
    "echo \"rm -rf /\"",
    "echo 'sudo rm -rf /'",
    "grep sudo file.txt",
    "grep -r 'rm -rf /' .",
    "git commit -m \"chmod fix\"",
    "git commit -m 'rm -rf / is blocked'",
    "ls / | grep x",
    "ls -la /",
    "cd / && ls",
    "dd if=/dev/zero of=./file bs=1M count=1",
    "dd if=/dev/sda of=disk.img",
    "dd if=/dev/urandom of=/dev/null count=1",
    "echo > /dev/null",
    "cmd 2>/dev/null >/dev/null",
    "cmd > /dev/stderr 2>&1",
    "echo x | tee /dev/stderr",
    "cat /dev/sda",
    "cat < /dev/sda | head -c 512 > mbr.bin",
    "mkfs.ext4 disk.img",
    "shred -u secret.txt",
    "fdisk -l /dev/sda",
    "mv file /tmp/null",
    "mv /dev/null.txt x",
    "cp file /dev/null",
    "python -c \"print(1)\"",
    "python3 -c 'import os; print(os.getcwd())'",
    "cat <<EOF > script.sh\nsudo rm -rf /\nEOF",
    "man chmod",
    "which sudo",
    "command -v sudo",
    "npm install && npm test",
    "pip install -r requirements.txt",
    "for f in *.txt; do rm \"$f\"; done",
    "find . -name '*.o' -delete",
    "f() { echo hi; }; f | f",
    "ls # rm -rf /",
    "export PATH=$HOME/bin:$PATH",
    "find . -type f | xargs rm -f",
    "echo rm -rf /",
    "rm -rf -- -weird-name",
};

class BlockedLine : public ::testing::TestWithParam<Blocked> {};

TEST_P(BlockedLine, IsDeniedByItsRule) {
  const Blocked& c = GetParam();
  sdk::FilterVerdict verdict = judge(c.line, Settings{});
  EXPECT_TRUE(verdict.denied()) << c.line;
  EXPECT_EQ(verdict.rule, c.rule) << c.line << " -> " << verdict.reason;
  EXPECT_FALSE(verdict.reason.empty());
}

INSTANTIATE_TEST_SUITE_P(Sanitize, BlockedLine, ::testing::ValuesIn(kBlocked));

class PassingLine : public ::testing::TestWithParam<const char*> {};

TEST_P(PassingLine, IsAllowed) {
  sdk::FilterVerdict verdict = judge(GetParam(), Settings{});
  EXPECT_FALSE(verdict.denied()) << GetParam() << " -> " << verdict.rule << ": " << verdict.reason;
}

INSTANTIATE_TEST_SUITE_P(Sanitize, PassingLine, ::testing::ValuesIn(kPassing));

TEST(SanitizeRules, TablesAreLargeEnough) {
  EXPECT_GE(std::size(kBlocked), 40u);
  EXPECT_GE(std::size(kPassing), 40u);
}

TEST(SanitizeRules, ReasonNamesTheCommand) {
  sdk::FilterVerdict verdict = judge("cd /tmp && rm -rf /", Settings{});
  EXPECT_EQ(verdict.reason, "deleting the root or home directory is blocked (rm -rf /)");
  sdk::FilterVerdict sudo = judge("sudo apt install x", Settings{});
  EXPECT_THAT(sudo.reason, HasSubstr("(sudo apt install x)"));
  EXPECT_THAT(sudo.reason, HasSubstr("allow: [sudo]"));
}

TEST(SanitizeRules, AllowingSudoDoesNotAllowWhatItRuns) {
  Settings settings = parse_settings(R"({"allow": ["sudo"]})");
  EXPECT_FALSE(judge("sudo ls", settings).denied());
  EXPECT_FALSE(judge("sudo apt install x", settings).denied());
  EXPECT_EQ(judge("sudo rm -rf /", settings).rule, "rm-root");
  EXPECT_EQ(judge("sudo chmod 777 f", settings).rule, "chmod");
  EXPECT_EQ(judge("su -", settings).rule, "su");
}

TEST(SanitizeRules, EachConfigurableRuleCanBeAllowed) {
  Settings settings = parse_settings(R"({"allow": ["sudo", "su", "chown", "chmod"]})");
  for (const char* line : {"sudo ls", "doas ls", "su -", "chown root f", "chmod 777 f"})
    EXPECT_FALSE(judge(line, settings).denied()) << line;
  EXPECT_EQ(judge("rm -rf /", settings).rule, "rm-root");
  EXPECT_EQ(judge(":(){ :|:& };:", settings).rule, "fork-bomb");
}

TEST(SanitizeRules, SettingsAreStrict) {
  EXPECT_TRUE(parse_settings("").allowed.empty());
  EXPECT_TRUE(parse_settings("{}").allowed.empty());
  EXPECT_TRUE(parse_settings("null").allowed.empty());
  EXPECT_EQ(parse_settings(R"({"allow": []})").allowed.size(), 0u);
  auto message = [](const char* json) {
    try {
      (void)parse_settings(json);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  EXPECT_THAT(message(R"({"allow": ["sudoo"]})"),
              HasSubstr("unknown rule 'sudoo' (valid: sudo, su, chown, chmod)"));
  EXPECT_THAT(message(R"({"allow": ["rm-root"]})"), HasSubstr("cannot be switched off"));
  EXPECT_THAT(message(R"({"alow": ["sudo"]})"), HasSubstr("unknown setting 'alow' (known: allow)"));
  EXPECT_THAT(message(R"({"allow": "sudo"})"), HasSubstr("setting 'allow' must be a list"));
  EXPECT_THAT(message(R"({"allow": [1]})"), HasSubstr("'allow[0]' must be a rule name"));
  EXPECT_THAT(message("[1]"), HasSubstr("must be a mapping"));
  EXPECT_THAT(message("{"), HasSubstr("not valid JSON"));
}

TEST(SanitizeRules, RuleListIsDocumented) {
  std::vector<std::string> ids;
  for (const auto& rule : rules()) {
    ids.emplace_back(rule.id);
    EXPECT_FALSE(rule.blocks.empty());
  }
  EXPECT_THAT(ids, ::testing::ElementsAre("fork-bomb", "rm-root", "dd-device", "block-device-write",
                                          "move-to-dev-null", "sudo", "su", "chown", "chmod"));
}

TEST(SanitizeRules, TooDeepNestingIsRefused) {
  std::string line = "ls";
  for (int i = 0; i < 40; ++i) line = "echo $(" + line + ")";
  EXPECT_EQ(judge(line, Settings{}).rule, "too-deep");
}

TEST(SanitizeRules, LongHarmlessLineIsAllowed) {
  std::string line = "echo " + std::string(200000, 'a') + " && ls";
  EXPECT_FALSE(judge(line, Settings{}).denied());
  EXPECT_EQ(judge(line + "; rm -rf /", Settings{}).rule, "rm-root");
}

}  // namespace
}  // namespace execmcp::plugins::sanitize
