// The read_docstring tool: reads a function's docstring from a Python module in the tools dir,
// by parsing the source with `ast` inside the agent's sandbox (the module is never imported).
#include <regex>
#include <sstream>
#include <variant>

#include "common/bounded_json.hpp"
#include "common/utf8.hpp"
#include "tools/read_docstring_command.hpp"
#include "tools/tool.hpp"
#include "tools/tool_arguments.hpp"

namespace execmcp::host::tools {
namespace {

using nlohmann::json;

// Runs as `python3 -c SCRIPT TOOLS_DIR MODULE FUNCTION`; prints one JSON object.
// The module is located with PathFinder one package level at a time, which, unlike
// importlib.util.find_spec on a dotted name, never imports (and so never runs) a parent package.
constexpr const char* kScript = R"PY(
import ast, json, sys
from importlib.machinery import PathFinder
tools_dir, module, function = sys.argv[1:4]
def reply(**fields):
    print(json.dumps(fields))
    sys.exit(0)
search = ([tools_dir] if tools_dir else []) + [p for p in sys.path if p]
spec = None
for part in module.split("."):
    spec = PathFinder.find_spec(part, search)
    if spec is None:
        reply(ok=False, error="module %r not found (searched the tools dir and sys.path)" % module)
    search = list(spec.submodule_search_locations or [])
origin = spec.origin
if not origin or not origin.endswith(".py"):
    reply(ok=False, error="module %r has no Python source file (%s)" % (module, origin))
try:
    with open(origin, "rb") as f:
        tree = ast.parse(f.read(), filename=origin)
except (OSError, SyntaxError, ValueError) as e:
    reply(ok=False, error="cannot parse %s: %s" % (origin, e))
scope = tree.body
node = None
kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
for name in function.split("."):
    node = next((n for n in scope if isinstance(n, kinds) and n.name == name), None)
    if node is None:
        reply(ok=False, error="%r not found in module %r (%s)" % (function, module, origin))
    scope = node.body
reply(ok=True, docstring=ast.get_docstring(node), path=origin)
)PY";

const std::regex kModulePattern(R"(^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$)");
const std::regex kFunctionPattern(R"(^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$)");

json input_schema() {
  return json::parse(R"({
    "type": "object",
    "properties": {
      "module": {"type": "string", "description": "Dotted module name, e.g. 'mytools.web' (looked up in the tools directory first)."},
      "function": {"type": "string", "description": "Function name, or 'Class.method'."}
    },
    "required": ["module", "function"],
    "additionalProperties": false
  })");
}

json output_schema() {
  return json::parse(R"({
    "type": "object",
    "properties": {
      "module": {"type": "string"},
      "function": {"type": "string"},
      "docstring": {"type": "string", "description": "Empty when the function has none."}
    },
    "required": ["module", "function", "docstring"]
  })");
}

ToolOutcome run(const json& arguments, ToolContext& context) {
  ToolArguments args(arguments, {"module", "function"});
  const std::string module = args.required_string("module");
  const std::string function = args.required_string("function");
  if (!args.error() && !std::regex_match(module, kModulePattern)) {
    args.fail("argument 'module' must be a dotted Python module name like 'pkg.mod'");
  }
  if (!args.error() && !std::regex_match(function, kFunctionPattern)) {
    args.fail("argument 'function' must be a Python name like 'func' or 'Class.method'");
  }
  if (args.error()) return ArgumentError{*args.error()};

  const sdk::BackendTraits traits = context.agent.traits();
  const std::string command =
      build_read_docstring_command(traits.python, traits.tools_dir, module, function);
  const sdk::ExecResult result =
      context.agent.run_internal(command, context.cancel, context.principal);
  const std::string what = function + " in " + module;
  if (!result.error.empty()) {
    return ToolResult{"Cannot read the docstring of " + what + ": " + sanitize_utf8(result.error),
                      nullptr, true};
  }
  if (result.cancelled || result.timed_out) {
    return ToolResult{"Reading the docstring of " + what + " was " +
                          (result.cancelled ? "cancelled" : "timed out"),
                      nullptr, true};
  }
  const DocstringLookup lookup = parse_read_docstring_output(result);
  if (!lookup.error.empty()) {
    return ToolResult{"Cannot read the docstring of " + what + ": " + lookup.error, nullptr, true};
  }
  const std::string docstring = sanitize_utf8(lookup.docstring);
  return ToolResult{
      docstring.empty() ? what + " has no docstring" : docstring,
      json{{"module", module}, {"function", function}, {"docstring", docstring}},
      false,
  };
}

}  // namespace

std::string build_read_docstring_command(std::string_view python, std::string_view tools_dir,
                                         std::string_view module, std::string_view function) {
  std::string command = shell_quote(python.empty() ? "python3" : python);
  // -I: isolated mode, so PYTHON* variables and the cwd cannot change which module is parsed.
  command += " -I -c ";
  command += shell_quote(kScript);
  for (std::string_view arg : {tools_dir, module, function}) {
    command += ' ';
    command += shell_quote(arg);
  }
  return command;
}

DocstringLookup parse_read_docstring_output(const sdk::ExecResult& result) {
  // The script prints exactly one JSON line; take the last non-empty line of stdout.
  std::string_view out = result.stdout_data;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.remove_suffix(1);
  const auto newline = out.rfind('\n');
  const std::string_view last = newline == std::string_view::npos ? out : out.substr(newline + 1);
  // The helper's output is the agent's to shape (its Python environment runs it): parse it with
  // the same bounds as a client's message, never the unbounded recursive parser.
  auto parsed = parse_bounded_json(last, JsonLimits{});
  const json reply =
      std::holds_alternative<json>(parsed) ? std::move(std::get<json>(parsed)) : json();
  if (!reply.is_object() || !reply.contains("ok")) {
    std::string detail =
        sanitize_utf8(result.stderr_data.empty() ? result.stdout_data : result.stderr_data);
    if (detail.size() > 2000) detail = detail.substr(0, 2000) + "...";
    return DocstringLookup{
        {},
        "the Python helper failed (exit code " + std::to_string(result.exit_code) + "): " + detail};
  }
  if (reply["ok"] != true) {
    return DocstringLookup{{}, reply.value("error", std::string("unknown error"))};
  }
  const json& doc = reply["docstring"];
  return DocstringLookup{doc.is_string() ? doc.get<std::string>() : std::string(), {}};
}

Tool make_read_docstring_tool() {
  return Tool{
      "read_docstring",
      "Read docstring",
      "Read the docstring of a function (or Class.method) in a Python module from the tools "
      "directory, without importing or running the module.",
      input_schema(),
      output_schema(),
      run,
  };
}

}  // namespace execmcp::host::tools
