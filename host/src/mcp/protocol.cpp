// MCP revision negotiation: initialize for the handshake revisions, _meta for the stateless one.
#include "mcp/protocol.hpp"

#include "common/utf8.hpp"

namespace execmcp::host::mcp::protocol {

using nlohmann::json;

std::string negotiate_handshake(std::string_view requested) {
  for (const char* version : kHandshakeVersions) {
    if (requested == version) return version;
  }
  return kHandshakeVersions[0];
}

bool is_supported(std::string_view version) {
  for (const char* known : kAllVersions) {
    if (version == known) return true;
  }
  return false;
}

json supported_versions_json() {
  json list = json::array();
  for (const char* version : kAllVersions) list.push_back(version);
  return list;
}

MetaError unsupported_version_error(std::string_view requested) {
  const std::string shown = sanitize_utf8(std::string(requested.substr(0, 64)));
  return MetaError{RpcError{kUnsupportedProtocolVersion,
                            "Unsupported protocol version '" + shown +
                                "' (supported: " + supported_versions_json().dump() + ")",
                            json{{"supported", supported_versions_json()}, {"requested", shown}}}};
}

MetaOutcome read_request_meta(const json& params) {
  if (!params.is_object()) return NoMeta{};
  const auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) return NoMeta{};
  const auto version = meta->find(kMetaProtocolVersion);
  if (version == meta->end()) return NoMeta{};
  if (!version->is_string()) {
    return MetaError{RpcError{
        rpc_error::kInvalidParams,
        std::string("Invalid params: _meta['") + kMetaProtocolVersion + "'] must be a string"}};
  }
  const std::string& text = version->get_ref<const std::string&>();
  if (text != kStateless) return unsupported_version_error(text);
  const auto capabilities = meta->find(kMetaClientCapabilities);
  if (capabilities == meta->end() || !capabilities->is_object()) {
    return MetaError{RpcError{rpc_error::kInvalidParams,
                              std::string("Invalid params: missing _meta['") +
                                  kMetaClientCapabilities + "'] (an object; {} for none)"}};
  }
  StatelessMeta out{text, {}};
  if (const auto extensions = capabilities->find("extensions");
      extensions != capabilities->end() && extensions->is_object()) {
    const auto tasks = extensions->find("io.modelcontextprotocol/tasks");
    out.tasks_extension = tasks != extensions->end() && tasks->is_object();
  }
  if (const auto info = meta->find(kMetaClientInfo); info != meta->end() && info->is_object()) {
    out.client =
        sanitize_utf8(string_member(*info, "name") + " " + string_member(*info, "version"));
  }
  return out;
}

}  // namespace execmcp::host::mcp::protocol
