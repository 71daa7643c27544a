// Splits a POSIX-sh command line into the simple commands it would run, for filters to judge.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace execmcp::plugins::shell_syntax {

// Nesting (substitutions inside shell strings inside wrappers ...) deeper than this is not
// followed; the result then says `too_deep`, so a filter can refuse what it could not see.
inline constexpr int kMaxDepth = 16;
// Bounds on what one line may expand to; past them the result says `too_large` and the rest of
// the line is not read (a filter refuses it).
inline constexpr std::size_t kMaxCommands = 10000;
inline constexpr std::size_t kMaxWords = 100000;    // words and redirections, all commands
inline constexpr std::size_t kMaxBraceWords = 256;  // words one brace expansion may produce

// Where a simple command was found.
enum class Source {
  Line,          // directly in the line, including subshells ( ) and brace groups { ;}
  Substitution,  // inside $( ), backticks, <( ) / >( ), or an expanding here-document
  ShellString,   // a string a shell runs: bash -c / su -c / eval / env -S / watch / git -c
                 // alias.x='!...', or a here-document, here-string, <( ) or `echo ... |` fed to one
  Privileged,    // the command that sudo / doas / pkexec / run0 runs: a second view of its runner
  Wrapped,  // the command a wrapper (env, nohup, timeout, xargs, parallel, find -exec ...) runs
};

struct Redirection {
  std::string op;      // as written, fd included: ">", ">>", "2>", "&>", ">|", "<", "<<", "2>&"
  std::string target;  // after quote removal; for here-documents the delimiter
  // True for operators that open the target for writing (>, >>, >|, &>, &>>, <>, >&file).
  [[nodiscard]] bool writes() const;
};

struct SimpleCommand {
  // Words after quote removal and brace expansion ({a,b} -> a b), leading assignments removed.
  // Other expansions stay as written: "$HOME" is the word `$HOME`, "$(date)" is `$(date)`.
  std::vector<std::string> words;
  std::vector<std::string> assignments;  // leading NAME=value words
  std::vector<Redirection> redirections;
  std::string raw;   // the simple command as written (trimmed)
  std::string text;  // `raw` from the first command word on (no assignments / reserved words)
  Source source = Source::Line;
  int depth = 0;            // 0 in the line itself, +1 per substitution, shell string or runner
  std::string function;     // name of the shell function whose body holds it, or ""
  int pipeline = 0;         // commands joined by | share an id (unique within one parse)
  bool background = false;  // the pipeline ends with &
  int loop = -1;            // index in ParsedLine::loops of the innermost loop body holding it
  // Index in ParsedLine::commands of the command that runs this one (a wrapper, sudo, sh -c,
  // find -exec, git -c alias...), or -1. The runner comes first.
  int runner = -1;
  // Where `text` starts inside the runner's `text` when it is written there literally
  // (`nohup git push` -> 6), or npos (a shell string, a here-document ...).
  std::size_t offset_in_runner = std::string::npos;
  // A second reading of a command listed just before (with what it runs) with every
  // ${X:-word}, ${X:=word}, ${X:+word} replaced by its word: the value when X is unset (or set,
  // for :+), and ${HOME%...} by $HOME/.. (its parent). Filters judge it like any command;
  // counting ones skip it.
  bool variant = false;

  // Basename of the first word ("/bin/rm" -> "rm"), or "" when there is no word.
  [[nodiscard]] std::string name() const;
};

struct Loop {
  // `while true`, `while :`, `until false`, `for ((;;))`: only a break, exit or signal ends it.
  bool endless = false;
  int depth = 0;  // SimpleCommand::depth of the commands written directly in its body
};

struct ParsedLine {
  // In the order found: a substitution's commands before the command holding it; what sudo,
  // sh -c, a wrapper or eval runs right after the command that runs it; then the command's
  // ${X:-word} reading, if any.
  std::vector<SimpleCommand> commands;
  std::vector<Loop> loops;  // while / until / for / select loops, by SimpleCommand::loop
  bool too_deep = false;    // some nesting exceeded kMaxDepth and was not followed
  bool too_large = false;   // over kMaxCommands, kMaxWords or kMaxBraceWords; the rest not read
};

// The splitter's entry point (also the fuzz target's): a plain function of the line. Never throws
// except std::bad_alloc; time and memory are linear in the line's size (times kMaxDepth at worst);
// unbalanced quotes or parentheses make the rest of the line one word / one substitution.
[[nodiscard]] ParsedLine parse_line(std::string_view line);

// Why a parsed line cannot be judged in full: `rule` is "too-deep" or "too-large", `reason` a
// sentence ending in "too deep <purpose>" / "too large <purpose>". nullopt when nothing was
// left unread. Filters deny such a line (fail closed), each with its own purpose.
struct PastBound {
  std::string rule;
  std::string reason;
};
[[nodiscard]] std::optional<PastBound> past_bound(const ParsedLine& parsed,
                                                  std::string_view purpose);

// Lexical normalisation of a path ("//", "/./", "/..", "a/../b"), without touching the disk.
// /proc/self/root, /proc/thread-self/root, /proc/<pid>/root and /proc/<pid>/task/<tid>/root are
// the root again. Keeps a trailing "/*" glob as the last component.
[[nodiscard]] std::string normalize_path(std::string_view path);

}  // namespace execmcp::plugins::shell_syntax
