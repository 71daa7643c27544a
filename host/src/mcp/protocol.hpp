// The MCP revisions execmcp speaks and how a request says which one it uses.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "mcp/json_rpc.hpp"

namespace execmcp::host::mcp::protocol {

// The stateless revision: no handshake, the revision and the client's capabilities in every
// request's _meta.
inline constexpr const char* kStateless = "2026-07-28";
// Revisions with the initialize handshake, newest first; initialize never negotiates kStateless.
inline constexpr const char* kHandshakeVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                     "2024-11-05"};
// Every revision, newest first (what server/discover lists).
inline constexpr const char* kAllVersions[] = {kStateless, "2025-11-25", "2025-06-18", "2025-03-26",
                                               "2024-11-05"};

// 2026-07-28's error codes.
inline constexpr int kHeaderMismatch = -32020;
inline constexpr int kMissingRequiredClientCapability = -32021;
inline constexpr int kUnsupportedProtocolVersion = -32022;

// Keys of a 2026-07-28 request's params._meta (and of a result's _meta).
inline constexpr const char* kMetaProtocolVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr const char* kMetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities";
inline constexpr const char* kMetaClientInfo = "io.modelcontextprotocol/clientInfo";
inline constexpr const char* kMetaServerInfo = "io.modelcontextprotocol/serverInfo";

// Whether `version` (a revision date) is `since` or later. Revision names sort as dates.
[[nodiscard]] inline bool at_least(std::string_view version, std::string_view since) {
  return version >= since;
}

// The revision an initialize request's protocolVersion negotiates to: the same one when we speak
// it, else our newest handshake revision (the client then decides whether it can go on).
[[nodiscard]] std::string negotiate_handshake(std::string_view requested);

[[nodiscard]] bool is_supported(std::string_view version);
[[nodiscard]] nlohmann::json supported_versions_json();

// What a request's params._meta says about the revision it uses.
struct StatelessMeta {
  std::string version;  // as sent
  std::string client;   // "name version" from clientInfo, when present
  // clientCapabilities.extensions lists io.modelcontextprotocol/tasks.
  bool tasks_extension = false;
};
struct NoMeta {};  // no revision in _meta: a handshake-era request
// The request names a revision in _meta, but not one we serve statelessly, or its _meta lacks
// what that revision requires: answer with this error (-32022 lists what we support; -32602).
struct MetaError {
  RpcError error;
};
using MetaOutcome = std::variant<NoMeta, StatelessMeta, MetaError>;

[[nodiscard]] MetaOutcome read_request_meta(const nlohmann::json& params);

// -32022 with data {supported, requested}.
[[nodiscard]] MetaError unsupported_version_error(std::string_view requested);

}  // namespace execmcp::host::mcp::protocol
