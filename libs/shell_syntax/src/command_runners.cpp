// Commands that run another command (sudo, wrappers like env / nohup / xargs, sh -c, eval,
// find -exec, git's shell-run settings ...): which words they run and how.
#include "parser.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "execmcp/common/shell_quote.hpp"

namespace execmcp::plugins::shell_syntax::detail {
namespace {

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

}  // namespace

// Emits words[from, to) as the command that words[first] (at index `self`) runs.
int Parser::run_words(const std::vector<Word>& words, std::size_t from, std::size_t to,
                      Source source, int self, std::size_t runner_text_begin, std::size_t raw_end) {
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

int Parser::follow_runner(const std::vector<Word>& words, std::size_t first, int self,
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
        line += " " + common::shell_quote(words[i].value);
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
std::optional<std::pair<std::string, std::size_t>> Parser::env_split_string(
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
int Parser::follow_flock(const std::vector<Word>& words, std::size_t first, int self,
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
int Parser::follow_parallel(const std::vector<Word>& words, std::size_t first, int self,
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
int Parser::follow_watch(const std::vector<Word>& words, std::size_t first, int self,
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
void Parser::follow_find(const std::vector<Word>& words, std::size_t first, int self,
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
void Parser::follow_git(const std::vector<Word>& words, std::size_t first, int self,
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
      if (auto command = git_config_command(*config)) recurse(*command, Source::ShellString, self);
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

void Parser::follow_git_config(const std::vector<Word>& words, std::size_t i, int self) {
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
int Parser::follow_shell(const std::vector<Word>& words, std::size_t i, int self) {
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
int Parser::follow_script_operand(const std::vector<Word>& words, std::size_t i, int self) {
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

void Parser::follow_su(const std::vector<Word>& words, std::size_t first, int self) {
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

}  // namespace execmcp::plugins::shell_syntax::detail
