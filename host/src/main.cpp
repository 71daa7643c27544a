// The execmcp program's entry point: the CLI, wired to the MCP stdio server and the HTTP server.
#include <string>
#include <vector>

#include "cli/commands.hpp"

#if defined(EXECMCP_HAVE_MCP) && __has_include("transport/stdio/stdio_server.hpp")
#include "transport/stdio/stdio_server.hpp"
#define EXECMCP_WITH_MCP 1
#endif
#if defined(EXECMCP_HAVE_HTTP) && __has_include("server/http_serve.hpp")
#include "server/http_serve.hpp"
#define EXECMCP_WITH_HTTP 1
#endif

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  execmcp::host::cli::ServeFunction serve;
#ifdef EXECMCP_WITH_MCP
  serve = [](execmcp::host::ConfiguredAgent& agent,
             const execmcp::host::cli::ServeRequest& request) {
    execmcp::host::mcp::ServerOptions options;
    options.server_version = request.server_version;
    options.max_concurrent_calls = request.max_concurrent;
    options.finish_calls_on_eof = request.finish_calls_on_eof;
    if (request.max_message_bytes) options.limits.max_bytes = *request.max_message_bytes;
    if (request.max_message_values) options.limits.max_values = *request.max_message_values;
    if (request.max_outbound_bytes) options.max_outbound_bytes = *request.max_outbound_bytes;
    if (request.max_queued_calls) options.max_queued_calls = *request.max_queued_calls;
    return execmcp::host::mcp::serve_stdio(agent, options);
  };
#endif
  execmcp::host::cli::HttpServeFunction serve_http;
#ifdef EXECMCP_WITH_HTTP
  serve_http = &execmcp::host::server::serve_http;
#endif
  return execmcp::host::cli::run(args, serve, serve_http);
}
