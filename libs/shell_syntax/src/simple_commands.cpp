// The splitter's entry points and its single pass over a POSIX-sh line, which builds the simple
// commands (lists, pipelines, functions, loops, case): enough to judge commands, not to run them.
#include "execmcp/plugins/shell_syntax/simple_commands.hpp"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parser.hpp"

namespace execmcp::plugins::shell_syntax::detail {
namespace {

// What `echo ...` / `printf ...` prints, for a shell that reads it (`echo 'rm x' | sh`). \n
// escapes count as newlines (dash's echo and printf both interpret them).
std::optional<std::string> printed_text(const std::vector<std::string>& words) {
  if (words.empty()) return std::nullopt;
  std::string_view name = basename_of(words[0]);
  std::string out;
  std::size_t i = 1;
  if (name == "echo") {
    while (i < words.size() && words[i].size() >= 2 && words[i][0] == '-' &&
           words[i].find_first_not_of("neE", 1) == std::string::npos)
      ++i;
    for (; i < words.size(); ++i) out += (out.empty() ? "" : " ") + words[i];
  } else if (name == "printf") {
    if (i < words.size() && words[i] == "--") ++i;
    if (i >= words.size()) return std::nullopt;
    if (words[i].find('%') == std::string::npos) {
      out = words[i];
    } else {
      for (++i; i < words.size(); ++i) out += (out.empty() ? "" : "\n") + words[i];
    }
  } else {
    return std::nullopt;
  }
  std::string text;
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (out[k] == '\\' && k + 1 < out.size() && out[k + 1] == 'n') {
      text += '\n';
      ++k;
    } else {
      text += out[k];
    }
  }
  return text + "\n";
}

}  // namespace

void Parser::run() {
  while (pos_ < s_.size() && !ctx_.result.too_large) step();
  finish(Separator::List);
  read_heredoc_bodies();  // a here-document that runs to the end of the input
}

void Parser::step() {
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

bool Parser::fd_redirect_ahead() const {
  std::size_t j = pos_;
  while (j < s_.size() && is_digit(s_[j])) ++j;
  return j < s_.size() && (s_[j] == '<' || s_[j] == '>');
}

void Parser::open_paren() {
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

void Parser::skip_case_pattern() {
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

void Parser::add_word(Word w) {
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
  if (words_.size() + redirections_.size() >= kMaxWords) {
    ctx_.result.too_large = true;
    return;
  }
  words_.push_back(std::move(w));
}

// Reserved words at the start of a command are syntax, not commands.
bool Parser::handle_reserved_word(const std::string& v) {
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
    loops_.push_back({LoopKind::For, 0, -1, v == "for" && read_arithmetic_for()});
    return true;
  }
  if (v == "while" || v == "until") {
    loops_.push_back(
        {v == "while" ? LoopKind::While : LoopKind::Until, ctx_.result.commands.size(), -1});
    return true;
  }
  if (v == "do") {
    enter_loop_body();
    return true;
  }
  if (v == "done") {
    if (!loops_.empty()) loops_.pop_back();
    return true;
  }
  if (v == "esac") {
    if (case_depth_ > 0) --case_depth_;
    return true;
  }
  return one_of(v, {"!", "if", "then", "else", "elif", "fi"});
}

// After `for`: reads a C-style header `((init; test; step))` as arithmetic, not commands.
// Returns true for `for ((;;))`, which has no test.
bool Parser::read_arithmetic_for() {
  std::size_t j = pos_;
  while (j < s_.size() && is_blank(s_[j])) ++j;
  if (s_.substr(j, 2) != "((") return false;
  std::size_t close = s_.find("))", j + 2);
  if (close == std::string_view::npos) return false;
  std::string_view inner = s_.substr(j + 2, close - j - 2);
  scan_expansions(inner, Source::Substitution, false);
  pos_ = close + 2;
  std::string parts;
  for (char c : inner) {
    if (!is_blank(c)) parts += c;
  }
  return parts == ";;";
}

// `do`: the loop's condition is complete; `while true` / `while :` / `until false` /
// `for ((;;))` is endless.
void Parser::enter_loop_body() {
  if (loops_.empty() || loops_.back().id >= 0) return;
  LoopScope& loop = loops_.back();
  bool endless = loop.endless_for;
  if (loop.kind != LoopKind::For) {
    std::vector<const SimpleCommand*> condition;
    for (std::size_t i = loop.condition_begin; i < ctx_.result.commands.size(); ++i) {
      const SimpleCommand& cmd = ctx_.result.commands[i];
      if (!cmd.variant) condition.push_back(&cmd);
    }
    if (condition.size() == 1 && condition[0]->words.size() == 1) {
      const std::string& word = condition[0]->words[0];
      endless = loop.kind == LoopKind::While ? (word == "true" || word == ":") : word == "false";
    }
  }
  loop.id = static_cast<int>(ctx_.result.loops.size());
  ctx_.result.loops.push_back({endless, depth_});
}

int Parser::current_loop() const {
  for (auto it = loops_.rbegin(); it != loops_.rend(); ++it) {
    if (it->id >= 0) return it->id;
  }
  return loop_;
}

std::string Parser::current_function() const {
  return functions_.empty() ? function_ : functions_.back().name;
}

// Parses `text` as a command line of its own, one level deeper. `runner` is the command that
// runs it (bash for bash -c), or -1 to inherit this parser's.
void Parser::recurse(std::string_view text, Source source, int runner) {
  if (ctx_.result.too_large) return;
  if (depth_ + wrap_depth_ + 1 > kMaxDepth) {
    ctx_.result.too_deep = true;
    return;
  }
  // The inner parser owns a copy: `text` may be a temporary (unescaped backtick contents).
  std::string copy(text);
  Parser inner(copy, ctx_, source, depth_ + wrap_depth_ + 1, current_function(), current_loop(),
               runner >= 0 ? runner : runner_);
  inner.run();
}

void Parser::start_pipeline() {
  pipeline_ = ctx_.next_pipeline++;
  pipeline_first_index_ = ctx_.result.commands.size();
}

void Parser::reset_command() {
  words_.clear();
  redirections_.clear();
  redirection_words_.clear();
  here_strings_.clear();
  stdin_substitutions_.clear();
  cmd_begin_ = std::string_view::npos;
  cmd_end_ = 0;
  header_ = HeaderKind::None;
}

void Parser::finish(Separator separator) {
  int fed_shell = -1;  // the shell that reads this command's stdin as its script
  int top = -1;
  std::optional<std::string> piped_text = std::move(piped_text_);
  piped_text_.reset();
  std::vector<std::size_t> piped_heredocs = std::move(piped_heredocs_);
  piped_heredocs_.clear();
  bool passes_stdin = false;  // `cat` alone: what it reads goes down the pipe
  if (header_ == HeaderKind::Case) {
    ++case_depth_;
    case_pattern_ = true;  // after `case WORD in` come patterns
  } else if (header_ == HeaderKind::None && (!words_.empty() || !redirections_.empty())) {
    std::size_t before = ctx_.result.commands.size();
    fed_shell = emit(words_, redirections_, source_, Origin{cmd_begin_, cmd_end_, runner_});
    if (ctx_.result.commands.size() > before) top = static_cast<int>(before);
    if (fed_shell >= 0) feed_shell(fed_shell, piped_text);
    if (fed_shell >= 0) {
      for (std::size_t i : piped_heredocs) {
        if (i < heredocs_.size() && i >= heredoc_head_) {
          heredocs_[i].feeds_shell = true;  // cat <<EOF | sh: the body is the script
          heredocs_[i].owner = fed_shell;
        }
      }
    }
    if (top >= 0 && separator == Separator::Pipe) {
      const SimpleCommand& cmd = ctx_.result.commands[static_cast<std::size_t>(top)];
      piped_text_ = printed_text(cmd.words);
      passes_stdin = cmd.words.size() == 1 && cmd.name() == "cat";
      if (passes_stdin && !here_strings_.empty()) piped_text_ = here_strings_.back() + "\n";
    }
    emit_default_reading();
  }
  for (std::size_t i = heredoc_unowned_; i < heredocs_.size(); ++i) {
    heredocs_[i].feeds_shell = fed_shell >= 0;
    heredocs_[i].owner = fed_shell;
    if (passes_stdin) piped_heredocs_.push_back(i);
  }
  heredoc_unowned_ = heredocs_.size();
  reset_command();
  if (separator == Separator::Pipe) return;
  if (separator == Separator::Background) {
    for (std::size_t i = pipeline_first_index_; i < ctx_.result.commands.size(); ++i) {
      if (ctx_.result.commands[i].pipeline == pipeline_) ctx_.result.commands[i].background = true;
    }
  }
  start_pipeline();
}

// The command at `shell` reads its script from stdin: read what it is given.
void Parser::feed_shell(int shell, const std::optional<std::string>& piped_text) {
  for (const auto& text : here_strings_) recurse(text, Source::ShellString, shell);
  for (const auto& [begin, end] : stdin_substitutions_) {
    if (auto text = substitution_output(begin, end)) recurse(*text, Source::ShellString, shell);
  }
  if (piped_text) recurse(*piped_text, Source::ShellString, shell);
}

// What a process substitution prints when its commands are all echo / printf, else nullopt.
std::optional<std::string> Parser::substitution_output(std::size_t begin, std::size_t end) const {
  end = std::min(end, ctx_.result.commands.size());
  int outer = kMaxDepth + 1;
  for (std::size_t i = begin; i < end; ++i) outer = std::min(outer, ctx_.result.commands[i].depth);
  std::string out;
  bool any = false;
  for (std::size_t i = begin; i < end; ++i) {
    const SimpleCommand& cmd = ctx_.result.commands[i];
    if (cmd.variant || cmd.depth != outer) continue;
    std::optional<std::string> printed = printed_text(cmd.words);
    if (!printed) return std::nullopt;
    out += *printed;
    any = true;
  }
  if (!any) return std::nullopt;
  return out;
}

// ${X:-/} may be "/" when X is unset: the command is listed a second time read that way.
void Parser::emit_default_reading() {
  if (ctx_.result.too_large) return;
  std::vector<std::optional<Word>> alt_words;
  std::vector<std::optional<Word>> alt_targets;
  bool any = false;
  for (const auto& w : words_) {
    alt_words.push_back(default_reading(w));
    any = any || alt_words.back().has_value();
  }
  for (const auto& w : redirection_words_) {
    alt_targets.push_back(default_reading(w));
    any = any || alt_targets.back().has_value();
  }
  if (!any) return;
  std::vector<Word> words;
  for (std::size_t i = 0; i < words_.size(); ++i)
    words.push_back(alt_words[i] ? std::move(*alt_words[i]) : words_[i]);
  std::vector<Redirection> redirections = redirections_;
  for (std::size_t i = 0; i < alt_targets.size() && i < redirections.size(); ++i) {
    if (alt_targets[i]) redirections[i].target = alt_targets[i]->value;
  }
  if (!any) return;
  variant_ = true;
  emit(std::move(words), std::move(redirections), source_, Origin{cmd_begin_, cmd_end_, runner_});
  variant_ = false;
}

// Emits one simple command and what it runs (sudo, wrappers, sh -c, find -exec ...). Returns
// the index of the shell reading its script from stdin (the command or one it runs), or -1.
int Parser::emit(std::vector<Word> words, std::vector<Redirection> redirections, Source source,
                 const Origin& origin) {
  if (ctx_.result.too_large) return -1;
  if (ctx_.result.commands.size() >= kMaxCommands) {
    ctx_.result.too_large = true;
    return -1;
  }
  SimpleCommand cmd;
  std::size_t first = 0;
  while (first < words.size() && is_assignment(words[first])) {
    cmd.assignments.push_back(words[first].value);
    ++first;
  }
  if (!expand_words(words, first)) {
    ctx_.result.too_large = true;
    return -1;
  }
  if (!ctx_.take_words(words.size() + redirections.size())) return -1;
  std::size_t text_begin = first < words.size() ? words[first].begin : origin.raw_begin;
  for (std::size_t i = first; i < words.size(); ++i) cmd.words.push_back(words[i].value);
  cmd.redirections = std::move(redirections);
  if (origin.raw_begin != std::string_view::npos && origin.raw_end > origin.raw_begin &&
      origin.raw_end <= s_.size()) {
    cmd.raw = std::string(trim(s_.substr(origin.raw_begin, origin.raw_end - origin.raw_begin)));
    if (text_begin != std::string_view::npos && text_begin < origin.raw_end)
      cmd.text = std::string(trim(s_.substr(text_begin, origin.raw_end - text_begin)));
  }
  if (cmd.text.empty()) cmd.text = cmd.raw;
  cmd.source = source;
  cmd.depth = depth_ + wrap_depth_;
  cmd.function = current_function();
  cmd.pipeline = pipeline_;
  cmd.loop = current_loop();
  cmd.runner = origin.runner;
  cmd.variant = variant_;
  if (origin.runner_text_begin != std::string_view::npos && text_begin != std::string_view::npos &&
      text_begin >= origin.runner_text_begin)
    cmd.offset_in_runner = text_begin - origin.runner_text_begin;
  const int self = static_cast<int>(ctx_.result.commands.size());
  std::vector<std::string> assignments = cmd.assignments;
  ctx_.result.commands.push_back(std::move(cmd));
  if (first >= words.size()) return -1;
  return follow_runner(words, first, self, text_begin, origin.raw_end, assignments);
}

bool Parser::is_assignment(const Word& w) const {
  if (w.quoted_name || w.value.empty() || !is_name_start(w.value[0])) return false;
  std::size_t k = 1;
  while (k < w.value.size() && is_name_char(w.value[k])) ++k;
  if (k < w.value.size() && w.value[k] == '+') ++k;
  return k < w.value.size() && w.value[k] == '=';
}

}  // namespace execmcp::plugins::shell_syntax::detail

namespace execmcp::plugins::shell_syntax {

bool Redirection::writes() const {
  if (op.find('>') == std::string::npos) return false;
  // 2>&1 and >&- duplicate or close a descriptor; >&file writes to file.
  if (op.ends_with(">&")) {
    return !(target == "-" ||
             (!target.empty() && std::all_of(target.begin(), target.end(),
                                             [](char c) { return detail::is_digit(c); })));
  }
  return true;
}

std::string SimpleCommand::name() const {
  return words.empty() ? std::string() : std::string(detail::basename_of(words.front()));
}

ParsedLine parse_line(std::string_view line) {
  detail::Context ctx;
  detail::Parser parser(line, ctx, Source::Line, 0, "", -1, -1);
  parser.run();
  return std::move(ctx.result);
}

namespace {

// /proc/<self|thread-self|pid>/root and /proc/<pid>/task/<tid>/root name the root directory.
bool is_proc_root(const std::vector<std::string_view>& parts) {
  auto is_pid = [](std::string_view part) {
    return !part.empty() && std::all_of(part.begin(), part.end(), detail::is_digit);
  };
  if (parts.size() == 3)
    return parts[0] == "proc" &&
           (parts[1] == "self" || parts[1] == "thread-self" || is_pid(parts[1])) &&
           parts[2] == "root";
  return parts.size() == 5 && parts[0] == "proc" && (parts[1] == "self" || is_pid(parts[1])) &&
         parts[2] == "task" && is_pid(parts[3]) && parts[4] == "root";
}

}  // namespace

std::optional<PastBound> past_bound(const ParsedLine& parsed, std::string_view purpose) {
  if (parsed.too_deep)
    return PastBound{"too-deep",
                     "the command nests substitutions, shell strings or wrappers more than " +
                         std::to_string(kMaxDepth) + " levels deep, too deep " +
                         std::string(purpose)};
  if (parsed.too_large)
    return PastBound{"too-large", "the command has more than " + std::to_string(kMaxCommands) +
                                      " simple commands, " + std::to_string(kMaxWords) +
                                      " words or a brace expansion of more than " +
                                      std::to_string(kMaxBraceWords) + " words, too large " +
                                      std::string(purpose)};
  return std::nullopt;
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
    if (absolute && is_proc_root(parts)) parts.clear();
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
