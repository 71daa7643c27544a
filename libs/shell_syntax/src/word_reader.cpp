// Reads a line's words and redirections: quote removal, $-expansions and substitutions (parsed
// as command lines of their own), and here-document bodies.
#include "parser.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>

namespace execmcp::plugins::shell_syntax::detail {
namespace {

// Bounds the recursion of the quote/parenthesis skippers on adversarial input like "$("$("$(...
constexpr int kMaxSkipNesting = 200;

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

}  // namespace

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

void Parser::parse_redirect(const std::string& fd) {
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
  // "<<<" before "<<": a here-string is one word, not a here-document.
  if (op.ends_with("<<<")) {
    here_strings_.push_back(target.value);
  } else if (op.ends_with("<<") || op.ends_with("<<-")) {
    heredocs_.push_back({target.value, op.ends_with("-"), !target.quoted, false, -1});
  } else if ((op == "<" || op == "0<") && target.subst_end > target.subst_begin) {
    stdin_substitutions_.emplace_back(target.subst_begin, target.subst_end);
  }
  redirection_words_.push_back(target);
  redirections_.push_back({std::move(op), std::move(target.value)});
}

// Reads one word at pos_, doing quote removal and following substitutions.
Word Parser::read_word() {
  Word w;
  w.begin = pos_;
  bool seen_equals = false;
  while (pos_ < s_.size()) {
    char c = s_[pos_];
    char next = pos_ + 1 < s_.size() ? s_[pos_ + 1] : '\0';
    if ((c == '<' || c == '>') && next == '(' && pos_ == w.begin) {
      std::size_t close = find_close_paren(s_, pos_ + 2, 0);
      w.subst_begin = ctx_.result.commands.size();
      recurse(s_.substr(pos_ + 2, close - std::min(close, pos_ + 2)), Source::Substitution);
      w.subst_end = ctx_.result.commands.size();
      std::size_t end = close < s_.size() ? close + 1 : s_.size();
      w.add(s_.substr(pos_, end - pos_), kExpansionChar);
      pos_ = end;
      continue;
    }
    if (is_blank(c) || is_operator_char(c)) {
      // a=(1 2 3): an array assignment, not a subshell.
      if (c == '(' && seen_equals && !w.value.empty() && w.value.back() == '=' && !w.quoted_name) {
        std::size_t close = find_close_paren(s_, pos_ + 1, 0);
        std::size_t end = close < s_.size() ? close + 1 : s_.size();
        scan_expansions(s_.substr(pos_ + 1, end - pos_ - 1), Source::Substitution, false);
        w.add(s_.substr(pos_, end - pos_), kExpansionChar);
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
      if (pos_ + 1 < s_.size()) w.add(next, kQuotedChar);
      pos_ = std::min(pos_ + 2, s_.size());  // a trailing backslash ends the input
    } else if (c == '\'') {
      if (!seen_equals) w.quoted_name = true;
      w.quoted = true;
      auto close = s_.find('\'', pos_ + 1);
      if (close == std::string_view::npos) close = s_.size();
      w.add(s_.substr(pos_ + 1, close - pos_ - 1), kQuotedChar);
      pos_ = std::min(close + 1, s_.size());
    } else if (c == '"') {
      if (!seen_equals) w.quoted_name = true;
      w.quoted = true;
      ++pos_;
      read_double_quoted(w);
    } else if (c == '$') {
      if (!seen_equals && (next == '\'' || next == '"')) w.quoted_name = true;
      if (next == '\'' || next == '"') w.quoted = true;
      read_dollar(w, false);
    } else if (c == '`') {
      if (!seen_equals) w.quoted_name = true;
      read_backtick(w);
    } else {
      if (c == '=') seen_equals = true;
      w.add(c, kPlainChar);
      ++pos_;
    }
  }
  w.end = pos_;
  w.begin = std::min(w.begin, w.end);
  return w;
}

// pos_ is just after the opening '"'.
void Parser::read_double_quoted(Word& out) {
  while (pos_ < s_.size() && s_[pos_] != '"') {
    char c = s_[pos_];
    char next = pos_ + 1 < s_.size() ? s_[pos_ + 1] : '\0';
    if (c == '\\' && (next == '$' || next == '`' || next == '"' || next == '\\')) {
      out.add(next, kQuotedChar);
      pos_ += 2;
    } else if (c == '\\' && next == '\n') {
      pos_ += 2;
    } else if (c == '$') {
      read_dollar(out, true);
    } else if (c == '`') {
      read_backtick(out);
    } else {
      out.add(c, kQuotedChar);
      ++pos_;
    }
  }
  if (pos_ < s_.size()) ++pos_;
}

// pos_ is at '$'. Expansions stay in the word as written; command substitutions are followed.
void Parser::read_dollar(Word& out, bool in_double_quotes) {
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
    out.add(s_.substr(start, pos_ - start), kExpansionChar);
  } else if (next == '{') {
    std::size_t close = find_close_brace(s_, pos_ + 2);
    scan_expansions(s_.substr(pos_ + 2, close - std::min(close, pos_ + 2)), Source::Substitution,
                    false);
    pos_ = close < s_.size() ? close + 1 : s_.size();
    out.add(s_.substr(start, pos_ - start), kExpansionChar);
  } else if (next == '\'' && !in_double_quotes) {
    pos_ += 2;
    read_ansi_c_quoted(out);
  } else if (next == '"' && !in_double_quotes) {
    pos_ += 2;
    read_double_quoted(out);
  } else {
    out.add('$', kExpansionChar);
    ++pos_;
  }
}

// $'...': pos_ is just after the opening quote.
void Parser::read_ansi_c_quoted(Word& out) {
  while (pos_ < s_.size() && s_[pos_] != '\'') {
    char c = s_[pos_];
    if (c == '\\' && pos_ + 1 < s_.size()) {
      char e = s_[pos_ + 1];
      pos_ += 2;
      switch (e) {
        case 'n':
          out.add('\n', kQuotedChar);
          break;
        case 't':
          out.add('\t', kQuotedChar);
          break;
        case 'r':
          out.add('\r', kQuotedChar);
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
          out.add(digits > 0 ? static_cast<char>(value) : 'x', kQuotedChar);
          break;
        }
        default:
          out.add(e, kQuotedChar);
          break;
      }
    } else {
      out.add(c, kQuotedChar);
      ++pos_;
    }
  }
  if (pos_ < s_.size()) ++pos_;
}

// pos_ is at the opening backtick.
void Parser::read_backtick(Word& out) {
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
  out.add(s_.substr(start, pos_ - start), kExpansionChar);
}

// Finds $( ) and backticks in text that is otherwise data (here-document bodies, ${...}).
void Parser::scan_expansions(std::string_view text, Source source, bool quotes_are_literal) {
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

void Parser::read_heredoc_bodies() {
  pos_ = std::min(pos_, s_.size());
  while (heredoc_head_ < heredocs_.size()) {
    Heredoc doc = std::move(heredocs_[heredoc_head_++]);
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
      recurse(body, Source::ShellString, doc.owner);
    else if (doc.expands)
      scan_expansions(body, Source::Substitution, true);
  }
  // Consumed entries are dropped in one go, so many here-documents cost linear time.
  if (heredoc_head_ == heredocs_.size() && heredoc_unowned_ == heredocs_.size() &&
      piped_heredocs_.empty()) {
    heredocs_.clear();
    heredoc_head_ = 0;
    heredoc_unowned_ = 0;
  }
}

}  // namespace execmcp::plugins::shell_syntax::detail
