// The sanitize rules: destructive and privilege-changing commands, judged per simple command.
#include "execmcp/plugins/sanitize/sanitize_rules.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <map>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "execmcp/plugins/plugin_settings/settings_object.hpp"

#include "execmcp/plugins/shell_syntax/simple_commands.hpp"

namespace execmcp::plugins::sanitize {
namespace {

using shell_syntax::normalize_path;
using shell_syntax::SimpleCommand;

constexpr std::size_t kMaxQuotedCommand = 120;

std::string quote_command(const SimpleCommand& cmd) {
  std::string text = cmd.text.empty() ? cmd.raw : cmd.text;
  std::replace(text.begin(), text.end(), '\n', ' ');
  if (text.size() > kMaxQuotedCommand) text = text.substr(0, kMaxQuotedCommand) + "...";
  return " (" + text + ")";
}

bool is_option(const std::string& word) {
  return word.size() > 1 && word[0] == '-';
}

// Words after the command name that are not options (GNU tools accept options anywhere).
std::vector<std::string> operands(const SimpleCommand& cmd) {
  std::vector<std::string> out;
  bool options_done = false;
  for (std::size_t i = 1; i < cmd.words.size(); ++i) {
    const std::string& w = cmd.words[i];
    if (!options_done && w == "--") {
      options_done = true;
    } else if (options_done || !is_option(w)) {
      out.push_back(w);
    }
  }
  return out;
}

// A normalised absolute path that is the root or everything in it.
bool is_root_glob(const std::string& normalized) {
  return normalized == "/" || normalized == "/*" || normalized == "/**";
}

// "/", "/*", "~", "~/", "~/*", "$HOME", "${HOME}/*", "//", "/./", "/.." ...
bool is_root_or_home(const std::string& target) {
  std::string rest;
  if (target.starts_with("~")) {
    auto slash = target.find('/');
    rest = slash == std::string::npos ? "" : target.substr(slash);
  } else if (target.starts_with("${HOME}")) {
    rest = target.substr(7);
  } else if (target.starts_with("$HOME")) {
    rest = target.substr(5);
    if (!rest.empty() && rest[0] != '/') return false;  // $HOMEDIR is another variable
  } else if (target.starts_with("/")) {
    rest = target;
  } else {
    return false;
  }
  return is_root_glob(normalize_path("/" + rest));
}

// A normalised relative path that only climbs ("..", "../..", "../../*"): from a directory that
// deep it is the root, and the filter does not know how deep the command starts.
bool only_climbs(const std::string& normalized) {
  if (!normalized.starts_with("..")) return false;
  std::size_t i = 0;
  while (i < normalized.size()) {
    std::size_t slash = normalized.find('/', i);
    if (slash == std::string::npos) slash = normalized.size();
    const std::string_view part = std::string_view(normalized).substr(i, slash - i);
    const bool last = slash == normalized.size();
    if (part != ".." && !(last && (part == "*" || part == "**"))) return false;
    i = slash + 1;
  }
  return true;
}

// What a command line's relative paths resolve against, as far as the filter can tell.
struct Context {
  const shell_syntax::ParsedLine& parsed;
  // The work dir the agent asked for: absolute, relative to the agent's cwd, or "" (its cwd).
  std::string_view work_dir;
  // Somewhere in the line a `cd` goes to /, home (`cd`, `cd ~`) or a parent (`cd ../..`); its
  // relative paths may then resolve against /.
  bool cd_to_root = false;
};

// True for a path that is, or may be, the root or a home directory: is_root_or_home(), or a
// relative path ($PWD/... counts as one) that climbs to / from the work dir or from any depth.
bool resolves_to_root(const std::string& target, const Context& ctx) {
  if (is_root_or_home(target)) return true;
  std::string path = target;
  for (std::string_view pwd : {"${PWD}", "$PWD"}) {
    if (path.starts_with(pwd) && (path.size() == pwd.size() || path[pwd.size()] == '/')) {
      path = "." + path.substr(pwd.size());
      break;
    }
  }
  if (path.empty() || path[0] == '/' || path[0] == '~' || path[0] == '$') return false;
  if (only_climbs(normalize_path(path))) return true;
  if (ctx.cd_to_root && is_root_glob(normalize_path("/" + path))) return true;
  if (ctx.work_dir.empty()) return false;
  const std::string joined = std::string(ctx.work_dir) + "/" + path;
  if (ctx.work_dir.front() == '/') return is_root_glob(normalize_path(joined));
  return only_climbs(normalize_path(joined));
}

bool cds_to_root(const shell_syntax::ParsedLine& parsed) {
  return std::any_of(parsed.commands.begin(), parsed.commands.end(), [](const SimpleCommand& cmd) {
    if (cmd.name() != "cd" && cmd.name() != "pushd") return false;
    const auto it = std::find_if(cmd.words.begin() + 1, cmd.words.end(),
                                 [](const std::string& w) { return !is_option(w); });
    if (it == cmd.words.end()) return cmd.name() == "cd";  // a bare cd goes home
    return is_root_or_home(*it) || only_climbs(normalize_path(*it));
  });
}

// Any /dev/ path except the harmless pseudo-devices and descriptors.
bool is_protected_device(const std::string& path) {
  if (!path.starts_with("/")) return false;
  std::string normalized = normalize_path(path);
  if (!normalized.starts_with("/dev/")) return false;
  std::string rel = normalized.substr(5);
  static const std::set<std::string> kHarmless{"null",  "zero", "full",   "stdout", "stderr",
                                               "stdin", "tty",  "random", "urandom"};
  if (kHarmless.count(rel) != 0) return false;
  return !(rel.starts_with("fd/") || rel.starts_with("shm/") || rel.starts_with("pts/"));
}

bool is_dev_null(const std::string& path) {
  return path.starts_with("/") && normalize_path(path) == "/dev/null";
}

// --- destructive rules ------------------------------------------------------------------------

// find's start points: the words after its leading options (-H -L -P -D x -O3) and before its
// expression; none means ".".
std::vector<std::string> find_start_points(const SimpleCommand& find) {
  std::vector<std::string> starts;
  std::size_t i = 1;
  while (i < find.words.size() &&
         (find.words[i] == "-H" || find.words[i] == "-L" || find.words[i] == "-P" ||
          find.words[i].starts_with("-O") || find.words[i] == "-D")) {
    i += find.words[i] == "-D" ? 2 : 1;
  }
  for (; i < find.words.size(); ++i) {
    const std::string& w = find.words[i];
    if (w.starts_with("-") || w == "(" || w == "!" || w == ",") break;
    starts.push_back(w);
  }
  if (starts.empty()) starts.emplace_back(".");
  return starts;
}

// A find that walks the root or a home directory and selects everything it meets: no test on
// name, path, type, age, size, owner ... outside its -exec commands (-maxdepth, -mindepth,
// -xdev and the like select nothing).
bool find_walks_root(const SimpleCommand& find, const Context& ctx) {
  const auto starts = find_start_points(find);
  if (!std::any_of(starts.begin(), starts.end(),
                   [&](const std::string& start) { return resolves_to_root(start, ctx); }))
    return false;
  static const std::set<std::string_view> kTests{
      "-name",   "-iname",   "-path",  "-ipath",  "-wholename", "-iwholename", "-regex",
      "-iregex", "-type",    "-xtype", "-size",   "-mtime",     "-mmin",       "-atime",
      "-amin",   "-ctime",   "-cmin",  "-user",   "-group",     "-uid",        "-gid",
      "-nouser", "-nogroup", "-perm",  "-empty",  "-links",     "-inum",       "-samefile",
      "-lname",  "-ilname",  "-used",  "-fstype", "-context"};
  for (std::size_t i = 1; i < find.words.size(); ++i) {
    const std::string& w = find.words[i];
    if (w == "-exec" || w == "-execdir" || w == "-ok" || w == "-okdir") {
      while (i + 1 < find.words.size() && find.words[i + 1] != ";" &&
             !(find.words[i + 1] == "+" && find.words[i] == "{}"))
        ++i;
      ++i;
      continue;
    }
    if (kTests.count(w) != 0 || w.starts_with("-newer")) return false;
  }
  return true;
}

// The command that feeds `cmd` its arguments from somewhere the filter cannot read (xargs,
// parallel), or a find that walks the root and hands it every path; "" when none does.
std::string feeding_runner(const SimpleCommand& cmd, const Context& ctx) {
  for (int r = cmd.runner; r >= 0 && static_cast<std::size_t>(r) < ctx.parsed.commands.size();) {
    const SimpleCommand& runner = ctx.parsed.commands[static_cast<std::size_t>(r)];
    const std::string name = runner.name();
    if (name == "xargs" || name == "parallel") return name;
    if (name == "find" && find_walks_root(runner, ctx)) return name;
    if (runner.runner >= r) break;  // runners come first; never loop
    r = runner.runner;
  }
  return "";
}

bool rm_root(const SimpleCommand& cmd, const Context& ctx) {
  if (cmd.name() == "find") {
    // find / -delete deletes what rm -rf / does.
    return std::find(cmd.words.begin(), cmd.words.end(), "-delete") != cmd.words.end() &&
           find_walks_root(cmd, ctx);
  }
  if (cmd.name() != "rm") return false;
  bool recursive = false;
  bool no_preserve_root = false;
  bool options_done = false;
  std::vector<std::string> targets;
  for (std::size_t i = 1; i < cmd.words.size(); ++i) {
    const std::string& w = cmd.words[i];
    if (!options_done && w == "--") {
      options_done = true;
    } else if (!options_done && w.starts_with("--")) {
      recursive = recursive || w == "--recursive";
      no_preserve_root = no_preserve_root || w == "--no-preserve-root";
    } else if (!options_done && is_option(w)) {
      recursive = recursive || w.find_first_of("rR") != std::string::npos;
    } else {
      targets.push_back(w);
    }
  }
  if (no_preserve_root) return true;  // it exists only to delete /
  if (!recursive) return false;
  // A recursive rm whose paths come from xargs or parallel may be handed /: judged as if it were.
  return std::any_of(targets.begin(), targets.end(),
                     [&](const std::string& t) { return resolves_to_root(t, ctx); }) ||
         !feeding_runner(cmd, ctx).empty();
}

std::string rm_root_detail(const SimpleCommand& cmd, const Context& ctx) {
  if (cmd.name() != "rm") return "";
  const std::string runner = feeding_runner(cmd, ctx);
  if (runner.empty()) return "";
  if (runner == "find") return "; find hands it every path under / or home";
  return "; its paths come from " + runner +
         ", which the filter cannot see: name the paths, or use find DIR ... -exec rm -r {} +";
}

bool dd_device(const SimpleCommand& cmd) {
  if (cmd.name() != "dd") return false;
  return std::any_of(cmd.words.begin() + 1, cmd.words.end(), [](const std::string& w) {
    return w.starts_with("of=") && is_protected_device(w.substr(3));
  });
}

bool is_disk_tool(const std::string& name) {
  static const std::set<std::string> kTools{"mke2fs", "mkswap", "fdisk",     "sfdisk",
                                            "cfdisk", "gdisk",  "sgdisk",    "parted",
                                            "wipefs", "shred",  "blkdiscard"};
  return name.starts_with("mkfs") || kTools.count(name) != 0;
}

bool block_device_write(const SimpleCommand& cmd) {
  for (const auto& redirection : cmd.redirections) {
    if (redirection.writes() && is_protected_device(redirection.target)) return true;
  }
  const std::string name = cmd.name();
  std::vector<std::string> args = operands(cmd);
  if (is_disk_tool(name)) {
    bool listing = (name == "fdisk" || name == "sfdisk") &&
                   std::any_of(cmd.words.begin(), cmd.words.end(),
                               [](const std::string& w) { return w == "-l" || w == "--list"; });
    return !listing && std::any_of(args.begin(), args.end(), is_protected_device);
  }
  if (name == "tee") return std::any_of(args.begin(), args.end(), is_protected_device);
  if ((name == "cp" || name == "mv" || name == "install") && args.size() >= 2)
    return is_protected_device(args.back());
  return false;
}

bool move_to_dev_null(const SimpleCommand& cmd) {
  if (cmd.name() != "mv") return false;
  for (std::size_t i = 1; i < cmd.words.size(); ++i) {
    const std::string& w = cmd.words[i];
    if ((w == "-t" || w == "--target-directory") && i + 1 < cmd.words.size() &&
        is_dev_null(cmd.words[i + 1]))
      return true;
    if (w.starts_with("--target-directory=") && is_dev_null(w.substr(19))) return true;
  }
  std::vector<std::string> args = operands(cmd);
  return args.size() >= 2 && is_dev_null(args.back());
}

// --- privilege rules --------------------------------------------------------------------------

// The value of install's option `short_name` / `long_name` (-m 755, -m755, -Dm755, --mode=755).
bool install_sets(const SimpleCommand& cmd, char short_name, std::string_view long_name) {
  if (cmd.name() != "install") return false;
  for (std::size_t i = 1; i < cmd.words.size(); ++i) {
    const std::string& w = cmd.words[i];
    if (w == "--") break;
    if (w.starts_with("--")) {
      if (w == long_name ||
          (w.starts_with(long_name) && w.size() > long_name.size() && w[long_name.size()] == '='))
        return true;
      continue;
    }
    if (!is_option(w)) continue;
    for (std::size_t k = 1; k < w.size(); ++k) {
      if (w[k] == short_name) return true;
      if (std::string_view("gmoSt").find(w[k]) != std::string_view::npos) break;  // takes an arg
    }
  }
  return false;
}

// MassGen blocks every chmod, and so do we: a mode change is a privilege decision the operator
// makes, e.g. `allow: [chmod]` for agents that need `chmod +x`. install -m and ACLs change modes
// too.
bool is_chmod(const SimpleCommand& cmd) {
  const std::string name = cmd.name();
  return name == "chmod" || name == "setfacl" || name == "chacl" ||
         install_sets(cmd, 'm', "--mode");
}

// --- fork bombs -------------------------------------------------------------------------------

// Structural: a function whose body runs itself twice at once (twice in one pipeline, or twice
// with one of them in the background), or an endless loop (`while :`, `until false`) whose body
// only starts background jobs, e.g. `while :; do sh & done`.
bool fork_bomb_structural(const shell_syntax::ParsedLine& parsed) {
  std::map<std::pair<std::string, int>, int> piped;  // (function, pipeline) -> self calls
  std::map<std::string, std::pair<int, int>> calls;  // function -> (self calls, backgrounded)
  std::vector<std::pair<bool, bool>> loop_jobs(parsed.loops.size());  // (background, foreground)
  for (const auto& cmd : parsed.commands) {
    if (cmd.variant) continue;
    if (cmd.loop >= 0 && static_cast<std::size_t>(cmd.loop) < loop_jobs.size() &&
        cmd.depth == parsed.loops[static_cast<std::size_t>(cmd.loop)].depth) {
      // Only what the body runs itself: `bash -c 'x' &` is one background job, not `x`.
      auto& [background, foreground] = loop_jobs[static_cast<std::size_t>(cmd.loop)];
      (cmd.background ? background : foreground) = true;
    }
    if (cmd.function.empty() || cmd.name() != cmd.function) continue;
    if (++piped[{cmd.function, cmd.pipeline}] >= 2) return true;
    auto& [total, backgrounded] = calls[cmd.function];
    ++total;
    if (cmd.background) ++backgrounded;
    if (backgrounded >= 1 && total >= 2) return true;
  }
  for (std::size_t i = 0; i < loop_jobs.size(); ++i) {
    if (parsed.loops[i].endless && loop_jobs[i].first && !loop_jobs[i].second) return true;
  }
  return false;
}

// Tolerant text form, for what the splitter might read differently: NAME(){ NAME|NAME& } with any
// spacing, and `function NAME { ... }`. Names and bodies are looked at through a bounded window,
// so the scan stays linear on hostile input like "f(){f(){f(){...".
bool fork_bomb_text(std::string_view line) {
  constexpr std::size_t kMaxName = 64;
  constexpr std::size_t kMaxBody = 256;
  std::string t;
  for (char c : line) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') t += c;
  }
  auto body_forks = [&](const std::string& name, std::size_t body_start) {
    std::string_view body = std::string_view(t).substr(std::min(body_start, t.size()), kMaxBody);
    body = body.substr(0, body.find('}'));
    return body.find(name + "|" + name + "&") != std::string_view::npos ||
           body.find(name + "|&" + name + "&") != std::string_view::npos;
  };
  const std::string_view kStop = "(){}|&;<>\"'`$";
  for (std::size_t at = t.find("(){"); at != std::string::npos; at = t.find("(){", at + 1)) {
    std::size_t begin = at;
    while (begin > 0 && at - begin < kMaxName + 8 &&
           kStop.find(t[begin - 1]) == std::string_view::npos)
      --begin;
    std::string name = t.substr(begin, at - begin);
    if (name.starts_with("function")) name = name.substr(8);
    if (!name.empty() && body_forks(name, at + 3)) return true;
  }
  for (std::size_t at = t.find("function"); at != std::string::npos;
       at = t.find("function", at + 1)) {
    std::string_view window = std::string_view(t).substr(at + 8, kMaxName + 2);
    std::size_t brace = window.find('{');
    if (brace == std::string_view::npos) continue;
    std::string name(window.substr(0, brace));
    if (name.ends_with("()")) name.resize(name.size() - 2);
    if (!name.empty() && name.find_first_of(kStop) == std::string::npos &&
        body_forks(name, at + 8 + brace + 1))
      return true;
  }
  return false;
}

struct Rule {
  RuleInfo info;
  bool (*matches)(const SimpleCommand&, const Context&);
  std::string_view reason;  // completed with the offending command
  // Appended to the reason when it says more than the command does, e.g. where rm's paths came
  // from.
  std::string (*detail)(const SimpleCommand&, const Context&) = nullptr;
};

// Most rules judge the command alone.
template <bool (*Matches)(const SimpleCommand&)>
bool alone(const SimpleCommand& cmd, const Context&) {
  return Matches(cmd);
}

bool is_privilege_tool(const SimpleCommand& cmd) {
  const std::string name = cmd.name();
  return name == "sudo" || name == "sudoedit" || name == "doas" || name == "pkexec" ||
         name == "run0";
}
bool is_su(const SimpleCommand& cmd) {
  return cmd.name() == "su";
}
bool is_chown(const SimpleCommand& cmd) {
  const std::string name = cmd.name();
  return name == "chown" || name == "chgrp" || install_sets(cmd, 'o', "--owner") ||
         install_sets(cmd, 'g', "--group");
}

const std::vector<Rule>& command_rules() {
  static const std::vector<Rule> kRules{
      {{"rm-root", "recursive rm of /, ~ or $HOME (any spelling), or rm --no-preserve-root", false},
       rm_root,
       "deleting the root or home directory is blocked",
       rm_root_detail},
      {{"dd-device", "dd writing to a device (of=/dev/sda ...)", false},
       alone<dd_device>,
       "writing raw data to a device with dd is blocked"},
      {{"block-device-write",
        "redirections, tee or cp onto a device; mkfs*, fdisk, wipefs, shred ... on a device",
        false},
       alone<block_device_write>,
       "writing to, formatting or wiping a device is blocked"},
      {{"move-to-dev-null", "mv of anything to /dev/null", false},
       alone<move_to_dev_null>,
       "moving files to /dev/null destroys them and is blocked"},
      {{"sudo", "running a command as another user with sudo, sudoedit, doas, pkexec or run0",
        true},
       alone<is_privilege_tool>,
       "running commands with elevated privileges (sudo, sudoedit, doas, pkexec, run0) is blocked"},
      {{"su", "switching user with su", true}, alone<is_su>, "switching user with su is blocked"},
      {{"chown", "changing ownership with chown, chgrp or install -o/-g", true},
       alone<is_chown>,
       "changing file ownership is blocked"},
      {{"chmod", "changing file modes with chmod, install -m, setfacl or chacl", true},
       alone<is_chmod>,
       "changing file modes (chmod, install -m, setfacl) is blocked"},
  };
  return kRules;
}

constexpr std::string_view kForkBombReason =
    "a fork bomb (a function that runs itself twice at once, or an endless loop of background "
    "jobs) is blocked";

}  // namespace

const std::vector<RuleInfo>& rules() {
  static const std::vector<RuleInfo> kInfos = [] {
    std::vector<RuleInfo> infos;
    infos.push_back(
        {"fork-bomb",
         "a function that runs itself twice at once, or an endless loop of background jobs",
         false});
    for (const auto& rule : command_rules()) infos.push_back(rule.info);
    return infos;
  }();
  return kInfos;
}

Settings parse_settings(std::string_view settings_json) {
  Settings settings;
  const auto parsed = plugin_settings::parse_settings_object(settings_json, "sanitize");
  if (!parsed) return settings;
  const nlohmann::json& json = *parsed;
  std::string configurable;
  for (const auto& info : rules()) {
    if (!info.configurable) continue;
    configurable += (configurable.empty() ? "" : ", ") + std::string(info.id);
  }
  for (const auto& [key, value] : json.items()) {
    if (key != "allow") throw std::invalid_argument("unknown setting '" + key + "' (known: allow)");
    if (!value.is_array())
      throw std::invalid_argument("setting 'allow' must be a list of rule names (" + configurable +
                                  ")");
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (!value[i].is_string())
        throw std::invalid_argument("setting 'allow[" + std::to_string(i) +
                                    "]' must be a rule name (" + configurable + ")");
      std::string name = value[i].get<std::string>();
      auto it = std::find_if(rules().begin(), rules().end(),
                             [&](const RuleInfo& info) { return info.id == name; });
      if (it == rules().end())
        throw std::invalid_argument("setting 'allow': unknown rule '" + name +
                                    "' (valid: " + configurable + ")");
      if (!it->configurable)
        throw std::invalid_argument("setting 'allow': rule '" + name +
                                    "' cannot be switched off (valid: " + configurable + ")");
      settings.allowed.insert(name);
    }
  }
  return settings;
}

sdk::FilterVerdict judge(std::string_view command_line, const Settings& settings,
                         std::string_view work_dir) {
  if (fork_bomb_text(command_line))
    return sdk::FilterVerdict::deny("fork-bomb", std::string(kForkBombReason));
  shell_syntax::ParsedLine parsed = shell_syntax::parse_line(command_line);
  if (fork_bomb_structural(parsed))
    return sdk::FilterVerdict::deny("fork-bomb", std::string(kForkBombReason));
  const Context ctx{parsed, work_dir, cds_to_root(parsed)};
  // Rule by rule, so `sudo rm -rf /` reports rm-root, the graver one, rather than sudo.
  for (const auto& rule : command_rules()) {
    if (settings.allowed.count(std::string(rule.info.id)) != 0) continue;
    for (const auto& cmd : parsed.commands) {
      if (!rule.matches(cmd, ctx)) continue;
      std::string reason = std::string(rule.reason) + quote_command(cmd);
      if (rule.detail != nullptr) reason += rule.detail(cmd, ctx);
      if (rule.info.configurable)
        reason += "; the agent's config can allow it with sanitize setting allow: [" +
                  std::string(rule.info.id) + "]";
      return sdk::FilterVerdict::deny(std::string(rule.info.id), std::move(reason));
    }
  }
  if (auto past =
          shell_syntax::past_bound(parsed, "to judge (write a script with write_file instead)"))
    return sdk::FilterVerdict::deny(std::move(past->rule), std::move(past->reason));
  return sdk::FilterVerdict::allow();
}

}  // namespace execmcp::plugins::sanitize
