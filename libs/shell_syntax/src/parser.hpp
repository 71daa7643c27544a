// Internal to shell_syntax (not installed): the parser class and word type its source files share.
#pragma once

#include "execmcp/plugins/shell_syntax/simple_commands.hpp"

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// `detail` because these names cross this library's own files only; the library is built with
// hidden visibility, so none of them leaves a plugin.
namespace execmcp::plugins::shell_syntax::detail {

inline bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}
inline bool is_operator_char(char c) {
  return c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '<' || c == '>' ||
         c == '\n';
}
inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
inline bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}

inline std::string_view basename_of(std::string_view word) {
  auto slash = word.find_last_of('/');
  return slash == std::string_view::npos ? word : word.substr(slash + 1);
}

inline bool one_of(std::string_view value, std::initializer_list<std::string_view> options) {
  return std::find(options.begin(), options.end(), value) != options.end();
}

inline std::string_view trim(std::string_view text) {
  while (!text.empty() && (is_blank(text.front()) || text.front() == '\n')) text.remove_prefix(1);
  while (!text.empty() && (is_blank(text.back()) || text.back() == '\n')) text.remove_suffix(1);
  return text;
}

// Skipping over quoted and parenthesised text without interpreting it (word_reader.cpp): the
// index of the matching ')' / '}' (i just after the opening one), or s.size().
std::size_t find_close_paren(std::string_view s, std::size_t i, int nesting);
std::size_t find_close_brace(std::string_view s, std::size_t i);

// Where each character of a word came from: brace expansion only sees plain characters, and
// ${X:-word} is only read in expansion text.
inline constexpr char kPlainChar = 'p';
inline constexpr char kQuotedChar = 'q';
inline constexpr char kExpansionChar = 'x';

struct Word {
  std::string value;
  std::string kinds;  // one kPlainChar / kQuotedChar / kExpansionChar per character of value
  std::size_t begin = 0;
  std::size_t end = 0;
  bool quoted = false;       // any quoting or escaping in the word
  bool quoted_name = false;  // quoting before the first '=' (so it is not an assignment)
  // The commands of a process substitution that starts the word: [subst_begin, subst_end).
  std::size_t subst_begin = 0;
  std::size_t subst_end = 0;

  void add(char c, char kind) {
    value += c;
    kinds += kind;
  }
  void add(std::string_view text, char kind) {
    value += text;
    kinds.append(text.size(), kind);
  }
};

// The word's value with every ${X:-word} ... replaced by its word, or nullopt when there is
// none (word_expansions.cpp).
std::optional<Word> default_reading(const Word& w);

struct Heredoc {
  std::string delimiter;
  bool strip_tabs = false;
  bool expands = false;      // unquoted delimiter: $( ) and backticks in the body run
  bool feeds_shell = false;  // the body is the script of sh / bash ...
  int owner = -1;            // the command whose stdin it is
};

struct Context {
  ParsedLine result;
  int next_pipeline = 0;
  std::size_t words = 0;  // words and redirections emitted so far, against kMaxWords

  // False (and the line too large) once `more` words would pass the bound.
  bool take_words(std::size_t more) {
    words += more;
    if (words > kMaxWords) result.too_large = true;
    return !result.too_large;
  }
};

// Where an emitted command's text lies in the parser's input, and which command runs it.
struct Origin {
  std::size_t raw_begin = std::string_view::npos;
  std::size_t raw_end = 0;
  int runner = -1;
  std::size_t runner_text_begin = std::string_view::npos;  // set when written in the runner
};

// Splits one text (the line, or a substitution or shell string found in it) into the simple
// commands appended to ctx.result; each nested text gets its own Parser, one level deeper.
class Parser {
 public:
  Parser(std::string_view s, Context& ctx, Source source, int depth, std::string function, int loop,
         int runner)
      : s_(s),
        ctx_(ctx),
        source_(source),
        depth_(depth),
        function_(std::move(function)),
        loop_(loop),
        runner_(runner) {
    start_pipeline();
  }

  void run();

 private:
  enum class Separator { List, Pipe, Background, CloseParen };
  enum class HeaderKind { None, For, Case };
  enum class LoopKind { While, Until, For };

  struct FunctionScope {
    std::string name;
    int brace_depth;
  };

  struct LoopScope {
    LoopKind kind;
    std::size_t condition_begin;  // first command of a while / until condition
    int id = -1;                  // index in ParsedLine::loops once `do` is read
    bool endless_for = false;     // for ((;;))
  };

  // Commands, lists and compound syntax (simple_commands.cpp).
  void step();
  bool fd_redirect_ahead() const;
  void open_paren();
  void skip_case_pattern();
  void add_word(Word w);
  bool handle_reserved_word(const std::string& v);
  bool read_arithmetic_for();
  void enter_loop_body();
  int current_loop() const;
  std::string current_function() const;
  void recurse(std::string_view text, Source source, int runner = -1);
  void start_pipeline();
  void reset_command();
  void finish(Separator separator);
  void feed_shell(int shell, const std::optional<std::string>& piped_text);
  std::optional<std::string> substitution_output(std::size_t begin, std::size_t end) const;
  void emit_default_reading();
  int emit(std::vector<Word> words, std::vector<Redirection> redirections, Source source,
           const Origin& origin);
  bool is_assignment(const Word& w) const;

  // Words, quotes, expansions and here-documents (word_reader.cpp).
  void parse_redirect(const std::string& fd);
  Word read_word();
  void read_double_quoted(Word& out);
  void read_dollar(Word& out, bool in_double_quotes);
  void read_ansi_c_quoted(Word& out);
  void read_backtick(Word& out);
  void scan_expansions(std::string_view text, Source source, bool quotes_are_literal);
  void read_heredoc_bodies();

  // Brace expansion (word_expansions.cpp).
  static bool expand_words(std::vector<Word>& words, std::size_t first);

  // Commands that run another command (command_runners.cpp).
  int run_words(const std::vector<Word>& words, std::size_t from, std::size_t to, Source source,
                int self, std::size_t runner_text_begin, std::size_t raw_end);
  int follow_runner(const std::vector<Word>& words, std::size_t first, int self,
                    std::size_t text_begin, std::size_t raw_end,
                    const std::vector<std::string>& assignments);
  static std::optional<std::pair<std::string, std::size_t>> env_split_string(
      const std::vector<Word>& words, std::size_t first);
  int follow_flock(const std::vector<Word>& words, std::size_t first, int self,
                   std::size_t text_begin, std::size_t raw_end);
  int follow_parallel(const std::vector<Word>& words, std::size_t first, int self,
                      std::size_t text_begin, std::size_t raw_end);
  int follow_watch(const std::vector<Word>& words, std::size_t first, int self,
                   std::size_t text_begin, std::size_t raw_end);
  void follow_find(const std::vector<Word>& words, std::size_t first, int self,
                   std::size_t text_begin, std::size_t raw_end);
  void follow_git(const std::vector<Word>& words, std::size_t first, int self,
                  const std::vector<std::string>& assignments);
  void follow_git_config(const std::vector<Word>& words, std::size_t i, int self);
  int follow_shell(const std::vector<Word>& words, std::size_t i, int self);
  int follow_script_operand(const std::vector<Word>& words, std::size_t i, int self);
  void follow_su(const std::vector<Word>& words, std::size_t first, int self);

  std::string_view s_;
  Context& ctx_;
  Source source_;
  int depth_;
  std::string function_;  // enclosing function inherited from the outer parser
  int loop_;              // enclosing loop inherited from the outer parser
  int runner_;            // the command that runs this text (bash for bash -c), or -1
  std::size_t pos_ = 0;
  int wrap_depth_ = 0;    // runners being followed inside emit (nohup nice ...)
  bool variant_ = false;  // emitting the ${X:-word} reading

  std::vector<Word> words_;
  std::vector<Redirection> redirections_;
  std::vector<Word> redirection_words_;  // the targets as read, for their ${X:-word} reading
  std::vector<std::string> here_strings_;
  std::vector<std::pair<std::size_t, std::size_t>> stdin_substitutions_;  // < <(...)
  std::optional<std::string> piped_text_;    // what echo / printf before a `|` prints
  std::vector<std::size_t> piped_heredocs_;  // here-documents `cat` before a `|` passes on
  std::size_t cmd_begin_ = std::string_view::npos;
  std::size_t cmd_end_ = 0;
  HeaderKind header_ = HeaderKind::None;

  int pipeline_ = 0;
  std::size_t pipeline_first_index_ = 0;
  std::vector<Heredoc> heredocs_;
  std::size_t heredoc_head_ = 0;     // next here-document whose body is to be read
  std::size_t heredoc_unowned_ = 0;  // first here-document whose command is not emitted yet

  int brace_depth_ = 0;
  std::vector<FunctionScope> functions_;
  std::vector<LoopScope> loops_;
  std::string pending_function_;
  bool expecting_function_name_ = false;
  int case_depth_ = 0;
  bool case_pattern_ = false;
};

}  // namespace execmcp::plugins::shell_syntax::detail
