// Allow/deny regex rules judged on the whole line and on each simple command it would run.
#include "execmcp/plugins/patterns/pattern_rules.hpp"

#include <pthread.h>

#include <cctype>
#include <exception>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "execmcp/plugins/plugin_settings/settings_object.hpp"

#include "execmcp/plugins/patterns/checked_regex.hpp"
#include "execmcp/plugins/shell_syntax/simple_commands.hpp"

namespace execmcp::plugins::patterns {
namespace {

using shell_syntax::SimpleCommand;

// libstdc++'s matcher needs a few hundred bytes of stack per input character.
constexpr std::size_t kMatcherStackBytes = 128 * 1024 * 1024;
// Lines up to this size need well under 1 MiB of matcher stack, so they are judged on the
// caller's thread; only longer ones pay for a big-stack thread (a thread per check costs more
// than the matching itself).
constexpr std::size_t kInlineMatchBytes = 2048;
constexpr std::size_t kMaxQuotedCommand = 120;

std::string shorten(std::string text) {
  for (char& c : text) {
    if (c == '\n') c = ' ';
  }
  if (text.size() > kMaxQuotedCommand) text = text.substr(0, kMaxQuotedCommand) + "...";
  return text;
}

// For a search, ".*X" is found exactly where "X" is, but std::regex tries the ".*" from every
// start position (quadratic, and one stack frame per character): drop it before compiling.
std::string without_leading_dot_star(std::string source) {
  while (source.starts_with(".*") && source.size() > 2) {
    std::size_t cut = source.starts_with(".*?") ? 3 : 2;
    if (cut >= source.size() || source[cut] == '|' || source[cut] == '*' || source[cut] == '+' ||
        source[cut] == '?' || source[cut] == '{')
      break;
    source.erase(0, cut);
  }
  return source;
}

// What is wrong with one entry of the `key` list ("" when nothing), compiled into `out` when it
// is fine; `joiner` is how the message follows the entry's name (" " or ": ").
std::string compile_entry(const std::string& key, const nlohmann::json& item,
                          std::vector<Pattern>& out, const char*& joiner) {
  joiner = " ";
  if (!item.is_string()) return "must be a regular expression (a string)";
  std::string source = item.get<std::string>();
  if (source.empty()) return "is empty (it would match anything)";
  try {
    std::string compiled = key == "deny" ? without_leading_dot_star(source) : source;
    out.push_back({source, compile_checked_regex(compiled)});
  } catch (const std::invalid_argument& e) {
    joiner = ": ";
    return "invalid regular expression '" + source + "': " + e.what();
  }
  return "";
}

constexpr const char* kNotAList = "must be a list of regular expressions";

std::vector<Pattern> compile_list(const std::string& key, const nlohmann::json& value) {
  if (!value.is_array()) throw std::invalid_argument("setting '" + key + "' " + kNotAList);
  std::vector<Pattern> out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const char* joiner = " ";
    if (auto problem = compile_entry(key, value[i], out, joiner); !problem.empty())
      throw std::invalid_argument("setting '" + key + "[" + std::to_string(i) + "]'" + joiner +
                                  problem);
  }
  return out;
}

const Pattern* first_found(const std::vector<Pattern>& patterns, const std::string& text) {
  for (const auto& pattern : patterns) {
    if (std::regex_search(text, pattern.regex)) return &pattern;
  }
  return nullptr;
}

bool matches_at_start(const std::vector<Pattern>& patterns, const std::string& text) {
  for (const auto& pattern : patterns) {
    if (std::regex_search(text, pattern.regex, std::regex_constants::match_continuous)) return true;
  }
  return false;
}

// True when an allow pattern that names `name` matches `text` at its start through at least
// `end` characters: `sudo apt ` on "sudo apt install x" spells out apt, so it allows what sudo
// runs; `sudo ` or `find .*` do not.
bool spelled_out(const std::vector<Pattern>& patterns, const std::string& text,
                 const std::string& name, std::size_t end) {
  for (const auto& pattern : patterns) {
    if (name.empty() || pattern.source.find(name) == std::string::npos) continue;
    std::smatch match;
    if (std::regex_search(text, match, pattern.regex, std::regex_constants::match_continuous) &&
        static_cast<std::size_t>(match.length(0)) >= end)
      return true;
  }
  return false;
}

// A command that another runs (a wrapper, sudo, find -exec) and is written out in that command's
// text is allowed when a pattern allowing an enclosing command already spells it out.
bool allowed_by_runner(const std::vector<Pattern>& patterns,
                       const std::vector<SimpleCommand>& commands, const SimpleCommand& cmd) {
  const std::string name = cmd.name();
  std::size_t first_word = cmd.text.find_first_of(" \t\n");
  std::size_t offset = 0;
  const SimpleCommand* at = &cmd;
  for (int hops = 0; hops <= shell_syntax::kMaxDepth; ++hops) {
    if (at->offset_in_runner == std::string::npos || at->runner < 0 ||
        static_cast<std::size_t>(at->runner) >= commands.size())
      return false;
    offset += at->offset_in_runner;
    at = &commands[static_cast<std::size_t>(at->runner)];
    std::size_t end = offset + (first_word == std::string::npos ? cmd.text.size() : first_word);
    if (spelled_out(patterns, at->text, name, end)) return true;
  }
  return false;
}

std::string joined_words(const SimpleCommand& cmd) {
  std::string out;
  for (const auto& word : cmd.words) {
    if (!out.empty()) out += ' ';
    out += word;
  }
  return out;
}

sdk::FilterVerdict judge_here(std::string_view command_line, const Settings& settings) {
  const std::string line(command_line);
  shell_syntax::ParsedLine parsed = shell_syntax::parse_line(line);

  auto deny_for = [](const Pattern& pattern, const std::string& where) {
    return sdk::FilterVerdict::deny(
        pattern.source, "the command matches the deny pattern '" + pattern.source + "'" + where);
  };
  if (const Pattern* hit = first_found(settings.deny, line)) return deny_for(*hit, "");
  for (const auto& cmd : parsed.commands) {
    const Pattern* hit = first_found(settings.deny, cmd.raw);
    if (hit == nullptr) hit = first_found(settings.deny, joined_words(cmd));
    if (hit != nullptr) return deny_for(*hit, " (in '" + shorten(cmd.raw) + "')");
  }

  if (settings.allow.empty()) return sdk::FilterVerdict::allow();
  if (auto past = shell_syntax::past_bound(parsed, "to check against the allow list"))
    return sdk::FilterVerdict::deny(std::move(past->rule), std::move(past->reason));
  for (const auto& cmd : parsed.commands) {
    // What a runner runs (sudo, nohup, find -exec, git -c alias.x='!...') is a command too.
    if (matches_at_start(settings.allow, cmd.text)) continue;
    if (allowed_by_runner(settings.allow, parsed.commands, cmd)) continue;
    std::string allowed;
    for (const auto& pattern : settings.allow)
      allowed += (allowed.empty() ? "'" : ", '") + pattern.source + "'";
    std::string run_by;
    if (cmd.runner >= 0 && static_cast<std::size_t>(cmd.runner) < parsed.commands.size())
      run_by = " (run by " + parsed.commands[static_cast<std::size_t>(cmd.runner)].name() + ")";
    return sdk::FilterVerdict::deny("allow-list", "'" + shorten(cmd.text) + "'" + run_by +
                                                      " does not match any allowed pattern "
                                                      "(allowed: " +
                                                      allowed + ")");
  }
  return sdk::FilterVerdict::allow();
}

// Runs `task` on a thread with a large stack and waits for it. False if no thread could start.
template <class Task>
bool run_on_large_stack(Task& task) {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return false;
  pthread_attr_setstacksize(&attr, kMatcherStackBytes);
  pthread_t thread;
  auto trampoline = [](void* arg) -> void* {
    (*static_cast<Task*>(arg))();
    return nullptr;
  };
  int rc = pthread_create(&thread, &attr, trampoline, &task);
  pthread_attr_destroy(&attr);
  if (rc != 0) return false;
  pthread_join(thread, nullptr);
  return true;
}

}  // namespace

Settings parse_settings(std::string_view settings_json) {
  Settings settings;
  const auto parsed = plugin_settings::parse_settings_object(settings_json, "patterns");
  if (!parsed) return settings;
  const nlohmann::json& json = *parsed;
  for (const auto& [key, value] : json.items()) {
    if (key == "allow")
      settings.allow = compile_list(key, value);
    else if (key == "deny")
      settings.deny = compile_list(key, value);
    else
      throw std::invalid_argument("unknown setting '" + key + "' (known: allow, deny)");
  }
  return settings;
}

void check_settings(const std::string& settings_json, std::vector<sdk::SettingsProblem>& problems) {
  const auto parsed = plugin_settings::parse_settings_object(settings_json, "patterns");
  if (!parsed) return;
  for (const auto& [key, value] : parsed->items()) {
    const std::string at = "/" + sdk::pointer_token(key);
    if (key != "allow" && key != "deny") {
      problems.push_back({at, "unknown setting '" + key + "' (known: allow, deny)"});
    } else if (!value.is_array()) {
      problems.push_back({at, kNotAList});
    } else {
      std::vector<Pattern> compiled;
      for (std::size_t i = 0; i < value.size(); ++i) {
        const char* joiner = " ";
        if (auto problem = compile_entry(key, value[i], compiled, joiner); !problem.empty())
          problems.push_back({at + "/" + std::to_string(i), std::move(problem)});
      }
    }
  }
}

sdk::FilterVerdict judge(std::string_view command_line, const Settings& settings) {
  if (settings.allow.empty() && settings.deny.empty()) return sdk::FilterVerdict::allow();
  if (command_line.size() > kMaxLineBytes)
    return sdk::FilterVerdict::deny("too-long",
                                    "the command is " + std::to_string(command_line.size()) +
                                        " bytes; the patterns filter checks at most " +
                                        std::to_string(kMaxLineBytes) +
                                        " (write long content with the write_file tool instead)");
  if (command_line.size() <= kInlineMatchBytes) return judge_here(command_line, settings);
  sdk::FilterVerdict verdict;
  std::exception_ptr error;
  auto task = [&]() noexcept {
    try {
      verdict = judge_here(command_line, settings);
    } catch (...) {
      error = std::current_exception();
    }
  };
  if (!run_on_large_stack(task))
    return sdk::FilterVerdict::deny("patterns-error",
                                    "the command could not be checked (no matcher thread)");
  if (error) std::rethrow_exception(error);
  return verdict;
}

}  // namespace execmcp::plugins::patterns
