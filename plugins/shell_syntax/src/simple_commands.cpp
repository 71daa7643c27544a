// A single-pass lexer/splitter for POSIX-sh lines: good enough to judge commands, not to run them.
#include "execmcp/plugins/shell_syntax/simple_commands.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <initializer_list>
#include <utility>

namespace execmcp::plugins::shell_syntax {
namespace {

// Bounds the recursion of the quote/parenthesis skippers on adversarial input like "$("$("$(...
constexpr int kMaxSkipNesting = 200;

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}
bool is_operator_char(char c) {
  return c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '<' || c == '>' ||
         c == '\n';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}

std::string_view basename_of(std::string_view word) {
  auto slash = word.find_last_of('/');
  return slash == std::string_view::npos ? word : word.substr(slash + 1);
}

bool one_of(std::string_view value, std::initializer_list<std::string_view> options) {
  return std::find(options.begin(), options.end(), value) != options.end();
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (is_blank(text.front()) || text.front() == '\n')) text.remove_prefix(1);
  while (!text.empty() && (is_blank(text.back()) || text.back() == '\n')) text.remove_suffix(1);
  return text;
}

// --- skipping over quoted and parenthesised text without interpreting it ---------------------

std::size_t find_close_paren(std::string_view s, std::size_t i, int nesting);

// i is just after the opening '"'; returns the index just after the closing '"' (or s.size()).
std::size_t skip_double_quoted(std::string_view s, std::size_t i, int nesting) {
  while (i < s.size()) {
    char c = s[i];
    if (c == '\\') {
      i += 2;
    } else if (c == '"') {
      return i + 1;
    } else if (c == '$' && i + 1 < s.size() && s[i + 1] == '(') {
      std::size_t close = find_close_paren(s, i + 2, nesting + 1);
      i = close < s.size() ? close + 1 : s.size();
    } else if (c == '`') {
      ++i;
      while (i < s.size() && s[i] != '`') i += s[i] == '\\' ? 2 : 1;
      ++i;
    } else {
      ++i;
    }
  }
  return s.size();
}

// i is just after an opening '(' ; returns the index of the matching ')' or s.size().
std::size_t find_close_paren(std::string_view s, std::size_t i, int nesting) {
  if (nesting > kMaxSkipNesting) return s.size();
  int depth = 1;
  while (i < s.size()) {
    char c = s[i];
    if (c == '\\') {
      i += 2;
    } else if (c == '\'') {
      auto close = s.find('\'', i + 1);
      i = close == std::string_view::npos ? s.size() : close + 1;
    } else if (c == '"') {
      i = skip_double_quoted(s, i + 1, nesting + 1);
    } else if (c == '`') {
      ++i;
      while (i < s.size() && s[i] != '`') i += s[i] == '\\' ? 2 : 1;
      ++i;
    } else if (c == '(') {
      ++depth;
      ++i;
    } else if (c == ')') {
      if (--depth == 0) return i;
      ++i;
    } else {
      ++i;
    }
  }
  return s.size();
}

// i is just after "${"; returns the index of the matching '}' or s.size().
std::size_t find_close_brace(std::string_view s, std::size_t i) {
  int depth = 1;
  while (i < s.size()) {
    char c = s[i];
    if (c == '\\') {
      i += 2;
    } else if (c == '\'') {
      auto close = s.find('\'', i + 1);
      i = close == std::string_view::npos ? s.size() : close + 1;
    } else if (c == '"') {
      i = skip_double_quoted(s, i + 1, 0);
    } else if (c == '{') {
      ++depth;
      ++i;
    } else if (c == '}') {
      if (--depth == 0) return i;
      ++i;
    } else {
      ++i;
    }
  }
  return s.size();
}

// --- wrappers: commands that run their arguments as a command -------------------------------

struct OptionSpec {
  std::string_view short_with_arg;                        // e.g. "n" for nice -n 10
  std::initializer_list<std::string_view> long_with_arg;  // e.g. --adjustment 10
  int positionals = 0;       // words to skip after the options (timeout 5)
  bool assignments = false;  // env: NAME=value words may follow
};

// Returns the index of the first word after the options of words[start - 1].
template <class Word>
std::size_t skip_options(const std::vector<Word>& words, std::size_t i, const OptionSpec& spec) {
  while (i < words.size()) {
    const std::string& w = words[i].value;
    if (w == "--") {
      ++i;
      break;
    }
    if (spec.assignments && !words[i].quoted_name && w.find('=') != std::string::npos &&
        is_name_start(w[0])) {
      ++i;
      continue;
    }
    if (w.size() < 2 || w[0] != '-') break;
    if (w[1] == '-') {
      bool takes_arg = w.find('=') == std::string::npos &&
                       std::find(spec.long_with_arg.begin(), spec.long_with_arg.end(), w) !=
                           spec.long_with_arg.end();
      i += takes_arg ? 2 : 1;
      continue;
    }
    bool arg_next = false;
    for (std::size_t k = 1; k < w.size(); ++k) {
      if (spec.short_with_arg.find(w[k]) != std::string_view::npos) {
        arg_next = k + 1 == w.size();  // otherwise the argument is attached: -n10
        break;
      }
    }
    i += arg_next ? 2 : 1;
  }
  for (int p = 0; p < spec.positionals && i < words.size(); ++p) ++i;
  return std::min(i, words.size());
}

const OptionSpec* wrapper_spec(std::string_view name) {
  static const OptionSpec kEnv{"uCS", {"--unset", "--chdir", "--split-string"}, 0, true};
  static const OptionSpec kPlain{"", {}, 0, false};
  static const OptionSpec kExec{"a", {}, 0, false};
  static const OptionSpec kTime{"fo", {"--format", "--output"}, 0, false};
  static const OptionSpec kNice{"n", {"--adjustment"}, 0, false};
  static const OptionSpec kTimeout{"sk", {"--signal", "--kill-after"}, 1, false};
  static const OptionSpec kStdbuf{"ioe", {"--input", "--output", "--error"}, 0, false};
  static const OptionSpec kIonice{"cnp", {"--class", "--classdata", "--pid"}, 0, false};
  static const OptionSpec kXargs{
      "IadELnPs",
      {"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars"},
      0,
      false};
  if (name == "env") return &kEnv;
  if (one_of(name, {"command", "nohup", "setsid", "busybox", "builtin"})) return &kPlain;
  if (name == "exec") return &kExec;
  if (name == "time") return &kTime;
  if (name == "nice") return &kNice;
  if (name == "timeout") return &kTimeout;
  if (name == "stdbuf") return &kStdbuf;
  if (name == "ionice") return &kIonice;
  if (name == "xargs") return &kXargs;
  return nullptr;
}

const OptionSpec* privileged_spec(std::string_view name) {
  static const OptionSpec kSudo{"ugpCDrtUT",
                                {"--user", "--group", "--prompt", "--close-from", "--chdir",
                                 "--role", "--type", "--other-user", "--command-timeout", "--host"},
                                0,
                                false};
  static const OptionSpec kDoas{"uC", {}, 0, false};
  static const OptionSpec kPkexec{"", {"--user"}, 0, false};
  if (name == "sudo") return &kSudo;
  if (name == "doas") return &kDoas;
  if (name == "pkexec") return &kPkexec;
  return nullptr;
}

bool is_shell(std::string_view name) {
  return one_of(name, {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "rbash"});
}

// --- the parser ---------------------------------------------------------------------------------

struct Word {
  std::string value;
  std::size_t begin = 0;
  std::size_t end = 0;
  bool quoted = false;       // any quoting or escaping in the word
  bool quoted_name = false;  // quoting before the first '=' (so it is not an assignment)
};

struct Heredoc {
  std::string delimiter;
  bool strip_tabs = false;
  bool expands = false;       // unquoted delimiter: $( ) and backticks in the body run
  bool feeds_shell = false;   // the body is the script of sh / bash ...
  bool owner_pending = true;  // its command has not been emitted yet
};

struct Context {
  ParsedLine result;
  int next_pipeline = 0;
};

class Parser {
 public:
  Parser(std::string_view s, Context& ctx, Source source, int depth, std::string function)
      : s_(s), ctx_(ctx), source_(source), depth_(depth), function_(std::move(function)) {
    start_pipeline();
  }

  void run() {
    while (pos_ < s_.size()) step();
    finish(Separator::List);
    read_heredoc_bodies();  // a here-document that runs to the end of the input
  }

 private:
  enum class Separator { List, Pipe, Background, CloseParen };

  struct FunctionScope {
    std::string name;
    int brace_depth;
  };

  void step() {
    char c = s_[pos_];
    char next = pos_ + 1 < s_.size() ? s_[pos_ + 1] : '\0';
    if (case_pattern_) {
      skip_case_pattern();
      return;
    }
    if (is_blank(c)) {
      ++pos_;
    } else if (c == '\\' && next == '\n') {
      pos_ += 2;
    } else if (c == '\n') {
      ++pos_;
      finish(Separator::List);
      read_heredoc_bodies();
    } else if (c == '#') {
      auto eol = s_.find('\n', pos_);
      pos_ = eol == std::string_view::npos ? s_.size() : eol;
    } else if (c == ';') {
      pos_ += next == ';' ? 2 : 1;
      if (pos_ < s_.size() && s_[pos_] == '&') ++pos_;  // ;& and ;;&
      bool ends_case_item = next == ';' || (next == '&' && case_depth_ > 0);
      finish(Separator::List);
      if (ends_case_item && case_depth_ > 0) case_pattern_ = true;
    } else if (c == '&' && next == '&') {
      pos_ += 2;
      finish(Separator::List);
    } else if (c == '&' && next == '>') {
      parse_redirect("");
    } else if (c == '&') {
      ++pos_;
      finish(Separator::Background);
    } else if (c == '|') {
      bool or_list = next == '|';
      pos_ += (next == '|' || next == '&') ? 2 : 1;
      finish(or_list ? Separator::List : Separator::Pipe);
    } else if (c == '(') {
      open_paren();
    } else if (c == ')') {
      ++pos_;
      finish(Separator::CloseParen);
    } else if ((c == '<' || c == '>') && next == '(') {
      add_word(read_word());  // process substitution
    } else if (c == '<' || c == '>') {
      parse_redirect("");
    } else if (is_digit(c) && fd_redirect_ahead()) {
      std::size_t j = pos_;
      while (is_digit(s_[j])) ++j;
      std::string fd(s_.substr(pos_, j - pos_));
      pos_ = j;
      parse_redirect(fd);
    } else {
      add_word(read_word());
    }
  }

  bool fd_redirect_ahead() const {
    std::size_t j = pos_;
    while (j < s_.size() && is_digit(s_[j])) ++j;
    return j < s_.size() && (s_[j] == '<' || s_[j] == '>');
  }

  void open_paren() {
    // `name ( )` defines a function; otherwise '(' opens a subshell, which for judging is just a
    // list of commands.
    std::size_t j = pos_ + 1;
    while (j < s_.size() && is_blank(s_[j])) ++j;
    bool empty_parens = j < s_.size() && s_[j] == ')';
    if (empty_parens && words_.size() == 1 && redirections_.empty() && !words_[0].quoted) {
      pending_function_ = words_[0].value;
      reset_command();
      pos_ = j + 1;
      return;
    }
    if (empty_parens && words_.empty() && !pending_function_.empty()) {  // function f () {
      pos_ = j + 1;
      return;
    }
    ++pos_;
    finish(Separator::List);
  }

  void skip_case_pattern() {
    // Inside `case ... in`, text up to ')' is a pattern, not a command.
    char c = s_[pos_];
    if (is_blank(c) || c == '\n' || c == '|' || c == '(') {
      ++pos_;
    } else if (c == ')') {
      ++pos_;
      case_pattern_ = false;
    } else {
      Word w = read_word();
      if (w.value.empty() && pos_ < s_.size()) ++pos_;  // an operator we do not expect here
      if (!w.quoted && w.value == "esac") {
        case_pattern_ = false;
        if (case_depth_ > 0) --case_depth_;
      }
    }
  }

  void add_word(Word w) {
    if (w.value.empty() && !w.quoted && w.begin == w.end) {
      ++pos_;  // defensive: never stall on a character read_word did not take
      return;
    }
    if (words_.empty() && !w.quoted) {
      if (expecting_function_name_) {
        expecting_function_name_ = false;
        pending_function_ = w.value;
        return;
      }
      if (handle_reserved_word(w.value)) return;
    }
    if (header_ == HeaderKind::Case && !w.quoted && w.value == "in" && !words_.empty()) {
      finish(Separator::List);  // `case WORD in`: patterns follow
      return;
    }
    if (words_.empty() && redirections_.empty()) cmd_begin_ = w.begin;
    cmd_end_ = std::max(cmd_end_, w.end);
    words_.push_back(std::move(w));
  }

  // Reserved words at the start of a command are syntax, not commands.
  bool handle_reserved_word(const std::string& v) {
    if (v == "{") {
      ++brace_depth_;
      if (!pending_function_.empty()) {
        functions_.push_back({std::move(pending_function_), brace_depth_});
        pending_function_.clear();
      }
      return true;
    }
    if (v == "}") {
      if (!functions_.empty() && functions_.back().brace_depth == brace_depth_) {
        functions_.pop_back();
      }
      if (brace_depth_ > 0) --brace_depth_;
      return true;
    }
    if (v == "function") {
      expecting_function_name_ = true;
      return true;
    }
    if (v == "case") {
      header_ = HeaderKind::Case;
      return true;
    }
    if (v == "for" || v == "select") {
      header_ = HeaderKind::For;
      return true;
    }
    if (v == "esac") {
      if (case_depth_ > 0) --case_depth_;
      return true;
    }
    return one_of(v, {"!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until"});
  }

  void parse_redirect(const std::string& fd) {
    std::string op = fd;
    auto take = [&](std::string_view text) {
      op += text;
      pos_ += text.size();
    };
    auto ahead = [&](std::string_view text) { return s_.substr(pos_, text.size()) == text; };
    // Longest operators first, so ">>" is not read as ">" followed by ">".
    static constexpr std::string_view kOperators[] = {"&>>", "&>",  ">>", ">|", ">&", ">",
                                                      "<<<", "<<-", "<<", "<>", "<&", "<"};
    const auto* match = std::find_if(std::begin(kOperators), std::end(kOperators), ahead);
    take(match != std::end(kOperators) ? *match : std::string_view("<"));

    if (words_.empty() && redirections_.empty()) cmd_begin_ = pos_ - (op.size());
    while (pos_ < s_.size() && is_blank(s_[pos_])) ++pos_;
    Word target;
    if (pos_ < s_.size() && !(is_operator_char(s_[pos_]) && s_[pos_] != '<' && s_[pos_] != '>'))
      target = read_word();
    cmd_end_ = std::max(cmd_end_, std::max(pos_, target.end));
    if (op.ends_with("<<") || op.ends_with("<<-")) {
      heredocs_.push_back({target.value, op.ends_with("-"), !target.quoted, false, true});
    }
    redirections_.push_back({std::move(op), std::move(target.value)});
  }

  // Reads one word at pos_, doing quote removal and following substitutions.
  Word read_word() {
    Word w;
    w.begin = pos_;
    bool seen_equals = false;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      char next = pos_ + 1 < s_.size() ? s_[pos_ + 1] : '\0';
      if ((c == '<' || c == '>') && next == '(' && pos_ == w.begin) {
        std::size_t close = find_close_paren(s_, pos_ + 2, 0);
        recurse(s_.substr(pos_ + 2, close - std::min(close, pos_ + 2)), Source::Substitution);
        std::size_t end = close < s_.size() ? close + 1 : s_.size();
        w.value += s_.substr(pos_, end - pos_);
        pos_ = end;
        continue;
      }
      if (is_blank(c) || is_operator_char(c)) {
        // a=(1 2 3): an array assignment, not a subshell.
        if (c == '(' && seen_equals && !w.value.empty() && w.value.back() == '=' &&
            !w.quoted_name) {
          std::size_t close = find_close_paren(s_, pos_ + 1, 0);
          std::size_t end = close < s_.size() ? close + 1 : s_.size();
          scan_expansions(s_.substr(pos_ + 1, end - pos_ - 1), Source::Substitution, false);
          w.value += s_.substr(pos_, end - pos_);
          pos_ = end;
          continue;
        }
        break;
      }
      if (c == '\\') {
        if (next == '\n') {
          pos_ += 2;
          continue;
        }
        if (!seen_equals) w.quoted_name = true;
        w.quoted = true;
        if (pos_ + 1 < s_.size()) w.value += next;
        pos_ += 2;
      } else if (c == '\'') {
        if (!seen_equals) w.quoted_name = true;
        w.quoted = true;
        auto close = s_.find('\'', pos_ + 1);
        if (close == std::string_view::npos) close = s_.size();
        w.value += s_.substr(pos_ + 1, close - pos_ - 1);
        pos_ = std::min(close + 1, s_.size());
      } else if (c == '"') {
        if (!seen_equals) w.quoted_name = true;
        w.quoted = true;
        ++pos_;
        read_double_quoted(w.value);
      } else if (c == '$') {
        if (!seen_equals && (next == '\'' || next == '"')) w.quoted_name = true;
        if (next == '\'' || next == '"') w.quoted = true;
        read_dollar(w.value, false);
      } else if (c == '`') {
        if (!seen_equals) w.quoted_name = true;
        read_backtick(w.value);
      } else {
        if (c == '=') seen_equals = true;
        w.value += c;
        ++pos_;
      }
    }
    w.end = pos_;
    w.begin = std::min(w.begin, w.end);
    return w;
  }

  // pos_ is just after the opening '"'.
  void read_double_quoted(std::string& out) {
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_];
      char next = pos_ + 1 < s_.size() ? s_[pos_ + 1] : '\0';
      if (c == '\\' && (next == '$' || next == '`' || next == '"' || next == '\\')) {
        out += next;
        pos_ += 2;
      } else if (c == '\\' && next == '\n') {
        pos_ += 2;
      } else if (c == '$') {
        read_dollar(out, true);
      } else if (c == '`') {
        read_backtick(out);
      } else {
        out += c;
        ++pos_;
      }
    }
    if (pos_ < s_.size()) ++pos_;
  }

  // pos_ is at '$'. Expansions stay in the word as written; command substitutions are followed.
  void read_dollar(std::string& out, bool in_double_quotes) {
    char next = pos_ + 1 < s_.size() ? s_[pos_ + 1] : '\0';
    std::size_t start = pos_;
    if (next == '(') {
      bool arithmetic = pos_ + 2 < s_.size() && s_[pos_ + 2] == '(';
      std::size_t close = find_close_paren(s_, pos_ + 2, 0);
      std::string_view inner = s_.substr(pos_ + 2, close - std::min(close, pos_ + 2));
      if (arithmetic)
        scan_expansions(inner, Source::Substitution, false);
      else
        recurse(inner, Source::Substitution);
      pos_ = close < s_.size() ? close + 1 : s_.size();
      out += s_.substr(start, pos_ - start);
    } else if (next == '{') {
      std::size_t close = find_close_brace(s_, pos_ + 2);
      scan_expansions(s_.substr(pos_ + 2, close - std::min(close, pos_ + 2)), Source::Substitution,
                      false);
      pos_ = close < s_.size() ? close + 1 : s_.size();
      out += s_.substr(start, pos_ - start);
    } else if (next == '\'' && !in_double_quotes) {
      pos_ += 2;
      read_ansi_c_quoted(out);
    } else if (next == '"' && !in_double_quotes) {
      pos_ += 2;
      read_double_quoted(out);
    } else {
      out += '$';
      ++pos_;
    }
  }

  // $'...': pos_ is just after the opening quote.
  void read_ansi_c_quoted(std::string& out) {
    while (pos_ < s_.size() && s_[pos_] != '\'') {
      char c = s_[pos_];
      if (c == '\\' && pos_ + 1 < s_.size()) {
        char e = s_[pos_ + 1];
        pos_ += 2;
        switch (e) {
          case 'n':
            out += '\n';
            break;
          case 't':
            out += '\t';
            break;
          case 'r':
            out += '\r';
            break;
          case 'x': {
            int value = 0;
            int digits = 0;
            while (digits < 2 && pos_ < s_.size() &&
                   std::isxdigit(static_cast<unsigned char>(s_[pos_]))) {
              char h = s_[pos_++];
              value = value * 16 + (is_digit(h) ? h - '0' : (std::tolower(h) - 'a' + 10));
              ++digits;
            }
            out += digits > 0 ? static_cast<char>(value) : 'x';
            break;
          }
          default:
            out += e;
            break;
        }
      } else {
        out += c;
        ++pos_;
      }
    }
    if (pos_ < s_.size()) ++pos_;
  }

  // pos_ is at the opening backtick.
  void read_backtick(std::string& out) {
    std::size_t start = pos_++;
    std::string inner;
    while (pos_ < s_.size() && s_[pos_] != '`') {
      char c = s_[pos_];
      char next = pos_ + 1 < s_.size() ? s_[pos_ + 1] : '\0';
      if (c == '\\' && (next == '`' || next == '\\' || next == '$')) {
        inner += next;
        pos_ += 2;
      } else {
        inner += c;
        ++pos_;
      }
    }
    if (pos_ < s_.size()) ++pos_;
    recurse(inner, Source::Substitution);
    out += s_.substr(start, pos_ - start);
  }

  // Finds $( ) and backticks in text that is otherwise data (here-document bodies, ${...}).
  void scan_expansions(std::string_view text, Source source, bool quotes_are_literal) {
    std::size_t i = 0;
    while (i < text.size()) {
      char c = text[i];
      char next = i + 1 < text.size() ? text[i + 1] : '\0';
      if (c == '\\') {
        i += 2;
      } else if (c == '\'' && !quotes_are_literal) {
        auto close = text.find('\'', i + 1);
        i = close == std::string_view::npos ? text.size() : close + 1;
      } else if (c == '$' && next == '(') {
        bool arithmetic = i + 2 < text.size() && text[i + 2] == '(';
        std::size_t close = find_close_paren(text, i + 2, 0);
        std::string_view inner = text.substr(i + 2, close - std::min(close, i + 2));
        if (arithmetic)
          scan_expansions(inner, source, quotes_are_literal);
        else
          recurse(inner, source);
        i = close < text.size() ? close + 1 : text.size();
      } else if (c == '`') {
        std::string inner;
        ++i;
        while (i < text.size() && text[i] != '`') {
          if (text[i] == '\\' && i + 1 < text.size()) {
            inner += text[i + 1];
            i += 2;
          } else {
            inner += text[i++];
          }
        }
        ++i;
        recurse(inner, source);
      } else {
        ++i;
      }
    }
  }

  void recurse(std::string_view text, Source source) {
    if (depth_ + 1 > kMaxDepth) {
      ctx_.result.too_deep = true;
      return;
    }
    // The inner parser owns a copy: `text` may be a temporary (unescaped backtick contents).
    std::string copy(text);
    Parser inner(copy, ctx_, source, depth_ + 1, current_function());
    inner.run();
  }

  std::string current_function() const {
    return functions_.empty() ? function_ : functions_.back().name;
  }

  void read_heredoc_bodies() {
    while (!heredocs_.empty() && pos_ <= s_.size()) {
      Heredoc doc = std::move(heredocs_.front());
      heredocs_.erase(heredocs_.begin());
      std::size_t body_begin = pos_;
      std::size_t body_end = s_.size();
      while (pos_ < s_.size()) {
        auto eol = s_.find('\n', pos_);
        std::size_t line_end = eol == std::string_view::npos ? s_.size() : eol;
        std::string_view line = s_.substr(pos_, line_end - pos_);
        if (doc.strip_tabs)
          while (!line.empty() && line.front() == '\t') line.remove_prefix(1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line == doc.delimiter) {
          body_end = pos_;
          pos_ = eol == std::string_view::npos ? s_.size() : eol + 1;
          break;
        }
        pos_ = eol == std::string_view::npos ? s_.size() : eol + 1;
      }
      std::string_view body = s_.substr(body_begin, std::max(body_end, body_begin) - body_begin);
      if (doc.feeds_shell)
        recurse(body, Source::ShellString);
      else if (doc.expands)
        scan_expansions(body, Source::Substitution, true);
    }
  }

  void start_pipeline() {
    pipeline_ = ctx_.next_pipeline++;
    pipeline_first_index_ = ctx_.result.commands.size();
  }

  void reset_command() {
    words_.clear();
    redirections_.clear();
    cmd_begin_ = std::string_view::npos;
    cmd_end_ = 0;
    header_ = HeaderKind::None;
  }

  void finish(Separator separator) {
    bool fed_shell = false;
    if (header_ == HeaderKind::Case) {
      ++case_depth_;
      case_pattern_ = true;  // after `case WORD in` come patterns
    } else if (header_ == HeaderKind::None && (!words_.empty() || !redirections_.empty())) {
      fed_shell = emit(words_, redirections_, source_);
    }
    for (auto& doc : heredocs_) {
      if (!doc.owner_pending) continue;
      doc.owner_pending = false;
      doc.feeds_shell = fed_shell;
    }
    reset_command();
    if (separator == Separator::Pipe) return;
    if (separator == Separator::Background) {
      for (std::size_t i = pipeline_first_index_; i < ctx_.result.commands.size(); ++i) {
        if (ctx_.result.commands[i].pipeline == pipeline_)
          ctx_.result.commands[i].background = true;
      }
    }
    start_pipeline();
  }

  // Emits one simple command (and what it runs through sudo, sh -c, eval ...). Returns true when
  // the command is a shell reading its script from stdin (so a here-document is code).
  bool emit(std::vector<Word> words, std::vector<Redirection> redirections, Source source) {
    SimpleCommand cmd;
    std::size_t first = 0;
    while (first < words.size() && is_assignment(words[first])) {
      cmd.assignments.push_back(words[first].value);
      ++first;
    }
    std::size_t text_begin = first < words.size() ? words[first].begin : cmd_begin_;
    // Wrappers run their arguments as the command; `command -v x` only looks x up.
    while (first < words.size()) {
      std::string_view name = basename_of(words[first].value);
      const OptionSpec* spec = words[first].quoted ? nullptr : wrapper_spec(name);
      if (spec == nullptr) break;
      if (name == "command" && first + 1 < words.size() &&
          (words[first + 1].value == "-v" || words[first + 1].value == "-V"))
        break;
      std::size_t after = skip_options(words, first + 1, *spec);
      if (after >= words.size()) break;  // `nohup` alone, `env` alone: keep it as the command
      cmd.wrappers.emplace_back(name);
      first = after;
    }
    for (std::size_t i = first; i < words.size(); ++i) cmd.words.push_back(words[i].value);
    cmd.redirections = std::move(redirections);
    if (cmd_begin_ != std::string_view::npos && cmd_end_ > cmd_begin_) {
      cmd.raw = std::string(trim(s_.substr(cmd_begin_, cmd_end_ - cmd_begin_)));
      if (text_begin != std::string_view::npos && text_begin < cmd_end_)
        cmd.text = std::string(trim(s_.substr(text_begin, cmd_end_ - text_begin)));
    }
    if (cmd.text.empty()) cmd.text = cmd.raw;
    cmd.source = source;
    cmd.depth = depth_;
    cmd.function = current_function();
    cmd.pipeline = pipeline_;
    ctx_.result.commands.push_back(std::move(cmd));

    if (first >= words.size()) return false;
    std::string_view name = basename_of(words[first].value);
    if (const OptionSpec* spec = privileged_spec(name)) {
      std::size_t after = skip_options(words, first + 1, *spec);
      if (after < words.size()) {
        std::vector<Word> rest(words.begin() + static_cast<std::ptrdiff_t>(after), words.end());
        emit(std::move(rest), {}, Source::Privileged);
      }
      return false;
    }
    if (is_shell(name)) return follow_shell(words, first);
    if (name == "su") {
      follow_su(words, first);
    } else if (name == "eval") {
      std::string joined;
      for (std::size_t i = first + 1; i < words.size(); ++i) {
        if (!joined.empty()) joined += ' ';
        joined += words[i].value;
      }
      recurse(joined, Source::ShellString);
    }
    return false;
  }

  // sh -c 'string' (also -ec, -lc ...): parse the string. Returns true for a shell reading stdin.
  bool follow_shell(const std::vector<Word>& words, std::size_t first) {
    std::size_t i = first + 1;
    bool has_c = false;
    while (i < words.size()) {
      const std::string& w = words[i].value;
      if (w == "--") {
        ++i;
        break;
      }
      if (w.starts_with("--")) {
        i += (w == "--rcfile" || w == "--init-file") ? 2 : 1;
        continue;
      }
      if (w.size() >= 2 && (w[0] == '-' || w[0] == '+')) {
        bool takes_arg = false;
        for (std::size_t k = 1; k < w.size(); ++k) {
          if (w[k] == 'c') has_c = true;
          if (w[k] == 'o' || w[k] == 'O') takes_arg = true;
        }
        i += takes_arg ? 2 : 1;
        continue;
      }
      break;
    }
    if (has_c) {
      if (i < words.size()) recurse(words[i].value, Source::ShellString);
      return false;
    }
    return i >= words.size();  // no script file: the script comes from stdin
  }

  void follow_su(const std::vector<Word>& words, std::size_t first) {
    for (std::size_t i = first + 1; i < words.size(); ++i) {
      const std::string& w = words[i].value;
      if (w.starts_with("--command=")) {
        recurse(std::string_view(w).substr(10), Source::ShellString);
      } else if (w == "--command" ||
                 (w.size() >= 2 && w[0] == '-' && w[1] != '-' && w.back() == 'c')) {
        if (i + 1 < words.size()) recurse(words[i + 1].value, Source::ShellString);
        ++i;
      }
    }
  }

  bool is_assignment(const Word& w) const {
    if (w.quoted_name || w.value.empty() || !is_name_start(w.value[0])) return false;
    std::size_t k = 1;
    while (k < w.value.size() && is_name_char(w.value[k])) ++k;
    if (k < w.value.size() && w.value[k] == '+') ++k;
    return k < w.value.size() && w.value[k] == '=';
  }

  enum class HeaderKind { None, For, Case };

  std::string_view s_;
  Context& ctx_;
  Source source_;
  int depth_;
  std::string function_;  // enclosing function inherited from the outer parser
  std::size_t pos_ = 0;

  std::vector<Word> words_;
  std::vector<Redirection> redirections_;
  std::size_t cmd_begin_ = std::string_view::npos;
  std::size_t cmd_end_ = 0;
  HeaderKind header_ = HeaderKind::None;

  int pipeline_ = 0;
  std::size_t pipeline_first_index_ = 0;
  std::vector<Heredoc> heredocs_;

  int brace_depth_ = 0;
  std::vector<FunctionScope> functions_;
  std::string pending_function_;
  bool expecting_function_name_ = false;
  int case_depth_ = 0;
  bool case_pattern_ = false;
};

}  // namespace

bool Redirection::writes() const {
  if (op.find('>') == std::string::npos) return false;
  // 2>&1 and >&- duplicate or close a descriptor; >&file writes to file.
  if (op.ends_with(">&")) {
    return !(target == "-" || (!target.empty() && std::all_of(target.begin(), target.end(),
                                                              [](char c) { return is_digit(c); })));
  }
  return true;
}

std::string SimpleCommand::name() const {
  return words.empty() ? std::string() : std::string(basename_of(words.front()));
}

ParsedLine parse_line(std::string_view line) {
  Context ctx;
  Parser parser(line, ctx, Source::Line, 0, "");
  parser.run();
  return std::move(ctx.result);
}

std::string normalize_path(std::string_view path) {
  bool absolute = !path.empty() && path.front() == '/';
  std::vector<std::string_view> parts;
  std::size_t i = 0;
  while (i <= path.size()) {
    std::size_t slash = path.find('/', i);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view part = path.substr(i, slash - i);
    i = slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty() && parts.back() != "..")
        parts.pop_back();
      else if (!absolute)
        parts.push_back(part);
      continue;
    }
    parts.push_back(part);
  }
  if (parts.empty()) return absolute ? std::string("/") : std::string(".");
  std::string out;
  for (const auto& part : parts) {
    if (absolute || !out.empty()) out += '/';
    out += part;
  }
  return out;
}

}  // namespace execmcp::plugins::shell_syntax
