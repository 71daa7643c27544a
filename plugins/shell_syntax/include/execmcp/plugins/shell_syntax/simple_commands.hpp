// Splits a POSIX-sh command line into the simple commands it would run, for filters to judge.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace execmcp::plugins::shell_syntax {

// Nesting (substitutions inside shell strings inside ...) deeper than this is not followed; the
// result then says `too_deep`, so a filter can refuse what it could not see.
inline constexpr int kMaxDepth = 16;

// Where a simple command was found.
enum class Source {
  Line,          // directly in the line, including subshells ( ) and brace groups { ;}
  Substitution,  // inside $( ), backticks, <( ) / >( ), or an expanding here-document
  ShellString,   // the string of bash -c / sh -c / su -c / eval, or a here-document fed to a shell
  Privileged,    // the command that sudo / doas / pkexec runs: a second view of a listed command
};

struct Redirection {
  std::string op;      // as written, fd included: ">", ">>", "2>", "&>", ">|", "<", "<<", "2>&"
  std::string target;  // after quote removal; for here-documents the delimiter
  // True for operators that open the target for writing (>, >>, >|, &>, &>>, <>, >&file).
  [[nodiscard]] bool writes() const;
};

struct SimpleCommand {
  // Words after quote removal, leading assignments and wrappers (env, nohup, ...) removed.
  // Expansions stay as written: "$HOME" is the word `$HOME`, "$(date)" is `$(date)`.
  std::vector<std::string> words;
  std::vector<std::string> assignments;  // leading NAME=value words
  std::vector<std::string> wrappers;     // stripped wrapper commands, e.g. {"nohup", "env"}
  std::vector<Redirection> redirections;
  std::string raw;   // the simple command as written (trimmed)
  std::string text;  // `raw` from the first command word on (no assignments / reserved words)
  Source source = Source::Line;
  int depth = 0;            // 0 in the line itself, +1 per substitution or shell string
  std::string function;     // name of the shell function whose body holds it, or ""
  int pipeline = 0;         // commands joined by | share an id (unique within one parse)
  bool background = false;  // the pipeline ends with &

  // Basename of the first word ("/bin/rm" -> "rm"), or "" when there is no word.
  [[nodiscard]] std::string name() const;
};

struct ParsedLine {
  // In the order found: a substitution's commands before the command holding it; what sudo,
  // sh -c or eval runs right after the command that runs it.
  std::vector<SimpleCommand> commands;
  bool too_deep = false;  // some nesting exceeded kMaxDepth and was not followed
};

// Never throws except std::bad_alloc; never loops forever; unbalanced quotes or parentheses make
// the rest of the line one word / one substitution.
[[nodiscard]] ParsedLine parse_line(std::string_view line);

// Lexical normalisation of a path ("//", "/./", "/..", "a/../b"), without touching the disk.
// Keeps a trailing "/*" glob as the last component.
[[nodiscard]] std::string normalize_path(std::string_view path);

}  // namespace execmcp::plugins::shell_syntax
