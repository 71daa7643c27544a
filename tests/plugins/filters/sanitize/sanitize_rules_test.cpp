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
    // Issue 7 item 12: shapes a careful reader of shell sees through.
    {"env -S 'rm -rf /'", "rm-root"},
    {"env --split-string='rm -rf ~'", "rm-root"},
    {"env -iS'rm -rf /'", "rm-root"},
    {"bash <<EOF\nrm -rf /\nEOF", "rm-root"},
    {"sh <<< 'rm -rf /'", "rm-root"},
    {"bash -s <<< \"rm -rf /\"", "rm-root"},
    {"bash <(echo rm -rf /)", "rm-root"},
    {"source <(printf 'rm -rf /')", "rm-root"},
    {"cat <(rm -rf /)", "rm-root"},
    {"bash < <(echo 'rm -rf /')", "rm-root"},
    {"echo 'rm -rf /' | sh", "rm-root"},
    {"printf 'cd /tmp\\nrm -rf /' | bash", "rm-root"},
    {"cat <<< x\nrm -rf /", "rm-root"},
    {"rm -rf {/,}", "rm-root"},
    {"rm -rf {/tmp/x,/}", "rm-root"},
    {"{rm,-rf,/}", "rm-root"},
    {"rm -rf ${X:-/}", "rm-root"},
    {"rm -rf \"${X:=/}\"", "rm-root"},
    {"rm -rf ${X-~}", "rm-root"},
    {"${X:-rm} -rf /", "rm-root"},
    {"rm -rf ${HOME%/*}", "rm-root"},
    {"rm -rf \"${HOME%/*}\"/", "rm-root"},
    {"dd if=/dev/zero of=${D:-/dev/sda}", "dd-device"},
    {"echo x > ${D:-/dev/sda}", "block-device-write"},
    {"f(){ f|f& };f", "fork-bomb"},
    {"function f() { f & f; }; f", "fork-bomb"},
    {"f(){ f & f; }; f", "fork-bomb"},
    {"x() { x | x; }; x", "fork-bomb"},
    {"function b { nohup b & b; }; b", "fork-bomb"},
    {"while :; do sh & done", "fork-bomb"},
    {"while true; do bash -c 'echo x' & done", "fork-bomb"},
    {"until false; do $0 & done", "fork-bomb"},
    {"while true\ndo\n  sleep 1 &\ndone", "fork-bomb"},
    {"for ((;;)); do sh & done", "fork-bomb"},
    {"sudoedit /etc/passwd", "sudo"},
    {"run0 ls", "sudo"},
    {"run0 --user=root rm -rf /", "rm-root"},
    {"chroot / rm -rf /", "rm-root"},
    {"unshare -r -m rm -rf /", "rm-root"},
    {"flock /tmp/lock rm -rf /", "rm-root"},
    {"flock -n /tmp/lock -c 'rm -rf /'", "rm-root"},
    {"watch 'rm -rf /'", "rm-root"},
    {"watch -n 1 rm -rf ~", "rm-root"},
    {"script -qc 'rm -rf /' /dev/null", "rm-root"},
    {"xargs -0 rm -rf /", "rm-root"},
    {"find / -exec rm -rf / \\;", "rm-root"},
    {"find . -execdir sh -c 'rm -rf ~' \\;", "rm-root"},
    {"find . -ok chmod 777 {} +", "chmod"},
    {"nice -n 5 nohup timeout 9 stdbuf -o0 setsid env A=1 command rm -rf /", "rm-root"},
    {"'nohup' rm -rf /", "rm-root"},
    {"busybox sh -c 'rm -rf /'", "rm-root"},
    {"exec rm -rf /", "rm-root"},
    {"dd if=x of=/proc/self/root/dev/sda", "dd-device"},
    {"dd of=/proc/1/root/dev/nvme0n1", "dd-device"},
    {"echo x > /proc/thread-self/root/dev/sda", "block-device-write"},
    {"rm -rf /proc/self/root", "rm-root"},
    {"rm -rf /proc/1/root/", "rm-root"},
    {"install -m 4755 x /usr/local/bin/x", "chmod"},
    {"install -Dm755 x /usr/local/bin/x", "chmod"},
    {"install --mode=777 x y", "chmod"},
    {"setfacl -m u:nobody:rwx f", "chmod"},
    {"install -o root x /usr/local/bin/x", "chown"},
    {"git -c alias.x='!rm -rf /' x", "rm-root"},
    {"git -c core.pager='sudo ls' log", "sudo"},
    {"git -c core.sshCommand='rm -rf ~' fetch", "rm-root"},
    {"git fetch --upload-pack='rm -rf /' origin", "rm-root"},
    {"GIT_SSH_COMMAND='rm -rf /' git fetch", "rm-root"},
    {"bash -s -- x <<< 'rm -rf /'", "rm-root"},
    {"cat <<EOF | bash\ncd /tmp\nrm -rf /\nEOF", "rm-root"},
    {"git config --global core.sshCommand 'rm -rf ~'", "rm-root"},
    // Issue 17 item 3: relative paths that climb to /, and runners that feed rm its arguments.
    {"rm -rf ../../../../../../../", "rm-root"},
    {"rm -rf ../../../../../../../*", "rm-root"},
    {"rm -rf ..", "rm-root"},
    {"rm -r ./../..", "rm-root"},
    {"rm -rf build/../../..", "rm-root"},
    {"rm -rf $PWD/../../..", "rm-root"},
    {"rm -rf \"${PWD}\"/../..", "rm-root"},
    {"cd / && rm -rf *", "rm-root"},
    {"cd && rm -rf ./*", "rm-root"},
    {"cd ~ ; rm -rf .", "rm-root"},
    {"echo / | xargs rm -rf", "rm-root"},
    {"find . -name node_modules | xargs rm -rf", "rm-root"},
    {"xargs -0 -n1 rm -fr < list", "rm-root"},
    {"xargs -I{} rm -rf {}", "rm-root"},
    {"xargs --max-args=1 nice rm --recursive", "rm-root"},
    {"xargs sh -c 'rm -rf \"$@\"' _", "rm-root"},
    {"find / -maxdepth 0 -exec rm -rf {} +", "rm-root"},
    {"find / -mindepth 1 -maxdepth 1 -exec rm -r {} \\;", "rm-root"},
    {"find ~ -exec rm -rf {} +", "rm-root"},
    {"find ../../../.. -maxdepth 0 -execdir rm -rf {} +", "rm-root"},
    {"find -L / -maxdepth 0 -ok rm -rf {} \\;", "rm-root"},
    {"find / -maxdepth 0 -exec sh -c 'rm -rf \"$1\"' _ {} \\;", "rm-root"},
    {"find / -delete", "rm-root"},
    {"find $HOME -mindepth 1 -delete", "rm-root"},
    {"parallel rm -rf ::: /", "rm-root"},
    {"echo / | parallel -j4 rm -rf", "rm-root"},
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
    // Issue 7 item 12: ordinary commands that must stay allowed.
    "find . -name '*.py' -exec grep -l foo {} +",
    "find . -type f -exec rm -f {} \\;",
    "git log --oneline",
    "git -c core.pager=less log",
    "git -c core.fsmonitor=false status",
    "cat <<EOF > file.txt\nrm -rf /\nEOF",
    "cat <<< 'rm -rf /'",
    "cat <<EOF | tee notes.txt\nrm -rf /\nEOF",
    "echo 'rm -rf /' | cat",
    "bash build.sh <<< 'rm -rf /'",
    "diff <(echo 'rm -rf /') file",
    "echo {a,b}",
    "mkdir -p src/{main,test}/{java,resources}",
    "cp file{,.bak}",
    "rm -rf ${BUILD_DIR:-build}",
    "echo ${X:-/}",
    "rm -rf ${HOME}/.cache/x ${PWD%/*}/build",
    "while true; do sleep 1; done",
    "while read line; do echo \"$line\" & done < list.txt",
    "while true; do make & wait; done",
    "for i in 1 2 3; do sleep $i & done; wait",
    "for ((i = 0; i < 3; i++)); do sleep $i & done; wait",
    "for ((;;)); do sleep 1; done",
    "walk() { for d in */; do (cd \"$d\" && walk) & done; wait; }; walk",
    "f() { echo hi; }; f & f",
    "install -d build",
    "install -D x /usr/local/bin/x",
    "watch -n 5 ls -la",
    "env -S 'ls -la'",
    "timeout 5 make test",
    "xargs -n1 echo < list",
    "nohup python3 server.py &",
    "dd if=/proc/self/root/dev/sda of=disk.img",
    // Issue 17 item 3: ordinary relative deletes and runners that must stay allowed.
    "rm -rf ../build",
    "rm -rf ../../other/project/build",
    "rm -rf ./build/..",
    "cd /tmp && rm -rf build",
    "cd build && rm -rf *",
    "find . -name '*.o' -exec rm {} +",
    "find . -name node_modules -type d -prune -exec rm -rf {} +",
    "find ~ -name '*.pyc' -delete",
    "find / -name core -type f -exec rm -f {} \\;",
    "find . -maxdepth 1 -exec rm -rf {} +",
    "ls *.log | xargs rm -f",
    "xargs -n1 rm < list",
    "parallel gzip ::: *.log",
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

// The work dir the agent asked for: relative targets resolve against it when it is absolute, and a
// relative one adds its own `..` climb.
TEST(SanitizeRules, RelativeTargetsResolveAgainstTheWorkDir) {
  EXPECT_EQ(judge("rm -rf *", Settings{}, "/").rule, "rm-root");
  EXPECT_EQ(judge("rm -rf .", Settings{}, "/").rule, "rm-root");
  EXPECT_EQ(judge("rm -rf ..", Settings{}, "/tmp").rule, "rm-root");
  EXPECT_EQ(judge("rm -rf ../*", Settings{}, "/work/").rule, "rm-root");
  EXPECT_EQ(judge("rm -rf .", Settings{}, "../..").rule, "rm-root");
  EXPECT_EQ(judge("find . -maxdepth 0 -exec rm -rf {} +", Settings{}, "/").rule, "rm-root");
  EXPECT_EQ(judge("find . -delete", Settings{}, "/").rule, "rm-root");
  EXPECT_FALSE(judge("rm -rf *", Settings{}, "/work/ws").denied());
  EXPECT_FALSE(judge("rm -rf .", Settings{}, "/work/ws").denied());
  EXPECT_FALSE(judge("rm -rf ../build", Settings{}, "/work/ws").denied());
  EXPECT_FALSE(judge("rm -rf .", Settings{}, "sub").denied());
  EXPECT_FALSE(judge("find . -delete", Settings{}, "/work/ws").denied());
}

TEST(SanitizeRules, FedArgumentsAreNamedInTheReason) {
  EXPECT_THAT(judge("ls | xargs rm -rf", Settings{}).reason,
              HasSubstr("its paths come from xargs"));
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

TEST(SanitizeRules, DeepWrappersAndHugeExpansionsAreRefused) {
  std::string wrappers = "ls";
  for (int i = 0; i < 40; ++i) wrappers = "nohup " + wrappers;
  EXPECT_EQ(judge(wrappers, Settings{}).rule, "too-deep");
  EXPECT_EQ(judge("echo {a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}", Settings{}).rule,
            "too-large");
  std::string many;
  for (int i = 0; i < 20000; ++i) many += "a;";
  EXPECT_EQ(judge(many, Settings{}).rule, "too-large");
}

TEST(SanitizeRules, HostileMegabyteLinesAreJudged) {
  // Each is about 1 MB; the old code was quadratic on the first three. No timing is asserted:
  // ctest's timeout catches a regression.
  const std::pair<const char*, const char*> kShapes[] = {
      {"f(){", ""},       {"function", ""}, {"cat <<a ", "too-large"}, {"nohup ", "too-large"},
      {"$(", "too-deep"}, {"{,{", ""},      {"a;", "too-large"}};
  for (const auto& [unit, rule] : kShapes) {
    std::string line;
    while (line.size() < 1000000) line += unit;
    EXPECT_EQ(judge(line, Settings{}).rule, rule) << unit;
  }
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
