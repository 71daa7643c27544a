// libFuzzer target: one line of input through the JSON-RPC framing and dispatch table, with
// handlers that copy, echo and serialise what the client sent, as the session's handlers do.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "mcp/json_rpc.hpp"

using execmcp::host::mcp::Dispatcher;
using execmcp::host::mcp::Request;
using execmcp::host::mcp::Responder;
using execmcp::host::mcp::RpcOutcome;
using execmcp::host::mcp::serialize_message;

namespace {

std::size_t g_sent = 0;

Dispatcher& dispatcher() {
  static Dispatcher* d = [] {
    spdlog::set_level(spdlog::level::off);
    auto* made = new Dispatcher([](const nlohmann::json& message) {
      g_sent += serialize_message(message).size();  // every response must serialise
    });
    made->on_request("ping", [](const Request&) -> RpcOutcome { return nlohmann::json::object(); });
    made->on_request("echo", [](const Request& request) -> RpcOutcome {
      return nlohmann::json{{"params", request.params}};
    });
    made->on_deferred_request("tools/call", [](Request request, Responder responder) {
      responder.reply(nlohmann::json{{"content", request.params}});
    });
    made->on_notification("notifications/cancelled", [](const auto&) {});
    return made;
  }();
  return *d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dispatcher().handle_line(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
