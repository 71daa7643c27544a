// A single-pass lexer/splitter for POSIX-sh lines: good enough to judge commands, not to run them.
#include "execmcp/plugins/shell_syntax/simple_commands.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <utility>

namespace execmcp::plugins::shell_syntax {
namespace {

// Bounds the recursion of the quote/parenthesis skippers on adversarial input like "$("$("$(...
constexpr int kMaxSkipNesting = 200;
// Brace expansion reads words up to this size; a longer word with an unquoted `{a,b}` makes the
// line too large to judge (real words with braces are short).
constexpr std::size_t kMaxBraceWordBytes = 4096;

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

// --- runners: commands that run another command ------------------------------------------------

struct OptionSpec {
  std::string_view short_with_arg;                        // e.g. "n" for nice -n 10
  std::initializer_list<std::string_view> long_with_arg;  // e.g. --adjustment 10
  int positionals = 0;       // words to skip after the options (timeout 5, chroot DIR)
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

// The value of option -c / --command (or whichever), GNU style: "-c V", "-cV", "-qc V",
// "--command V", "--command=V". Options in short_with_arg consume their argument.
template <class Word>
std::optional<std::string> option_value(const std::vector<Word>& words, std::size_t i,
                                        char short_name, std::string_view long_name,
                                        std::string_view short_with_arg) {
  for (; i < words.size(); ++i) {
    const std::string& w = words[i].value;
    if (w == "--") break;
    if (w.starts_with("--")) {
      if (w == long_name) {
        if (i + 1 < words.size()) return words[i + 1].value;
        return std::nullopt;
      }
      if (w.size() > long_name.size() && w.starts_with(long_name) && w[long_name.size()] == '=')
        return w.substr(long_name.size() + 1);
      continue;
    }
    if (w.size() < 2 || w[0] != '-') continue;
    for (std::size_t k = 1; k < w.size(); ++k) {
      if (w[k] == short_name) {
        if (k + 1 < w.size()) return w.substr(k + 1);
        if (i + 1 < words.size()) return words[i + 1].value;
        return std::nullopt;
      }
      if (short_with_arg.find(w[k]) != std::string_view::npos) {
        if (k + 1 == w.size()) ++i;  // the argument is the next word
        break;
      }
    }
  }
  return std::nullopt;
}

// Wrappers run their arguments (after their options) as a command, in the same process image.
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
  static const OptionSpec kChroot{"", {"--userspec", "--groups"}, 1, false};
  static const OptionSpec kUnshare{
      "SGRw",
      {"--setuid", "--setgid", "--root", "--wd", "--propagation", "--setgroups", "--map-user",
       "--map-group", "--map-users", "--map-groups", "--load-interp"},
      0,
      false};
  static const OptionSpec kNsenter{"tSG", {"--target", "--setuid", "--setgid"}, 0, false};
  static const OptionSpec kTaskset{"", {}, 1, false};
  static const OptionSpec kPrlimit{"po", {"--pid", "--output"}, 0, false};
  if (name == "env") return &kEnv;
  if (one_of(name, {"command", "nohup", "setsid", "busybox", "builtin"})) return &kPlain;
  if (name == "exec") return &kExec;
  if (name == "time") return &kTime;
  if (name == "nice") return &kNice;
  if (name == "timeout") return &kTimeout;
  if (name == "stdbuf") return &kStdbuf;
  if (name == "ionice") return &kIonice;
  if (name == "xargs") return &kXargs;
  if (name == "chroot") return &kChroot;
  if (name == "unshare") return &kUnshare;
  if (name == "nsenter") return &kNsenter;
  if (name == "taskset") return &kTaskset;
  if (name == "prlimit") return &kPrlimit;
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
  static const OptionSpec kRun0{
      "ugD",
      {"--user", "--group", "--chdir", "--nice", "--setenv", "--property", "--unit",
       "--description", "--slice", "--background", "--machine", "--shell-prompt-prefix"},
      0,
      false};
  if (name == "sudo") return &kSudo;
  if (name == "doas") return &kDoas;
  if (name == "pkexec") return &kPkexec;
  if (name == "run0") return &kRun0;
  return nullptr;
}

bool is_shell(std::string_view name) {
  return one_of(name, {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "rbash"});
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_boolean(std::string_view value) {
  return one_of(lowercase(value), {"true", "false", "yes", "no", "on", "off", "1", "0", ""});
}

// The shell command a git config entry `key=value` makes git run, if it is one of the keys
// whose value git hands to the shell (git-config(1)); nullopt for every other key.
std::optional<std::string> git_config_command(std::string_view entry) {
  auto eq = entry.find('=');
  if (eq == std::string_view::npos) return std::nullopt;
  const std::string key = lowercase(entry.substr(0, eq));
  std::string value(entry.substr(eq + 1));
  if (value.empty()) return std::nullopt;
  auto first_dot = key.find('.');
  auto last_dot = key.rfind('.');
  std::string section = key.substr(0, first_dot);
  std::string variable = last_dot == std::string::npos ? key : key.substr(last_dot + 1);
  if (section == "alias")  // "!cmd" runs a shell command; anything else is a git subcommand
    return value.starts_with("!") ? std::optional<std::string>(value.substr(1)) : std::nullopt;
  if (section == "credential" && variable == "helper") {
    if (value.starts_with("!")) return value.substr(1);
    return value.find('/') != std::string::npos ? std::optional<std::string>(value) : std::nullopt;
  }
  if (one_of(key, {"core.fsmonitor"}) || section == "pager")
    return is_boolean(value) ? std::nullopt : std::optional<std::string>(value);
  if (one_of(key, {"core.pager", "core.sshcommand", "core.editor", "core.askpass", "core.gitproxy",
                   "sequence.editor", "diff.external", "gpg.program", "interactive.difffilter",
                   "uploadpack.packobjectshook"}))
    return value;
  bool subsection = first_dot != last_dot;
  if (subsection &&
      ((section == "filter" && one_of(variable, {"clean", "smudge", "process"})) ||
       (section == "diff" && one_of(variable, {"textconv", "command"})) ||
       (section == "merge" && variable == "driver") ||
       (section == "remote" && one_of(variable, {"uploadpack", "receivepack"})) ||
       (section == "gpg" && variable == "program") ||
       (one_of(section, {"mergetool", "difftool", "man", "browser"}) && variable == "cmd")))
    return value;
  return std::nullopt;
}

// Environment variables whose value git runs as a command.
bool is_git_command_variable(std::string_view name) {
  return one_of(
      name, {"GIT_SSH_COMMAND", "GIT_SSH", "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR",
             "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "GIT_PROXY_COMMAND", "PAGER", "EDITOR", "VISUAL"});
}

// Single-quotes a word so that the shell reads it back as exactly one word.
std::string shell_quote(std::string_view word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

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

// --- words and their expansions -----------------------------------------------------------------

// Where each character of a word came from: brace expansion only sees plain characters, and
// ${X:-word} is only read in expansion text.
constexpr char kPlainChar = 'p';
constexpr char kQuotedChar = 'q';
constexpr char kExpansionChar = 'x';

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

// The leftmost brace group `{a,b}` (plain braces, a plain comma at its top level), in one pass.
struct BraceGroup {
  std::size_t open = 0;
  std::size_t close = 0;
  std::vector<std::size_t> commas;
};

std::optional<BraceGroup> find_brace_group(const std::string& value, const std::string& kinds) {
  std::vector<BraceGroup> open;
  std::optional<BraceGroup> best;
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (kinds[i] != kPlainChar) continue;
    if (value[i] == '{') {
      open.push_back({i, 0, {}});
    } else if (value[i] == ',' && !open.empty()) {
      open.back().commas.push_back(i);
    } else if (value[i] == '}' && !open.empty()) {
      BraceGroup group = std::move(open.back());
      open.pop_back();
      group.close = i;
      if (!group.commas.empty() && (!best || group.open < best->open)) best = std::move(group);
    }
  }
  return best;
}

// Brace expansion as bash does it (comma lists only; {a..z} stays as written). False when the
// word would expand to more than kMaxBraceWords words.
bool expand_braces(const std::string& value, const std::string& kinds, std::vector<Word>& out,
                   const Word& original) {
  if (out.size() > kMaxBraceWords) return false;
  std::optional<BraceGroup> group = find_brace_group(value, kinds);
  if (!group) {
    bool empty_unquoted = value.empty() && !original.quoted;
    if (!empty_unquoted) {
      Word w = original;
      w.value = value;
      w.kinds = kinds;
      out.push_back(std::move(w));
    }
    return out.size() <= kMaxBraceWords;
  }
  std::vector<std::size_t> cuts{group->open};
  cuts.insert(cuts.end(), group->commas.begin(), group->commas.end());
  cuts.push_back(group->close);
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    std::size_t from = cuts[k] + 1;
    std::size_t to = cuts[k + 1];
    std::string v = value.substr(0, group->open) + value.substr(from, to - from) +
                    value.substr(group->close + 1);
    std::string kd = kinds.substr(0, group->open) + kinds.substr(from, to - from) +
                     kinds.substr(group->close + 1);
    if (!expand_braces(v, kd, out, original)) return false;
  }
  return true;
}

// The word's value with every ${X:-word} / ${X-word} / ${X:=word} / ${X=word} / ${X:+word} /
// ${X+word} replaced by its word (quotes removed) and ${HOME%...} by $HOME/.., or nullopt when
// there is none.
std::optional<Word> default_reading(const Word& w) {
  if (w.value.find("${") == std::string::npos) return std::nullopt;
  Word out = w;
  out.value.clear();
  out.kinds.clear();
  bool replaced = false;
  std::size_t i = 0;
  while (i < w.value.size()) {
    if (!(w.value[i] == '$' && w.kinds[i] == kExpansionChar && i + 1 < w.value.size() &&
          w.value[i + 1] == '{')) {
      out.add(w.value[i], w.kinds[i]);
      ++i;
      continue;
    }
    std::size_t close = find_close_brace(w.value, i + 2);
    std::string_view inner =
        std::string_view(w.value).substr(i + 2, std::min(close, w.value.size()) - (i + 2));
    std::size_t j = 0;
    if (!inner.empty() && is_name_start(inner[0])) {
      while (j < inner.size() && is_name_char(inner[j])) ++j;
    } else {
      while (j < inner.size() && is_digit(inner[j])) ++j;
      if (j == 0 && !inner.empty() &&
          std::string_view("@*#?-$!").find(inner[0]) != std::string_view::npos)
        j = 1;
    }
    if (j < inner.size() && inner[j] == '[') {
      auto bracket = inner.find(']', j);
      j = bracket == std::string_view::npos ? inner.size() : bracket + 1;
    }
    std::size_t next = close < w.value.size() ? close + 1 : w.value.size();
    if (inner.substr(0, j) == "HOME" && j < inner.size() && inner[j] == '%') {
      out.add("$HOME/..", kQuotedChar);  // ${HOME%/*} trims to HOME's parent
      replaced = true;
      i = next;
      continue;
    }
    if (j < inner.size() && inner[j] == ':') ++j;
    bool has_word =
        j > 0 && j < inner.size() && (inner[j] == '-' || inner[j] == '=' || inner[j] == '+');
    if (!has_word) {
      out.add(std::string_view(w.value).substr(i, next - i), kExpansionChar);
      i = next;
      continue;
    }
    std::string word;
    for (char c : inner.substr(j + 1)) {
      if (c != '\'' && c != '"' && c != '\\') word += c;
    }
    out.add(word, kQuotedChar);
    replaced = true;
    i = next;
  }
  if (!replaced) return std::nullopt;
  return out;
}

// --- the parser ---------------------------------------------------------------------------------

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

  void run() {
    while (pos_ < s_.size() && !ctx_.result.too_large) step();
    finish(Separator::List);
    read_heredoc_bodies();  // a here-document that runs to the end of the input
  }

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

  // After `for`: reads a C-style header `((init; test; step))` as arithmetic, not commands.
  // Returns true for `for ((;;))`, which has no test.
  bool read_arithmetic_for() {
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
    if (words_.size() + redirections_.size() >= kMaxWords) {
      ctx_.result.too_large = true;
      return;
    }
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

  // `do`: the loop's condition is complete; `while true` / `while :` / `until false` /
  // `for ((;;))` is endless.
  void enter_loop_body() {
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

  int current_loop() const {
    for (auto it = loops_.rbegin(); it != loops_.rend(); ++it) {
      if (it->id >= 0) return it->id;
    }
    return loop_;
  }

  std::string current_function() const {
    return functions_.empty() ? function_ : functions_.back().name;
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
  Word read_word() {
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
        if (c == '(' && seen_equals && !w.value.empty() && w.value.back() == '=' &&
            !w.quoted_name) {
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
  void read_double_quoted(Word& out) {
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
  void read_dollar(Word& out, bool in_double_quotes) {
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
  void read_ansi_c_quoted(Word& out) {
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
  void read_backtick(Word& out) {
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

  // Parses `text` as a command line of its own, one level deeper. `runner` is the command that
  // runs it (bash for bash -c), or -1 to inherit this parser's.
  void recurse(std::string_view text, Source source, int runner = -1) {
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

  void read_heredoc_bodies() {
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

  void start_pipeline() {
    pipeline_ = ctx_.next_pipeline++;
    pipeline_first_index_ = ctx_.result.commands.size();
  }

  void reset_command() {
    words_.clear();
    redirections_.clear();
    redirection_words_.clear();
    here_strings_.clear();
    stdin_substitutions_.clear();
    cmd_begin_ = std::string_view::npos;
    cmd_end_ = 0;
    header_ = HeaderKind::None;
  }

  void finish(Separator separator) {
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
        if (ctx_.result.commands[i].pipeline == pipeline_)
          ctx_.result.commands[i].background = true;
      }
    }
    start_pipeline();
  }

  // The command at `shell` reads its script from stdin: read what it is given.
  void feed_shell(int shell, const std::optional<std::string>& piped_text) {
    for (const auto& text : here_strings_) recurse(text, Source::ShellString, shell);
    for (const auto& [begin, end] : stdin_substitutions_) {
      if (auto text = substitution_output(begin, end)) recurse(*text, Source::ShellString, shell);
    }
    if (piped_text) recurse(*piped_text, Source::ShellString, shell);
  }

  // What a process substitution prints when its commands are all echo / printf, else nullopt.
  std::optional<std::string> substitution_output(std::size_t begin, std::size_t end) const {
    end = std::min(end, ctx_.result.commands.size());
    int outer = kMaxDepth + 1;
    for (std::size_t i = begin; i < end; ++i)
      outer = std::min(outer, ctx_.result.commands[i].depth);
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
  void emit_default_reading() {
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
  int emit(std::vector<Word> words, std::vector<Redirection> redirections, Source source,
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
    if (origin.runner_text_begin != std::string_view::npos &&
        text_begin != std::string_view::npos && text_begin >= origin.runner_text_begin)
      cmd.offset_in_runner = text_begin - origin.runner_text_begin;
    const int self = static_cast<int>(ctx_.result.commands.size());
    std::vector<std::string> assignments = cmd.assignments;
    ctx_.result.commands.push_back(std::move(cmd));
    if (first >= words.size()) return -1;
    return follow_runner(words, first, self, text_begin, origin.raw_end, assignments);
  }

  // Brace-expands words[first..] in place. False when a word expands to too many words.
  static bool expand_words(std::vector<Word>& words, std::size_t first) {
    bool any = false;
    for (std::size_t i = first; i < words.size() && !any; ++i)
      any = words[i].kinds.find(kPlainChar) != std::string::npos &&
            words[i].value.find('{') != std::string::npos;
    if (!any) return true;
    std::vector<Word> out(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(first));
    for (std::size_t i = first; i < words.size(); ++i) {
      const Word& w = words[i];
      if (w.value.find('{') == std::string::npos) {
        out.push_back(w);
        continue;
      }
      if (w.value.size() > kMaxBraceWordBytes && find_brace_group(w.value, w.kinds)) return false;
      std::vector<Word> expanded;
      if (!expand_braces(w.value, w.kinds, expanded, w)) return false;
      for (auto& e : expanded) out.push_back(std::move(e));
      if (out.size() > words.size() + kMaxBraceWords) return false;
    }
    words = std::move(out);
    return true;
  }

  // Emits words[from, to) as the command that words[first] (at index `self`) runs.
  int run_words(const std::vector<Word>& words, std::size_t from, std::size_t to, Source source,
                int self, std::size_t runner_text_begin, std::size_t raw_end) {
    if (from >= to || to > words.size()) return -1;
    if (depth_ + wrap_depth_ + 1 > kMaxDepth) {
      ctx_.result.too_deep = true;
      return -1;
    }
    std::vector<Word> inner(words.begin() + static_cast<std::ptrdiff_t>(from),
                            words.begin() + static_cast<std::ptrdiff_t>(to));
    std::size_t end = to < words.size() ? words[to - 1].end : std::max(raw_end, words[to - 1].end);
    ++wrap_depth_;
    int fed =
        emit(std::move(inner), {}, source, Origin{words[from].begin, end, self, runner_text_begin});
    --wrap_depth_;
    return fed;
  }

  int follow_runner(const std::vector<Word>& words, std::size_t first, int self,
                    std::size_t text_begin, std::size_t raw_end,
                    const std::vector<std::string>& assignments) {
    const std::string name(basename_of(words[first].value));
    auto run = [&](std::size_t from, std::size_t to, Source source) {
      return run_words(words, from, to, source, self, text_begin, raw_end);
    };
    if (const OptionSpec* spec = privileged_spec(name)) {
      return run(skip_options(words, first + 1, *spec), words.size(), Source::Privileged);
    }
    if (name == "env") {
      // env -S 'cmd args' splits its string into the command line it runs.
      if (auto split = env_split_string(words, first)) {
        std::string line = split->first;
        for (std::size_t i = split->second; i < words.size(); ++i)
          line += " " + shell_quote(words[i].value);
        recurse(line, Source::ShellString, self);
        return -1;
      }
    }
    if (name == "command" && first + 1 < words.size() &&
        (words[first + 1].value == "-v" || words[first + 1].value == "-V"))
      return -1;  // a lookup, not a run
    if (name == "flock") return follow_flock(words, first, self, text_begin, raw_end);
    if (name == "parallel") return follow_parallel(words, first, self, text_begin, raw_end);
    if (name == "watch") return follow_watch(words, first, self, text_begin, raw_end);
    if (const OptionSpec* spec = wrapper_spec(name)) {
      return run(skip_options(words, first + 1, *spec), words.size(), Source::Wrapped);
    }
    if (is_shell(name)) return follow_shell(words, first + 1, self);
    if (name == "source" || name == ".") return follow_script_operand(words, first + 1, self);
    if (name == "su") {
      follow_su(words, first, self);
    } else if (name == "script") {
      if (auto command = option_value(words, first + 1, 'c', "--command", "EIOBTmo"))
        recurse(*command, Source::ShellString, self);
    } else if (name == "find") {
      follow_find(words, first, self, text_begin, raw_end);
    } else if (name == "git") {
      follow_git(words, first, self, assignments);
    } else if (name == "eval") {
      std::string joined;
      for (std::size_t i = first + 1; i < words.size(); ++i) {
        if (!joined.empty()) joined += ' ';
        joined += words[i].value;
      }
      recurse(joined, Source::ShellString, self);
    }
    return -1;
  }

  // env's -S / --split-string value and the index of the words after it.
  static std::optional<std::pair<std::string, std::size_t>> env_split_string(
      const std::vector<Word>& words, std::size_t first) {
    for (std::size_t i = first + 1; i < words.size(); ++i) {
      const std::string& w = words[i].value;
      if (w == "--" || w.size() < 2 || w[0] != '-') return std::nullopt;
      if (w.starts_with("--split-string=")) return std::pair{w.substr(15), i + 1};
      if (w == "--split-string") {
        if (i + 1 < words.size()) return std::pair{words[i + 1].value, i + 2};
        return std::nullopt;
      }
      if (w.starts_with("--")) {
        if (w == "--unset" || w == "--chdir") ++i;
        continue;
      }
      for (std::size_t k = 1; k < w.size(); ++k) {
        if (w[k] == 'S') {
          if (k + 1 < w.size()) return std::pair{w.substr(k + 1), i + 1};
          if (i + 1 < words.size()) return std::pair{words[i + 1].value, i + 2};
          return std::nullopt;
        }
        if (w[k] == 'u' || w[k] == 'C') {
          if (k + 1 == w.size()) ++i;
          break;
        }
      }
    }
    return std::nullopt;
  }

  // flock [options] FILE command... | flock [options] FILE -c 'command'
  int follow_flock(const std::vector<Word>& words, std::size_t first, int self,
                   std::size_t text_begin, std::size_t raw_end) {
    static const OptionSpec kFlock{"wE", {"--timeout", "--conflict-exit-code"}, 1, false};
    std::size_t after = skip_options(words, first + 1, kFlock);
    if (after < words.size() && (words[after].value == "-c" || words[after].value == "--command")) {
      if (after + 1 < words.size()) recurse(words[after + 1].value, Source::ShellString, self);
      return -1;
    }
    return run_words(words, after, words.size(), Source::Wrapped, self, text_begin, raw_end);
  }

  // GNU parallel [options] COMMAND... (::: ARGS | :::: FILES)...: like xargs, the command's
  // arguments come from elsewhere.
  int follow_parallel(const std::vector<Word>& words, std::size_t first, int self,
                      std::size_t text_begin, std::size_t raw_end) {
    static const OptionSpec kParallel{
        "ajdnNISCEL",
        {"--jobs",    "--arg-file", "--delimiter", "--max-args", "--max-replace-args",
         "--colsep",  "--eof",      "--sshlogin",  "--tmpdir",   "--joblog",
         "--results", "--timeout",  "--tagstring", "--workdir",  "--basefile",
         "--env",     "--retries",  "--delay",     "--memfree",  "--load"},
        0,
        false};
    std::size_t after = skip_options(words, first + 1, kParallel);
    std::size_t end = after;
    while (end < words.size() && !one_of(words[end].value, {":::", "::::", ":::+", "::::+"})) ++end;
    return run_words(words, after, end, Source::Wrapped, self, text_begin, raw_end);
  }

  // watch joins its arguments and runs them with sh -c, unless -x / --exec runs them directly.
  int follow_watch(const std::vector<Word>& words, std::size_t first, int self,
                   std::size_t text_begin, std::size_t raw_end) {
    static const OptionSpec kWatch{"nq", {"--interval", "--equexit"}, 0, false};
    std::size_t after = skip_options(words, first + 1, kWatch);
    bool exec = false;
    for (std::size_t i = first + 1; i < after; ++i) {
      const std::string& w = words[i].value;
      exec = exec || w == "--exec" ||
             (w.size() >= 2 && w[0] == '-' && w[1] != '-' && w.find('x') != std::string::npos);
    }
    if (after >= words.size()) return -1;
    if (exec)
      return run_words(words, after, words.size(), Source::Wrapped, self, text_begin, raw_end);
    std::string joined;
    for (std::size_t i = after; i < words.size(); ++i)
      joined += (i > after ? " " : "") + words[i].value;
    recurse(joined, Source::ShellString, self);
    return -1;
  }

  // find ... -exec / -execdir / -ok / -okdir COMMAND ... ; (or {} +)
  void follow_find(const std::vector<Word>& words, std::size_t first, int self,
                   std::size_t text_begin, std::size_t raw_end) {
    for (std::size_t i = first + 1; i < words.size(); ++i) {
      if (!one_of(words[i].value, {"-exec", "-execdir", "-ok", "-okdir"})) continue;
      std::size_t begin = i + 1;
      std::size_t end = begin;
      while (end < words.size() && words[end].value != ";" &&
             !(words[end].value == "+" && end > begin && words[end - 1].value == "{}"))
        ++end;
      run_words(words, begin, end, Source::Wrapped, self, text_begin, raw_end);
      i = end;
    }
  }

  // git -c KEY=VALUE, --config KEY=VALUE, --upload-pack=, --receive-pack=, --exec=, clone -u,
  // and GIT_SSH_COMMAND=... style assignments: values that git runs with the shell.
  void follow_git(const std::vector<Word>& words, std::size_t first, int self,
                  const std::vector<std::string>& assignments) {
    for (const auto& assignment : assignments) {
      auto eq = assignment.find('=');
      if (eq != std::string::npos && is_git_command_variable(assignment.substr(0, eq)) &&
          eq + 1 < assignment.size())
        recurse(std::string_view(assignment).substr(eq + 1), Source::ShellString, self);
    }
    std::string subcommand;
    for (std::size_t i = first + 1; i < words.size(); ++i) {
      const std::string& w = words[i].value;
      const bool has_next = i + 1 < words.size();
      std::optional<std::string> config;
      if ((w == "-c" || w == "--config") && has_next) {
        config = words[++i].value;
      } else if (w.starts_with("--config=")) {
        config = w.substr(9);
      } else if (w == "-C" && has_next) {
        ++i;
        continue;
      }
      if (config) {
        if (auto command = git_config_command(*config))
          recurse(*command, Source::ShellString, self);
        continue;
      }
      bool runs_next = false;
      for (std::string_view option : {"--upload-pack", "--receive-pack", "--exec"}) {
        if (w == option) runs_next = true;
        if (w.size() > option.size() && w.starts_with(option) && w[option.size()] == '=')
          recurse(std::string_view(w).substr(option.size() + 1), Source::ShellString, self);
      }
      if (w == "-u" && subcommand == "clone") runs_next = true;
      if (runs_next && has_next) {
        recurse(words[++i].value, Source::ShellString, self);
        continue;
      }
      if (subcommand.empty() && !w.starts_with("-")) {
        subcommand = w;
        // `git config [--global] KEY VALUE` stores a command the next git call runs.
        if (w == "config") follow_git_config(words, i + 1, self);
      }
    }
  }

  void follow_git_config(const std::vector<Word>& words, std::size_t i, int self) {
    std::vector<std::string> operands;
    for (; i < words.size(); ++i) {
      const std::string& w = words[i].value;
      if (w == "-f" || w == "--file" || w == "--blob" || w == "--type") {
        ++i;  // an option with an argument
      } else if (!w.starts_with("-") || operands.size() == 1) {
        operands.push_back(w);  // KEY, then VALUE (which may start with '-')
      }
      if (operands.size() == 2) break;
    }
    if (operands.size() != 2) return;
    if (auto command = git_config_command(operands[0] + "=" + operands[1]))
      recurse(*command, Source::ShellString, self);
  }

  // sh -c 'string' (also -ec, -lc ...): parse the string. Returns `self` for a shell reading stdin.
  int follow_shell(const std::vector<Word>& words, std::size_t i, int self) {
    bool has_c = false;
    bool has_s = false;  // -s: the script is stdin even with operands (they are $1 ...)
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
          if (w[k] == 's' && w[0] == '-') has_s = true;
          if (w[k] == 'o' || w[k] == 'O') takes_arg = true;
        }
        i += takes_arg ? 2 : 1;
        continue;
      }
      break;
    }
    if (has_c) {
      if (i < words.size()) recurse(words[i].value, Source::ShellString, self);
      return -1;
    }
    if (i >= words.size() || has_s) return self;  // no script file: the script is stdin
    return follow_script_operand(words, i, self);
  }

  // A script named by a shell or `source`: /dev/stdin and `-` read stdin; <(echo ...) is text.
  int follow_script_operand(const std::vector<Word>& words, std::size_t i, int self) {
    if (i >= words.size()) return -1;
    const Word& script = words[i];
    if (script.value == "/dev/stdin" || script.value == "-" || script.value == "/proc/self/fd/0" ||
        script.value == "/dev/fd/0")
      return self;
    if (script.subst_end > script.subst_begin) {
      if (auto text = substitution_output(script.subst_begin, script.subst_end))
        recurse(*text, Source::ShellString, self);
    }
    return -1;
  }

  void follow_su(const std::vector<Word>& words, std::size_t first, int self) {
    for (std::size_t i = first + 1; i < words.size(); ++i) {
      const std::string& w = words[i].value;
      if (w.starts_with("--command=")) {
        recurse(std::string_view(w).substr(10), Source::ShellString, self);
      } else if (w == "--command" ||
                 (w.size() >= 2 && w[0] == '-' && w[1] != '-' && w.back() == 'c')) {
        if (i + 1 < words.size()) recurse(words[i + 1].value, Source::ShellString, self);
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
  Parser parser(line, ctx, Source::Line, 0, "", -1, -1);
  parser.run();
  return std::move(ctx.result);
}

namespace {

// /proc/<self|thread-self|pid>/root and /proc/<pid>/task/<tid>/root name the root directory.
bool is_proc_root(const std::vector<std::string_view>& parts) {
  auto is_pid = [](std::string_view part) {
    return !part.empty() && std::all_of(part.begin(), part.end(), is_digit);
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
