// Command-line parsing for the execmcp program (hand-rolled: a handful of subcommands and options).
#include "cli/arguments.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <stdexcept>

namespace execmcp::host::cli {

namespace {

// Options each command accepts; anything else is a usage error.
bool accepts(const std::string& command, const std::string& option) {
  static const std::array<std::pair<const char*, std::array<const char*, 22>>, 4> kOptions = {{
      {"serve",
       {"--config",
        "--agent",
        "--log-level",
        "--audit-file",
        "--max-concurrent",
        "--on-eof",
        "--max-message-bytes",
        "--max-message-values",
        "--max-outbound-bytes",
        "--max-queued-calls",
        "--http",
        "--tls-cert",
        "--tls-key",
        "--start-all",
        "--insecure-no-auth",
        "--max-connections",
        "--max-calls-per-agent",
        "--strict",
        "--max-tasks-per-principal",
        "--max-task-ttl",
        "--max-running-tasks",
        "--task-after"}},
      {"plugins", {"--config", "--log-level"}},
      {"check-config", {"--config", "--log-level", "--strict"}},
      {"exec", {"--config", "--agent", "--log-level", "--audit-file", "--timeout", "--work-dir"}},
  }};
  for (const auto& [name, options] : kOptions) {
    if (command != name) continue;
    return std::find_if(options.begin(), options.end(), [&](const char* known) {
             return known != nullptr && option == known;
           }) != options.end();
  }
  return false;
}

// A whole number of bytes, optionally with a binary suffix (K, M, G: KiB, MiB, GiB), within
// [low, high]; nullopt otherwise.
std::optional<std::size_t> parse_size(const std::string& text, std::size_t low, std::size_t high) {
  if (text.empty() || text.find_first_not_of("0123456789") == 0) return std::nullopt;
  std::size_t used = 0;
  unsigned long long n = 0;
  try {
    n = std::stoull(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const std::string suffix = text.substr(used);
  unsigned long long unit = 1;
  if (suffix == "K" || suffix == "k") {
    unit = 1024ULL;
  } else if (suffix == "M" || suffix == "m") {
    unit = 1024ULL * 1024;
  } else if (suffix == "G" || suffix == "g") {
    unit = 1024ULL * 1024 * 1024;
  } else if (!suffix.empty()) {
    return std::nullopt;
  }
  if (n > high / unit || n * unit < low || n * unit > high) return std::nullopt;
  return static_cast<std::size_t>(n * unit);
}

// Options that take no value.
bool is_flag(const std::string& option) {
  return option == "--start-all" || option == "--insecure-no-auth" || option == "--strict";
}

// The serve options given on the command line (--http changes the defaults of the others).
struct Given {
  bool max_concurrent = false;
  bool max_queued = false;
  bool max_running_tasks = false;
};

// Stores the value of one option that takes one; the usage error, or "".
std::string take_value(Arguments& args, Given& given, const std::string& option,
                       const std::string& value) {
  server::ServeOptions& serve = args.serve;
  if (option == "--config") {
    args.config_file = value;
  } else if (option == "--agent") {
    if (args.agent_id.empty()) args.agent_id = value;
    args.agent_ids.push_back(value);
  } else if (option == "--http") {
    const auto colon = value.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == value.size() ||
        value.find_first_not_of("0123456789", colon + 1) != std::string::npos ||
        value.size() - colon - 1 > 5 || std::stoul(value.substr(colon + 1)) > 65535)
      return "--http needs ADDR:PORT (e.g. 127.0.0.1:8000, 0.0.0.0:8000, [::1]:8000; "
             "port 0 picks a free one), got '" +
             value + "'";
    serve.http_address = value;
  } else if (option == "--tls-cert") {
    serve.tls_cert_file = value;
  } else if (option == "--tls-key") {
    serve.tls_key_file = value;
  } else if (option == "--max-connections") {
    serve.max_connections = parse_size(value, 1, 100000);
    if (!serve.max_connections || value.find_first_not_of("0123456789") != std::string::npos)
      return "--max-connections needs a whole number from 1 to 100000, got '" + value + "'";
  } else if (option == "--max-calls-per-agent") {
    const auto calls = parse_size(value, 1, 4096);
    serve.max_calls_per_agent = calls.value_or(0);
    if (!calls || value.find_first_not_of("0123456789") != std::string::npos)
      return "--max-calls-per-agent needs a whole number from 1 to 4096, got '" + value + "'";
  } else if (option == "--log-level") {
    static const std::array<const char*, 5> kLevels = {"trace", "debug", "info", "warn", "error"};
    if (std::find_if(kLevels.begin(), kLevels.end(),
                     [&](const char* level) { return value == level; }) == kLevels.end())
      return "--log-level must be one of trace, debug, info, warn, error; got '" + value + "'";
    args.log_level = value;
  } else if (option == "--audit-file") {
    args.audit_file = value;
  } else if (option == "--work-dir") {
    args.work_dir = value;
  } else if (option == "--max-concurrent") {
    try {
      std::size_t used = 0;
      const long long n = std::stoll(value, &used);
      if (used != value.size() || n < 1 || n > 1024) throw std::invalid_argument(value);
      serve.session.max_concurrent_calls = static_cast<std::size_t>(n);
      given.max_concurrent = true;
    } catch (const std::exception&) {
      return "--max-concurrent needs a whole number from 1 to 1024, got '" + value + "'";
    }
  } else if (option == "--on-eof") {
    if (value != "cancel" && value != "finish")
      return "--on-eof must be cancel or finish, got '" + value + "'";
    serve.session.finish_calls_on_eof = value == "finish";
  } else if (option == "--max-message-bytes") {
    const auto bytes = parse_size(value, 1024, 1024ULL * 1024 * 1024);
    if (bytes) serve.session.limits.max_bytes = *bytes;
    if (!bytes)
      return "--max-message-bytes needs a size from 1K to 1G (bytes, or with K, M, G), got '" +
             value + "'";
  } else if (option == "--max-message-values") {
    const auto values = parse_size(value, 16, 100'000'000);
    if (values) serve.session.limits.max_values = *values;
    if (!values)
      return "--max-message-values needs a whole number from 16 to 100000000, got '" + value + "'";
  } else if (option == "--max-outbound-bytes") {
    const auto bytes = parse_size(value, 64 * 1024, 4ULL * 1024 * 1024 * 1024);
    if (bytes) serve.session.max_outbound_bytes = *bytes;
    if (!bytes)
      return "--max-outbound-bytes needs a size from 64K to 4G (bytes, or with K, M, G), got '" +
             value + "'";
  } else if (option == "--max-queued-calls") {
    const auto queued = parse_size(value, 0, 4096);
    if (queued) serve.session.max_queued_calls = *queued;
    given.max_queued = true;
    if (!queued || value.find_first_not_of("0123456789") != std::string::npos)
      return "--max-queued-calls needs a whole number from 0 to 4096, got '" + value + "'";
  } else if (option == "--max-tasks-per-principal") {
    const auto tasks = parse_size(value, 1, 100000);
    if (tasks) serve.session.max_tasks_per_principal = *tasks;
    if (!tasks || value.find_first_not_of("0123456789") != std::string::npos)
      return "--max-tasks-per-principal needs a whole number from 1 to 100000, got '" + value + "'";
  } else if (option == "--max-running-tasks") {
    const auto tasks = parse_size(value, 1, 1024);
    if (tasks) serve.session.max_running_tasks = *tasks;
    given.max_running_tasks = true;
    if (!tasks || value.find_first_not_of("0123456789") != std::string::npos)
      return "--max-running-tasks needs a whole number from 1 to 1024, got '" + value + "'";
  } else if (option == "--task-after") {
    const auto ms = parse_size(value, 0, 3600 * 1000);
    if (ms) serve.session.task_after = std::chrono::milliseconds(*ms);
    if (!ms || value.find_first_not_of("0123456789") != std::string::npos)
      return "--task-after needs a whole number of milliseconds from 0 to 3600000, got '" + value +
             "'";
  } else if (option == "--max-task-ttl") {
    const auto seconds = parse_size(value, 1, 7 * 24 * 3600);
    if (seconds) serve.session.max_task_ttl = std::chrono::seconds(*seconds);
    if (!seconds || value.find_first_not_of("0123456789") != std::string::npos)
      return "--max-task-ttl needs a whole number of seconds from 1 to 604800, got '" + value + "'";
  } else if (option == "--timeout") {
    try {
      std::size_t used = 0;
      const double seconds = std::stod(value, &used);
      if (used != value.size() || !(seconds > 0)) throw std::invalid_argument(value);
      args.timeout_seconds = seconds;
    } catch (const std::exception&) {
      return "--timeout needs a number of seconds > 0, got '" + value + "'";
    }
  }
  return {};
}

// The rules between options, once every one is read (and --http's defaults); the usage error,
// or "".
std::string check_together(Arguments& args, std::vector<std::string>& positional,
                           const Given& given) {
  server::ServeOptions& serve = args.serve;
  if (args.command == "check-config" && args.config_file.empty() && positional.size() == 1) {
    args.config_file = positional.front();
    positional.clear();
  }
  if (!positional.empty())
    return "unexpected argument '" + positional.front() + "'" +
           (args.command == "exec" ? " (put the command after --)" : "");
  if (args.massgen) {
    if (!args.config_file.empty() || !args.agent_ids.empty())
      return "--massgen replaces --config and --agent (the agent comes from MassGen's flags); "
             "put execmcp's own options before --massgen";
    if (!serve.http_address.empty())
      return "--massgen serves one agent on stdio, as MassGen's server does; drop --http";
  }
  if (args.config_file.empty() && args.command != "plugins" && !args.massgen)
    return args.command == "check-config" ? "check-config needs a config FILE"
                                          : args.command + " needs --config FILE";
  if (args.command == "exec" && args.exec_command.empty()) return "exec needs a command after --";
  if (args.command == "serve" && serve.http_address.empty()) {
    if (args.agent_ids.size() > 1)
      return "serve over stdio serves one agent; give one --agent, or serve several with "
             "--http ADDR:PORT";
    for (const char* option : {"--tls-cert", "--tls-key"}) {
      const bool present = std::string(option) == "--tls-cert" ? !serve.tls_cert_file.empty()
                                                               : !serve.tls_key_file.empty();
      if (present) return std::string(option) + " needs --http ADDR:PORT";
    }
    if (args.start_all || serve.insecure_no_auth || serve.max_connections ||
        serve.max_calls_per_agent != 0)
      return "--start-all, --insecure-no-auth, --max-connections and --max-calls-per-agent "
             "need --http ADDR:PORT";
  }
  if (serve.tls_cert_file.empty() != serve.tls_key_file.empty())
    return "TLS needs both --tls-cert FILE and --tls-key FILE";
  if (!serve.http_address.empty()) {
    if (!given.max_concurrent)
      serve.session.max_concurrent_calls = server::kHttpDefaultMaxConcurrent;
    if (!given.max_queued) serve.session.max_queued_calls = server::kHttpDefaultMaxQueued;
    if (!given.max_running_tasks)
      serve.session.max_running_tasks = server::kHttpDefaultMaxRunningTasks;
  }
  return {};
}

}  // namespace

std::string usage_text() {
  return R"(usage:
  execmcp serve --config FILE [--agent ID] [--log-level LEVEL] [--audit-file F] [--max-concurrent N]
                [--on-eof cancel|finish] [--max-message-bytes B] [--max-message-values N]
                [--max-outbound-bytes B] [--max-queued-calls N] [--strict]
                [--max-tasks-per-principal N] [--max-task-ttl S] [--max-running-tasks N]
                [--task-after MS]
      Serve one agent over MCP on stdin/stdout. At the end of stdin, calls still running are
      cancelled (MCP's shutdown), or with --on-eof finish run to completion and are answered.
      A message longer than B bytes (default 8M) or with more than N JSON values (default
      10000) is refused; a client that leaves more than B bytes unread (default 64M) is
      disconnected. B takes a K, M or G suffix. Beyond --max-concurrent running calls, N more
      may wait (default 16); one more is answered "server busy". MCP tasks (2025-11-25):
      a principal holds at most N live tasks (default 32); an ended task and its result are
      kept for the TTL the client asked for (default 30 min), at most S seconds (default
      21600) and at least 60 s after its end; at most N tasks run at once (default 8; 64
      with --http), on threads of their own. A 2026-07-28 client that declares the tasks
      extension gets a task for a command still running after --task-after MS (default
      1000; 0: always), a plain answer otherwise.
  execmcp serve --config FILE --http ADDR:PORT [--agent ID]... [--tls-cert F --tls-key F]
                [--start-all] [--insecure-no-auth] [--max-connections N]
                [--max-calls-per-agent N] [the limits above]
      Serve every agent of the config (or each --agent) over MCP Streamable HTTP: agent X at
      http(s)://ADDR:PORT/mcp/X, plus /health, /ready and /metrics. Requests need a bearer token
      or JWT from the config's server: section; with none configured, only a loopback ADDR is
      allowed unless --insecure-no-auth. Each agent's backend starts on its first call (all at
      start with --start-all). --max-concurrent and --max-queued-calls (default 64 each
      here) count over all agents;
      --max-calls-per-agent bounds one agent (429 past it); each user of a per-user agent
      is bounded even without it (per_user.max_calls_per_user, by default a quarter of
      --max-concurrent), and with it by the lower of the two.
  execmcp serve [options above] --massgen [--allowed-paths WORKSPACE [CONTEXT...]]
                [--execution-mode local|docker] [--agent-id A] [--instance-id I] [--enable-sudo]
                [--allowed-commands RE...] [--blocked-commands RE...] [--timeout S]
                [--max-output-size B] [--local-skills-directory D]
      A drop-in for MassGen's code-execution server: everything after --massgen is MassGen's
      flags (argparse syntax). The first allowed path is the workspace, the rest are read-only
      context; docker mode runs in MassGen's container massgen-A[-I].
  execmcp exec --config FILE [--agent ID] [--timeout S] [--work-dir D] -- COMMAND...
      Run one command through the agent's filters and backend; exits with its exit code.
  execmcp check-config [--strict] FILE
      Validate a config (execmcp or MassGen schema) and the settings of its plugins. After OK,
      lists the MassGen keys read but not acted on (model, UI, orchestration ...), each with
      its line and why; --strict (also taken by serve) makes each of them an error.
  execmcp plugins [--config FILE]
      List the plugins found, and the files that could not be loaded.
  execmcp --version | --help

LEVEL is trace, debug, info, warn or error (default: info for serve, warn otherwise).
Logs go to stderr; stdout belongs to MCP.
Plugins are searched in the config's plugin_paths, $EXECMCP_PLUGIN_PATH (colon-separated),
<program dir>/../lib/execmcp/plugins and <program dir>.
)";
}

ParsedArguments parse_arguments(const std::vector<std::string>& argv) {
  ParsedArguments parsed;
  Arguments& args = parsed.arguments;
  auto fail = [&](std::string message) {
    parsed.error = std::move(message);
    return parsed;
  };
  if (argv.empty()) return fail("no command given");
  const std::string& first = argv[0];
  if (first == "--version" || first == "-V" || first == "version") {
    args.command = "version";
    return parsed;
  }
  if (first == "--help" || first == "-h" || first == "help") {
    args.command = "help";
    return parsed;
  }
  if (first != "serve" && first != "plugins" && first != "check-config" && first != "exec")
    return fail("unknown command '" + first + "'");
  args.command = first;

  Given given;
  std::vector<std::string> positional;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    std::string option = argv[i];
    if (option == "--") {
      if (args.command != "exec") return fail("'--' is only used by exec");
      args.exec_command.assign(argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end());
      break;
    }
    if (option == "--massgen" && args.command == "serve") {
      auto flags = parse_massgen_flags(
          std::vector<std::string>(argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end()));
      if (!flags.error.empty()) return fail(flags.error);
      args.massgen = std::move(flags.flags);
      break;
    }
    if (option == "--help" || option == "-h") {
      args.command = "help";
      return parsed;
    }
    if (option.rfind("--", 0) != 0) {
      positional.push_back(option);
      continue;
    }
    std::string value;
    bool has_value = false;
    if (auto eq = option.find('='); eq != std::string::npos) {
      value = option.substr(eq + 1);
      option = option.substr(0, eq);
      has_value = true;
    }
    if (!accepts(args.command, option))
      return fail("unknown option '" + option + "' for " + args.command);
    if (is_flag(option)) {
      if (has_value) return fail("option " + option + " takes no value");
      if (option == "--start-all") args.start_all = true;
      if (option == "--insecure-no-auth") args.serve.insecure_no_auth = true;
      if (option == "--strict") args.strict = true;
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argv.size()) return fail("option " + option + " needs a value");
      value = argv[++i];
    }
    if (std::string error = take_value(args, given, option, value); !error.empty())
      return fail(std::move(error));
  }
  if (std::string error = check_together(args, positional, given); !error.empty())
    return fail(std::move(error));
  return parsed;
}

}  // namespace execmcp::host::cli
