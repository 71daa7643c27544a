// Tests for the shell-syntax splitter: separators, nesting, quoting, wrappers and bad input.
#include "execmcp/plugins/shell_syntax/simple_commands.hpp"

#include <random>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace execmcp::plugins::shell_syntax {
namespace {

using ::testing::ElementsAre;
using Words = std::vector<std::string>;

std::vector<Words> all_words(std::string_view line) {
  std::vector<Words> out;
  for (const auto& cmd : parse_line(line).commands) out.push_back(cmd.words);
  return out;
}

const SimpleCommand* find_named(const ParsedLine& parsed, std::string_view name) {
  for (const auto& cmd : parsed.commands) {
    if (cmd.name() == name) return &cmd;
  }
  return nullptr;
}

TEST(SimpleCommands, SplitsAtEverySeparator) {
  EXPECT_THAT(all_words("a 1; b 2 && c || d | e & f\ng |& h"),
              ElementsAre(Words{"a", "1"}, Words{"b", "2"}, Words{"c"}, Words{"d"}, Words{"e"},
                          Words{"f"}, Words{"g"}, Words{"h"}));
}

TEST(SimpleCommands, EmptyAndBlankLinesHaveNoCommands) {
  EXPECT_TRUE(parse_line("").commands.empty());
  EXPECT_TRUE(parse_line("  \n\t ;; ; & \n").commands.empty());
  EXPECT_TRUE(parse_line("# just a comment").commands.empty());
}

TEST(SimpleCommands, RemovesQuotes) {
  EXPECT_THAT(all_words(R"(echo "a b" 'c d' e\ f "x"'y'z "" 'it''s')"),
              ElementsAre(Words{"echo", "a b", "c d", "e f", "xyz", "", "its"}));
  EXPECT_THAT(all_words(R"(echo "say \"hi\" \$HOME \n")"),
              ElementsAre(Words{"echo", R"(say "hi" $HOME \n)"}));
  EXPECT_THAT(all_words(R"(echo $'a\tb\x41' $"c")"), ElementsAre(Words{"echo", "a\tbA", "c"}));
}

TEST(SimpleCommands, QuotedOperatorsAreText) {
  EXPECT_THAT(all_words(R"(echo "a; rm -rf / && b" 'x | y' c\;d)"),
              ElementsAre(Words{"echo", "a; rm -rf / && b", "x | y", "c;d"}));
}

TEST(SimpleCommands, KeepsExpansionsAsWritten) {
  EXPECT_THAT(all_words(R"(rm -rf "$HOME" ${HOME}/x $((1+2)))"),
              ElementsAre(Words{"rm", "-rf", "$HOME", "${HOME}/x", "$((1+2))"}));
}

TEST(SimpleCommands, StripsLeadingAssignments) {
  ParsedLine parsed = parse_line("  FOO=1 BAR=\"x y\" A+=b make -j2 X=3  ");
  ASSERT_EQ(parsed.commands.size(), 1u);
  const auto& cmd = parsed.commands[0];
  EXPECT_THAT(cmd.assignments, ElementsAre("FOO=1", "BAR=x y", "A+=b"));
  EXPECT_THAT(cmd.words, ElementsAre("make", "-j2", "X=3"));
  EXPECT_EQ(cmd.raw, "FOO=1 BAR=\"x y\" A+=b make -j2 X=3");
  EXPECT_EQ(cmd.text, "make -j2 X=3");
}

TEST(SimpleCommands, QuotedNameIsNotAnAssignment) {
  ParsedLine parsed = parse_line("'FOO'=1 cmd");
  ASSERT_EQ(parsed.commands.size(), 1u);
  EXPECT_TRUE(parsed.commands[0].assignments.empty());
  EXPECT_THAT(parsed.commands[0].words, ElementsAre("FOO=1", "cmd"));
}

TEST(SimpleCommands, RecordsRedirections) {
  ParsedLine parsed =
      parse_line("cmd a >out 2>> err < in &>all >|clobber 2>&1 <<<word 3<> rw >&2 b");
  ASSERT_EQ(parsed.commands.size(), 1u);
  const auto& cmd = parsed.commands[0];
  EXPECT_THAT(cmd.words, ElementsAre("cmd", "a", "b"));
  std::vector<std::pair<std::string, std::string>> got;
  for (const auto& r : cmd.redirections) got.emplace_back(r.op, r.target);
  EXPECT_THAT(got, ElementsAre(std::pair<std::string, std::string>{">", "out"},
                               std::pair<std::string, std::string>{"2>>", "err"},
                               std::pair<std::string, std::string>{"<", "in"},
                               std::pair<std::string, std::string>{"&>", "all"},
                               std::pair<std::string, std::string>{">|", "clobber"},
                               std::pair<std::string, std::string>{"2>&", "1"},
                               std::pair<std::string, std::string>{"<<<", "word"},
                               std::pair<std::string, std::string>{"3<>", "rw"},
                               std::pair<std::string, std::string>{">&", "2"}));
}

TEST(SimpleCommands, RedirectionWritesOnlyForOutputOperators) {
  auto writes = [](std::string op, std::string target) {
    return Redirection{std::move(op), std::move(target)}.writes();
  };
  EXPECT_TRUE(writes(">", "f"));
  EXPECT_TRUE(writes(">>", "f"));
  EXPECT_TRUE(writes("2>", "f"));
  EXPECT_TRUE(writes("&>", "f"));
  EXPECT_TRUE(writes(">|", "f"));
  EXPECT_TRUE(writes("<>", "f"));
  EXPECT_TRUE(writes(">&", "file"));
  EXPECT_FALSE(writes("2>&", "1"));
  EXPECT_FALSE(writes(">&", "-"));
  EXPECT_FALSE(writes("<", "f"));
  EXPECT_FALSE(writes("<<<", "f"));
}

TEST(SimpleCommands, RedirectionOnlyCommandIsKept) {
  ParsedLine parsed = parse_line("> /dev/sda");
  ASSERT_EQ(parsed.commands.size(), 1u);
  EXPECT_TRUE(parsed.commands[0].words.empty());
  ASSERT_EQ(parsed.commands[0].redirections.size(), 1u);
  EXPECT_EQ(parsed.commands[0].redirections[0].target, "/dev/sda");
  EXPECT_EQ(parsed.commands[0].text, "> /dev/sda");
}

TEST(SimpleCommands, SubshellsAndBraceGroups) {
  EXPECT_THAT(all_words("(cd /tmp && rm -rf x) ; { echo a; rm b; }"),
              ElementsAre(Words{"cd", "/tmp"}, Words{"rm", "-rf", "x"}, Words{"echo", "a"},
                          Words{"rm", "b"}));
  EXPECT_THAT(all_words("((rm -rf /))"), ElementsAre(Words{"rm", "-rf", "/"}));
}

TEST(SimpleCommands, FollowsCommandSubstitution) {
  ParsedLine parsed = parse_line("echo $(rm -rf /) \"$(id -u)\" `whoami`");
  ASSERT_EQ(parsed.commands.size(), 4u);
  EXPECT_THAT(parsed.commands[0].words, ElementsAre("rm", "-rf", "/"));
  EXPECT_EQ(parsed.commands[0].source, Source::Substitution);
  EXPECT_EQ(parsed.commands[0].depth, 1);
  EXPECT_THAT(parsed.commands[1].words, ElementsAre("id", "-u"));
  EXPECT_THAT(parsed.commands[2].words, ElementsAre("whoami"));
  EXPECT_THAT(parsed.commands[3].words, ElementsAre("echo", "$(rm -rf /)", "$(id -u)", "`whoami`"));
  EXPECT_EQ(parsed.commands[3].source, Source::Line);
}

TEST(SimpleCommands, FollowsNestedSubstitutions) {
  ParsedLine parsed = parse_line("echo $(echo $(rm -rf /)) `echo \\`sudo x\\``");
  const SimpleCommand* rm = find_named(parsed, "rm");
  ASSERT_NE(rm, nullptr);
  EXPECT_EQ(rm->depth, 2);
  const SimpleCommand* sudo = find_named(parsed, "sudo");
  ASSERT_NE(sudo, nullptr);
  EXPECT_EQ(sudo->depth, 2);
}

TEST(SimpleCommands, FollowsSubstitutionsInsideParameterExpansionAndAssignments) {
  EXPECT_NE(find_named(parse_line("echo ${X:-$(rm -rf /)}"), "rm"), nullptr);
  ParsedLine parsed = parse_line("X=$(rm -rf /)");
  ASSERT_NE(find_named(parsed, "rm"), nullptr);
  EXPECT_EQ(parsed.commands.back().assignments.size(), 1u);
  EXPECT_TRUE(parsed.commands.back().words.empty());
}

TEST(SimpleCommands, ArithmeticIsNotACommand) {
  EXPECT_THAT(all_words("echo $((1 + (2 * 3)))"), ElementsAre(Words{"echo", "$((1 + (2 * 3)))"}));
}

TEST(SimpleCommands, ProcessSubstitution) {
  ParsedLine parsed = parse_line("diff <(ls /) <(rm -rf /) > >(tee log)");
  EXPECT_NE(find_named(parsed, "ls"), nullptr);
  EXPECT_NE(find_named(parsed, "rm"), nullptr);
  EXPECT_NE(find_named(parsed, "tee"), nullptr);
  const SimpleCommand* diff = find_named(parsed, "diff");
  ASSERT_NE(diff, nullptr);
  EXPECT_EQ(diff->words.size(), 3u);
}

TEST(SimpleCommands, FollowsShellStrings) {
  for (const char* line :
       {"bash -c 'rm -rf /'", "sh -c \"rm -rf /\"", "/bin/bash -lc 'rm -rf /'",
        "bash -e -c 'cd x; rm -rf /'", "zsh -o errexit -c 'rm -rf /'", "eval 'rm -rf /'",
        "eval rm -rf /", "su -c 'rm -rf /' root", "su root --command='rm -rf /'"}) {
    ParsedLine parsed = parse_line(line);
    const SimpleCommand* rm = find_named(parsed, "rm");
    ASSERT_NE(rm, nullptr) << line;
    EXPECT_THAT(rm->words, ElementsAre("rm", "-rf", "/")) << line;
    EXPECT_EQ(rm->source, Source::ShellString) << line;
  }
}

TEST(SimpleCommands, ShellRunningAScriptFileIsNotFollowed) {
  ParsedLine parsed = parse_line("bash script.sh 'rm -rf /'");
  EXPECT_EQ(find_named(parsed, "rm"), nullptr);
}

TEST(SimpleCommands, SudoKeepsItselfAndExposesItsCommand) {
  ParsedLine parsed = parse_line("sudo -u root -E rm -rf /");
  ASSERT_EQ(parsed.commands.size(), 2u);
  EXPECT_EQ(parsed.commands[0].name(), "sudo");
  EXPECT_EQ(parsed.commands[0].source, Source::Line);
  EXPECT_THAT(parsed.commands[1].words, ElementsAre("rm", "-rf", "/"));
  EXPECT_EQ(parsed.commands[1].source, Source::Privileged);
  EXPECT_EQ(parsed.commands[1].text, "rm -rf /");
  for (const char* line : {"doas rm -rf /", "pkexec --user root rm -rf /",
                           "sudo --user=root nohup rm -rf /", "sudo sudo rm -rf /"}) {
    ParsedLine p = parse_line(line);
    ASSERT_FALSE(p.commands.empty()) << line;
    EXPECT_THAT(p.commands.back().words, ElementsAre("rm", "-rf", "/")) << line;
  }
  EXPECT_NE(find_named(parse_line("sudo bash -c 'rm -rf /'"), "rm"), nullptr);
}

TEST(SimpleCommands, WrappersKeepThemselvesAndExposeWhatTheyRun) {
  ParsedLine parsed = parse_line("env -i FOO=1 nohup nice -n 5 timeout -s KILL 10 rm -rf /tmp/x");
  ASSERT_EQ(parsed.commands.size(), 5u);
  EXPECT_EQ(parsed.commands[0].name(), "env");
  EXPECT_EQ(parsed.commands[0].text,
            "env -i FOO=1 nohup nice -n 5 timeout -s KILL 10 rm -rf /tmp/x");
  EXPECT_EQ(parsed.commands[1].name(), "nohup");
  EXPECT_EQ(parsed.commands[1].runner, 0);
  EXPECT_EQ(parsed.commands[1].offset_in_runner, 13u);
  EXPECT_EQ(parsed.commands[3].name(), "timeout");
  const SimpleCommand& rm = parsed.commands[4];
  EXPECT_THAT(rm.words, ElementsAre("rm", "-rf", "/tmp/x"));
  EXPECT_EQ(rm.source, Source::Wrapped);
  EXPECT_EQ(rm.runner, 3);
  EXPECT_EQ(rm.text, "rm -rf /tmp/x");
  EXPECT_EQ(rm.depth, 4);
  EXPECT_THAT(all_words("exec -a name ls"),
              ElementsAre(Words{"exec", "-a", "name", "ls"}, Words{"ls"}));
  EXPECT_THAT(all_words("time -p ls"), ElementsAre(Words{"time", "-p", "ls"}, Words{"ls"}));
  EXPECT_THAT(all_words("command ls -l"),
              ElementsAre(Words{"command", "ls", "-l"}, Words{"ls", "-l"}));
  EXPECT_THAT(all_words("nice -10 ls"), ElementsAre(Words{"nice", "-10", "ls"}, Words{"ls"}));
  EXPECT_THAT(all_words("/usr/bin/env bash -c 'ls'"),
              ElementsAre(Words{"/usr/bin/env", "bash", "-c", "ls"}, Words{"bash", "-c", "ls"},
                          Words{"ls"}));
  EXPECT_THAT(all_words("'nohup' ls"), ElementsAre(Words{"nohup", "ls"}, Words{"ls"}));
}

struct Runs {
  const char* line;
  const char* runner;  // name of the command that runs it
  const char* inner;   // the inner command's words, joined by spaces
  Source source;
};
// Printed as its line, newlines as \n: ctest's test names carry the parameter, and the default
// print is the struct's bytes (pointers), so the names changed with every build.
void PrintTo(const Runs& row, std::ostream* os) {
  for (const char* c = row.line; *c != '\0'; ++c)
    *os << (*c == '\n' ? std::string("\\n") : std::string(1, *c));
}

// One row per runner shape: the command run is exposed with its runner.
const Runs kRuns[] = {
    {"env -S 'rm -rf /'", "env", "rm -rf /", Source::ShellString},
    {"env -vS'rm -rf /' x", "env", "rm -rf / x", Source::ShellString},
    {"env --split-string='rm -rf /'", "env", "rm -rf /", Source::ShellString},
    {"chroot / rm -rf /", "chroot", "rm -rf /", Source::Wrapped},
    {"chroot --userspec 1:1 /srv rm -rf /", "chroot", "rm -rf /", Source::Wrapped},
    {"unshare -r -n rm -rf /", "unshare", "rm -rf /", Source::Wrapped},
    {"unshare --map-user 0 -R /x rm -rf /", "unshare", "rm -rf /", Source::Wrapped},
    {"flock /tmp/l rm -rf /", "flock", "rm -rf /", Source::Wrapped},
    {"flock -w 5 /tmp/l -c 'rm -rf /'", "flock", "rm -rf /", Source::ShellString},
    {"watch 'rm -rf /'", "watch", "rm -rf /", Source::ShellString},
    {"watch -n 1 rm -rf /", "watch", "rm -rf /", Source::ShellString},
    {"watch -x rm -rf /", "watch", "rm -rf /", Source::Wrapped},
    {"script -c 'rm -rf /' log", "script", "rm -rf /", Source::ShellString},
    {"script -qc 'rm -rf /' /dev/null", "script", "rm -rf /", Source::ShellString},
    {"script --command='rm -rf /'", "script", "rm -rf /", Source::ShellString},
    {"xargs -I{} rm -rf /", "xargs", "rm -rf /", Source::Wrapped},
    {"xargs --replace rm -rf /", "xargs", "rm -rf /", Source::Wrapped},
    {"xargs -I {} -P4 rm -rf /", "xargs", "rm -rf /", Source::Wrapped},
    {"parallel rm -rf ::: /", "parallel", "rm -rf", Source::Wrapped},
    {"parallel -j 4 --joblog log rm -rf {} :::: list", "parallel", "rm -rf {}", Source::Wrapped},
    {"parallel -k rm -rf", "parallel", "rm -rf", Source::Wrapped},
    {"find . -exec rm -rf / \\;", "find", "rm -rf /", Source::Wrapped},
    {"find . -name x -execdir rm -rf / \\;", "find", "rm -rf /", Source::Wrapped},
    {"find . -ok rm -rf / ';' -print", "find", "rm -rf /", Source::Wrapped},
    {"find . -exec rm -rf / {} +", "find", "rm -rf / {}", Source::Wrapped},
    {"nsenter -t 1 -m rm -rf /", "nsenter", "rm -rf /", Source::Wrapped},
    {"taskset -c 0 rm -rf /", "taskset", "rm -rf /", Source::Wrapped},
    {"setsid -f rm -rf /", "setsid", "rm -rf /", Source::Wrapped},
    {"stdbuf -o0 rm -rf /", "stdbuf", "rm -rf /", Source::Wrapped},
    {"busybox rm -rf /", "busybox", "rm -rf /", Source::Wrapped},
    {"exec rm -rf /", "exec", "rm -rf /", Source::Wrapped},
    {"timeout --preserve-status -k 1 5 rm -rf /", "timeout", "rm -rf /", Source::Wrapped},
    {"run0 -u root rm -rf /", "run0", "rm -rf /", Source::Privileged},
    {"git -c alias.x='!rm -rf /' x", "git", "rm -rf /", Source::ShellString},
    {"git -c core.pager='rm -rf /' log", "git", "rm -rf /", Source::ShellString},
    {"git -c core.sshCommand='rm -rf /' fetch", "git", "rm -rf /", Source::ShellString},
    {"git -c core.fsmonitor='rm -rf /' status", "git", "rm -rf /", Source::ShellString},
    {"git --config-env=x -c diff.x.textconv='rm -rf /' diff", "git", "rm -rf /",
     Source::ShellString},
    {"git fetch --upload-pack='rm -rf /' origin", "git", "rm -rf /", Source::ShellString},
    {"git clone -u 'rm -rf /' x", "git", "rm -rf /", Source::ShellString},
    {"git push --receive-pack 'rm -rf /'", "git", "rm -rf /", Source::ShellString},
    {"GIT_SSH_COMMAND='rm -rf /' git fetch", "git", "rm -rf /", Source::ShellString},
    {"sh <<< 'rm -rf /'", "sh", "rm -rf /", Source::ShellString},
    {"bash -s <<< \"rm -rf /\"", "bash", "rm -rf /", Source::ShellString},
    {"bash <(echo rm -rf /)", "bash", "rm -rf /", Source::ShellString},
    {"source <(printf 'rm -rf /')", "source", "rm -rf /", Source::ShellString},
    {"bash < <(echo 'rm -rf /')", "bash", "rm -rf /", Source::ShellString},
    {"echo 'rm -rf /' | sh", "sh", "rm -rf /", Source::ShellString},
    {"printf 'ls\\nrm -rf /' | bash -s", "bash", "rm -rf /", Source::ShellString},
    {"bash /dev/stdin <<'EOF'\nrm -rf /\nEOF", "bash", "rm -rf /", Source::ShellString},
    {"nohup bash <<EOF\nrm -rf /\nEOF", "bash", "rm -rf /", Source::ShellString},
    {"bash -s -- a b <<< 'rm -rf /'", "bash", "rm -rf /", Source::ShellString},
    {"cat <<'EOF' | sudo bash\nrm -rf /\nEOF", "bash", "rm -rf /", Source::ShellString},
    {"cat <<< 'rm -rf /' | sh", "sh", "rm -rf /", Source::ShellString},
    {"git config --global core.pager 'rm -rf /'", "git", "rm -rf /", Source::ShellString},
    {"git config alias.x '!rm -rf /'", "git", "rm -rf /", Source::ShellString},
};

class RunnerShape : public ::testing::TestWithParam<Runs> {};

TEST_P(RunnerShape, ExposesTheCommandItRuns) {
  const Runs& row = GetParam();
  ParsedLine parsed = parse_line(row.line);
  const SimpleCommand* found = nullptr;
  for (const auto& cmd : parsed.commands) {
    std::string joined;
    for (const auto& w : cmd.words) joined += (joined.empty() ? "" : " ") + w;
    if (joined == row.inner && !cmd.variant) found = &cmd;
  }
  ASSERT_NE(found, nullptr) << row.line;
  EXPECT_EQ(found->source, row.source) << row.line;
  ASSERT_GE(found->runner, 0) << row.line;
  EXPECT_EQ(parsed.commands[static_cast<std::size_t>(found->runner)].name(), row.runner)
      << row.line;
}

INSTANTIATE_TEST_SUITE_P(ShellSyntax, RunnerShape, ::testing::ValuesIn(kRuns));

TEST(SimpleCommands, OrdinaryCommandsRunNothingElse) {
  for (const char* line : {"git log --oneline",
                           "git commit -c HEAD",
                           "git push -u origin main",
                           "git -c core.fsmonitor=false status",
                           "git -c alias.st=status st",
                           "git -c credential.helper=store push",
                           "find . -name '*.o' -delete",
                           "watch",
                           "flock 9",
                           "script log",
                           "env",
                           "env FOO=1",
                           "command -v sudo",
                           "cat <<EOF > file.txt\nrm -rf /\nEOF",
                           "cat <<< 'rm -rf /'",
                           "echo 'rm -rf /' | cat",
                           "diff <(echo 'rm -rf /') b",
                           "bash script.sh <<< 'rm -rf /'",
                           "git config user.name 'rm -rf /'",
                           "git config --get core.pager",
                           "cat <<EOF | grep x\nrm -rf /\nEOF",
                           "cat notes <<EOF | sh\nrm -rf /\nEOF"}) {
    ParsedLine parsed = parse_line(line);
    EXPECT_EQ(find_named(parsed, "rm"), nullptr) << line;
    for (const auto& cmd : parsed.commands) EXPECT_NE(cmd.source, Source::ShellString) << line;
  }
}

TEST(SimpleCommands, HereStringIsOneWordNotAHereDocument) {
  // "<<<" used to be read as "<<", so the next line was swallowed as a here-document body.
  EXPECT_THAT(all_words("cat <<< x\nrm -rf /"), ElementsAre(Words{"cat"}, Words{"rm", "-rf", "/"}));
}

TEST(SimpleCommands, BraceExpansion) {
  EXPECT_THAT(all_words("rm -rf {/,}"), ElementsAre(Words{"rm", "-rf", "/"}));
  EXPECT_THAT(all_words("{rm,-rf,/}"), ElementsAre(Words{"rm", "-rf", "/"}));
  EXPECT_THAT(all_words("echo a{b,c{d,e}}f {x}"),
              ElementsAre(Words{"echo", "abf", "acdf", "acef", "{x}"}));
  // Quoted or escaped braces, ${...} and sequences stay as written.
  EXPECT_THAT(parse_line("echo '{a,b}' \"{a,b}\" \\{a,b} ${x:-{a,b}} {a..c}").commands[0].words,
              ElementsAre("echo", "{a,b}", "{a,b}", "{a,b}", "${x:-{a,b}}", "{a..c}"));
  EXPECT_THAT(all_words("find . -exec rm {} \\;"),
              ElementsAre(Words{"find", ".", "-exec", "rm", "{}", ";"}, Words{"rm", "{}"}));
  EXPECT_FALSE(parse_line("echo {a,b}{c,d}{e,f}{g,h}").too_large);
  EXPECT_TRUE(parse_line("echo {a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}").too_large);
}

TEST(SimpleCommands, DefaultValueIsReadAsASecondVariant) {
  ParsedLine parsed = parse_line("rm -rf ${X:-/} \"${Y:=/tmp}\" ${Z} > ${OUT-'/dev/sda'}");
  ASSERT_EQ(parsed.commands.size(), 2u);
  EXPECT_FALSE(parsed.commands[0].variant);
  EXPECT_THAT(parsed.commands[0].words, ElementsAre("rm", "-rf", "${X:-/}", "${Y:=/tmp}", "${Z}"));
  EXPECT_TRUE(parsed.commands[1].variant);
  EXPECT_THAT(parsed.commands[1].words, ElementsAre("rm", "-rf", "/", "/tmp", "${Z}"));
  ASSERT_EQ(parsed.commands[1].redirections.size(), 1u);
  EXPECT_EQ(parsed.commands[1].redirections[0].target, "/dev/sda");
  EXPECT_EQ(parse_line("echo ${#X} ${X%/*} '${X:-/}'").commands.size(), 1u);
}

TEST(SimpleCommands, LoopsAndWhetherTheyEnd) {
  ParsedLine parsed = parse_line(
      "while :; do sh & done; until false; do x; done; while read l; do y; done; "
      "for i in 1 2; do z; done; while true; do while test -f f; do w; done; done; v");
  ASSERT_EQ(parsed.loops.size(), 6u);
  EXPECT_TRUE(parsed.loops[0].endless);
  EXPECT_TRUE(parsed.loops[1].endless);
  EXPECT_FALSE(parsed.loops[2].endless);
  EXPECT_FALSE(parsed.loops[3].endless);
  EXPECT_TRUE(parsed.loops[4].endless);
  EXPECT_FALSE(parsed.loops[5].endless);
  auto loop_of = [&](std::string_view name) { return find_named(parsed, name)->loop; };
  EXPECT_EQ(loop_of("sh"), 0);
  EXPECT_TRUE(find_named(parsed, "sh")->background);
  EXPECT_EQ(loop_of("x"), 1);
  EXPECT_EQ(loop_of("read"), -1);  // a condition is not the body
  EXPECT_EQ(loop_of("test"), 4);
  EXPECT_EQ(loop_of("w"), 5);
  EXPECT_EQ(loop_of("v"), -1);
}

TEST(SimpleCommands, HostileInputIsBounded) {
  // Each shape is about 1 MB; every one must finish and either be read or refused as too large.
  const std::pair<const char*, std::size_t> kShapes[] = {
      {"f(){", 250000},         {"cat <<a ", 125000},
      {"a;", 500000},           {"nohup ", 170000},
      {"{a,b}", 200000},        {"${X:-", 200000},
      {"find . -exec ", 80000}, {"echo x | sh | ", 70000},
      {"while :; do ", 100000}, {"git -c alias.a=!x ", 50000},
  };
  for (const auto& [unit, count] : kShapes) {
    std::string line;
    for (std::size_t i = 0; i < count; ++i) line += unit;
    ParsedLine parsed = parse_line(line);
    EXPECT_LE(parsed.commands.size(), kMaxCommands) << unit;
  }
  std::string nested = "ls";
  for (int i = 0; i < 40; ++i) nested = "nohup " + nested;
  EXPECT_TRUE(parse_line(nested).too_deep);
}

TEST(SimpleCommands, ReservedWordsAreSyntax) {
  EXPECT_THAT(all_words("if [ -f x ]; then rm -rf y; elif true; then :; else ls; fi"),
              ElementsAre(Words{"[", "-f", "x", "]"}, Words{"rm", "-rf", "y"}, Words{"true"},
                          Words{":"}, Words{"ls"}));
  EXPECT_THAT(all_words("for f in *.txt $(ls); do rm \"$f\"; done"),
              ElementsAre(Words{"ls"}, Words{"rm", "$f"}));
  EXPECT_THAT(all_words("while true; do sleep 1; done; until false; do :; done"),
              ElementsAre(Words{"true"}, Words{"sleep", "1"}, Words{"false"}, Words{":"}));
  EXPECT_THAT(all_words("! grep -q x f"), ElementsAre(Words{"grep", "-q", "x", "f"}));
  EXPECT_THAT(all_words("for ((i = 0; i < $(nproc); i++)); do w; done"),
              ElementsAre(Words{"nproc"}, Words{"w"}));
  EXPECT_THAT(all_words("echo if then fi"), ElementsAre(Words{"echo", "if", "then", "fi"}));
}

TEST(SimpleCommands, CaseItemsAreCommandsAndPatternsAreNot) {
  EXPECT_THAT(all_words("case $x in a|b) rm -rf /;; (c) ls ;; *) echo z;; esac; pwd"),
              ElementsAre(Words{"rm", "-rf", "/"}, Words{"ls"}, Words{"echo", "z"}, Words{"pwd"}));
  EXPECT_THAT(all_words("case $x in\n  a) echo a\n  ;;\nesac"), ElementsAre(Words{"echo", "a"}));
}

TEST(SimpleCommands, FunctionBodiesKnowTheirFunction) {
  ParsedLine parsed = parse_line(":(){ :|:& };:");
  ASSERT_EQ(parsed.commands.size(), 3u);
  EXPECT_EQ(parsed.commands[0].function, ":");
  EXPECT_EQ(parsed.commands[1].function, ":");
  EXPECT_EQ(parsed.commands[0].pipeline, parsed.commands[1].pipeline);
  EXPECT_TRUE(parsed.commands[0].background);
  EXPECT_TRUE(parsed.commands[1].background);
  EXPECT_EQ(parsed.commands[2].function, "");
  EXPECT_FALSE(parsed.commands[2].background);

  ParsedLine named = parse_line("function boom { boom | boom & }; f() { ls; }; boom");
  ASSERT_EQ(named.commands.size(), 4u);
  EXPECT_EQ(named.commands[0].function, "boom");
  EXPECT_EQ(named.commands[2].function, "f");
  EXPECT_EQ(named.commands[3].function, "");
}

TEST(SimpleCommands, HereDocumentsAreDataUnlessFedToAShell) {
  EXPECT_THAT(all_words("cat <<EOF > f\nrm -rf /\nEOF\necho done"),
              ElementsAre(Words{"cat"}, Words{"echo", "done"}));
  EXPECT_THAT(all_words("cat <<-'END'\n\trm -rf /\n\tEND\nls"),
              ElementsAre(Words{"cat"}, Words{"ls"}));
  ParsedLine expanding = parse_line("cat <<EOF\n$(rm -rf /)\nEOF");
  EXPECT_NE(find_named(expanding, "rm"), nullptr);
  ParsedLine quoted = parse_line("cat <<'EOF'\n$(rm -rf /)\nEOF");
  EXPECT_EQ(find_named(quoted, "rm"), nullptr);
  ParsedLine fed = parse_line("bash <<'EOF'\ncd /tmp\nrm -rf /\nEOF\n");
  const SimpleCommand* rm = find_named(fed, "rm");
  ASSERT_NE(rm, nullptr);
  EXPECT_EQ(rm->source, Source::ShellString);
  EXPECT_THAT(all_words("python3 - <<EOF\nimport os\nEOF"), ElementsAre(Words{"python3", "-"}));
}

TEST(SimpleCommands, CommentsAndLineContinuations) {
  EXPECT_THAT(all_words("ls # ; rm -rf /\necho a#b"),
              ElementsAre(Words{"ls"}, Words{"echo", "a#b"}));
  EXPECT_THAT(all_words("rm -rf \\\n /"), ElementsAre(Words{"rm", "-rf", "/"}));
}

TEST(SimpleCommands, RawTextOfEachCommand) {
  ParsedLine parsed = parse_line("cd /tmp&&  FOO=1 git   status | head -n 3 ;");
  ASSERT_EQ(parsed.commands.size(), 3u);
  EXPECT_EQ(parsed.commands[0].raw, "cd /tmp");
  EXPECT_EQ(parsed.commands[1].raw, "FOO=1 git   status");
  EXPECT_EQ(parsed.commands[1].text, "git   status");
  EXPECT_EQ(parsed.commands[2].raw, "head -n 3");
  EXPECT_EQ(parsed.commands[1].pipeline, parsed.commands[2].pipeline);
  EXPECT_NE(parsed.commands[0].pipeline, parsed.commands[1].pipeline);
}

TEST(SimpleCommands, ArrayAssignmentIsNotASubshell) {
  EXPECT_THAT(all_words("a=(1 2 3); echo ${a[0]}"), ElementsAre(Words{}, Words{"echo", "${a[0]}"}));
}

TEST(SimpleCommands, UnbalancedInputIsHandled) {
  EXPECT_THAT(all_words("echo \"abc def"), ElementsAre(Words{"echo", "abc def"}));
  EXPECT_THAT(all_words("echo 'abc; rm x"), ElementsAre(Words{"echo", "abc; rm x"}));
  EXPECT_THAT(all_words("echo abc\\"), ElementsAre(Words{"echo", "abc"}));
  ParsedLine open_sub = parse_line("echo $(rm -rf /");
  EXPECT_NE(find_named(open_sub, "rm"), nullptr);
  EXPECT_NE(find_named(parse_line("echo `rm -rf /"), "rm"), nullptr);
  EXPECT_THAT(all_words(")) ls ((("), ElementsAre(Words{"ls"}));
  EXPECT_THAT(all_words("} } ls"), ElementsAre(Words{"ls"}));
  for (const char* line :
       {"$(",  "`",    "\"",        "'",        "${",   "$((", "<(",   "<<",       "<<EOF",  "2>",
        "&>",  "case", "case x in", "function", "f()",  ";;",  "|",    "&&",       "\\",     "$'",
        "$\"", "a=(",  "((",        "{",        "esac", "for", "<<\\", "cat <<\\", "a <<<\\"}) {
    (void)parse_line(line);  // must terminate without crashing
  }
}

TEST(SimpleCommands, DeepNestingIsCutOffAndReported) {
  std::string line = "rm -rf /";
  for (int i = 0; i < kMaxDepth + 4; ++i) line = "echo $(" + line + ")";
  ParsedLine parsed = parse_line(line);
  EXPECT_TRUE(parsed.too_deep);
  std::string shallow = "rm -rf /";
  for (int i = 0; i < 5; ++i) shallow = "echo $(" + shallow + ")";
  EXPECT_FALSE(parse_line(shallow).too_deep);
  EXPECT_NE(find_named(parse_line(shallow), "rm"), nullptr);
  // Pathological quoting nests far deeper than any real command; it must not blow the stack.
  std::string quotes;
  for (int i = 0; i < 100000; ++i) quotes += "\"$(";
  (void)parse_line(quotes);
}

TEST(SimpleCommands, RandomInputTerminates) {
  const std::string alphabet = "ab $()`'\"\\;&|<>{}#=\n\t-~/*0123!";
  std::mt19937 rng(12345);
  for (int round = 0; round < 3000; ++round) {
    std::string line;
    std::size_t len = rng() % 60;
    for (std::size_t i = 0; i < len; ++i) line += alphabet[rng() % alphabet.size()];
    ParsedLine parsed = parse_line(line);
    for (const auto& cmd : parsed.commands) EXPECT_LE(cmd.depth, kMaxDepth) << line;
  }
}

TEST(NormalizePath, LexicalOnly) {
  EXPECT_EQ(normalize_path("/"), "/");
  EXPECT_EQ(normalize_path("//"), "/");
  EXPECT_EQ(normalize_path("/./"), "/");
  EXPECT_EQ(normalize_path("/.."), "/");
  EXPECT_EQ(normalize_path("/../../"), "/");
  EXPECT_EQ(normalize_path("/tmp/../"), "/");
  EXPECT_EQ(normalize_path("/tmp/build/"), "/tmp/build");
  EXPECT_EQ(normalize_path("//dev//./sda"), "/dev/sda");
  EXPECT_EQ(normalize_path("/*"), "/*");
  EXPECT_EQ(normalize_path("/x/../*"), "/*");
  EXPECT_EQ(normalize_path("a/../b/"), "b");
  EXPECT_EQ(normalize_path("../a"), "../a");
  EXPECT_EQ(normalize_path("."), ".");
  EXPECT_EQ(normalize_path(""), ".");
}

TEST(NormalizePath, ProcRootIsTheRoot) {
  EXPECT_EQ(normalize_path("/proc/self/root/dev/sda"), "/dev/sda");
  EXPECT_EQ(normalize_path("/proc/1/root/dev/sda"), "/dev/sda");
  EXPECT_EQ(normalize_path("/proc/thread-self/root"), "/");
  EXPECT_EQ(normalize_path("/proc/self/task/12/root/etc"), "/etc");
  EXPECT_EQ(normalize_path("//proc/./self/root/proc/self/root/.."), "/");
  EXPECT_EQ(normalize_path("/proc/self/cwd/x"), "/proc/self/cwd/x");
  EXPECT_EQ(normalize_path("proc/self/root/x"), "proc/self/root/x");
}

}  // namespace
}  // namespace execmcp::plugins::shell_syntax
