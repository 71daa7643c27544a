// The validated, immutable configuration of an execmcp process: its agents and where plugins live.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace execmcp::host {

// Where a value came from, so errors found later (plugin settings) can still name the line.
struct SourceLocation {
  std::string file;
  int line = 0;  // 1-based; 0 when unknown
  [[nodiscard]] std::string str() const;
};

// Where one setting was written: the line and key a problem with it is reported at.
struct SettingSource {
  SourceLocation location;
  std::string key_path;  // "agents[0].filters[1].settings.deny[1]", "--allowed-commands"
};

// A plugin named in the config with the settings it will parse itself.
struct PluginRef {
  std::string plugin;                                  // descriptor name: "local", "sanitize"
  nlohmann::json settings = nlohmann::json::object();  // always an object
  std::string key_path;                                // e.g. "agents[0].filters[1].settings"
  SourceLocation location;         // of the settings node (or of the plugin entry when it has none)
  std::string plugin_key_path;     // where the plugin is named, e.g. "agents[0].backend.plugin"
  SourceLocation plugin_location;  // for "no plugin named ..." errors
  // Where each setting was written, by JSON pointer into `settings` ("/deny/1"), as far as the
  // reader recorded it (a MassGen key that became a setting names the MassGen key).
  std::map<std::string, SettingSource> setting_sources;

  // Where a plugin's problem at `pointer` is reported: the recorded source of the pointer or of
  // the nearest setting that holds it, else the settings node itself.
  [[nodiscard]] SettingSource source_of(const std::string& pointer) const;
};

struct ContextPath {
  std::string path;  // absolute, expanded
  bool writable = false;
  // Absolute paths at or under `path` that stay read-only although the context is writable
  // (MassGen's context_paths[].protected_paths); each existed when the config was loaded.
  std::vector<std::string> protected_paths;
};

// `background:` on an agent: its background shells (MassGen's tools), where the backend offers
// them.
struct BackgroundConfig {
  bool enabled = true;
  std::size_t max_running = 10;            // running at once per agent (MassGen's limit)
  std::size_t max_output_lines = 10000;    // complete lines kept per stream (MassGen's deque)
  std::size_t max_output_bytes = 1 << 20;  // bytes kept per stream; the first bound reached evicts
  std::size_t max_retained = 20;           // finished shells kept for reading, oldest evicted
  std::chrono::milliseconds kill_grace{std::chrono::seconds(5)};  // SIGTERM to SIGKILL
};

// `per_user:` of a native agent: each authenticated HTTP user gets their own sandbox of it.
struct PerUserConfig {
  // Absolute; a user's workspace on the host is <workspace_root>/<user key>, seen as /workspace.
  std::string workspace_root;
  std::size_t max_users = 100;  // sandboxes at once (running or stopped)
  std::chrono::milliseconds idle_stop{std::chrono::seconds(600)};      // without a call: stopped
  std::chrono::milliseconds idle_remove{std::chrono::seconds(86400)};  // stopped: removed
  std::size_t warm = 0;  // containers made ahead of time, claimed by new users
  // A user's calls running or waiting at once; 0: a quarter of the server's workers
  // (McpService::kUserShareOfWorkers).
  std::size_t max_calls_per_user = 0;
  SourceLocation location;
};

struct AgentConfig {
  std::string id;
  std::string cwd;  // absolute, expanded; empty when mcp_enabled is false or per_user is set
  PluginRef backend;
  std::vector<PluginRef> filters;  // in chain order
  std::vector<ContextPath> context_paths;
  std::string tools_dir;  // absolute; defaults to <cwd>/tools
  std::string skills_dir;
  std::string temp_workspace;
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  std::chrono::milliseconds max_timeout{std::chrono::seconds(600)};
  std::size_t output_cap = 1024 * 1024;
  BackgroundConfig background;
  // Set: the entry is a template, one sandbox per user (cwd is refused then).
  std::optional<PerUserConfig> per_user;
  // MassGen's enable_mcp_command_line; always true for native configs.
  bool mcp_enabled = true;
  std::string key_path;  // "agents[0]" or "agent"
  SourceLocation location;
};

enum class ConfigSchema { Native, MassGen };

// The SHA-256 of a bearer token: all the server keeps of it (the token itself is never stored).
using TokenDigest = std::array<unsigned char, 32>;
// SHA-256 of `text` (OpenSSL EVP); shared by the loader and the authenticator.
TokenDigest sha256_digest(std::string_view text);
// A digest as 64 lower-case hex digits, as `sha256sum` prints it and `sha256:` takes it.
std::string digest_hex(const TokenDigest& digest);

// A static bearer token of `server.tokens`.
struct TokenConfig {
  std::string name;  // safe alphabet like agent ids; the only thing logs and metrics show
  TokenDigest sha256{};
  std::vector<std::string> agents;  // agent ids, or {"*"} for every agent
  SourceLocation location;
};

// `server.oauth`: this server as an OAuth 2.1 resource server that accepts JWT access tokens.
struct OAuthConfig {
  std::string issuer;                              // exact `iss`
  std::string audience;                            // expected `aud`; defaults to public_url
  std::string keys_file;                           // absolute; a JWKS or a PEM public key
  std::string agents_claim = "execmcp_agents";     // claim listing the allowed agent ids
  std::vector<std::string> authorization_servers;  // RFC 9728; defaults to {issuer}
  SourceLocation location;
};

// `server:`: what the shared HTTP server needs (origins, who may call which agent).
struct ServerConfig {
  std::vector<std::string> allowed_origins;  // besides loopback; "scheme://host[:port]"
  std::vector<std::string> allowed_hosts;    // Host values besides loopback; "host[:port]"
  bool allow_local_agents = false;           // local-backend agents in --http mode
  std::string public_url;                    // without a trailing slash; may be empty
  std::vector<TokenConfig> tokens;
  std::optional<OAuthConfig> oauth;
  // Environment variables that held tokens: the serve command unsets them once it has loaded the
  // config, so commands of local agents (which inherit the environment) cannot read them.
  std::vector<std::string> secret_env;
  SourceLocation location;
};

// A key of a MassGen config that execmcp read but does not act on (listed by check-config; an
// error with --strict), so nothing a config asks for is dropped without a word.
struct IgnoredKey {
  SourceLocation location;
  std::string key_path;  // e.g. "agents[0].backend.model"
  std::string why;       // "MassGen orchestration", "MassGen UI", "model/LLM backend", ...
  [[nodiscard]] std::string str() const;  // "file:line: key.path (why)"
};

struct Config {
  std::string source_file;  // absolute
  ConfigSchema schema = ConfigSchema::Native;
  std::vector<std::string> plugin_paths;  // absolute
  std::string log_dir;
  std::string audit_file;
  std::vector<AgentConfig> agents;
  std::optional<ServerConfig> server;  // native schema only
  std::vector<std::string> warnings;   // worth telling the operator, not fatal
  std::vector<IgnoredKey> ignored;     // MassGen keys read but not acted on; native: always empty

  // Returns the agent named `id`, or the only agent when `id` is empty; throws ConfigError.
  [[nodiscard]] const AgentConfig& select_agent(const std::string& id) const;
};

// One or more problems found while loading; what() lists them one per line, each as
// "file:line: key.path: message".
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(std::vector<std::string> problems);
  [[nodiscard]] const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::vector<std::string> problems_;
};

// Reads and validates a config file (native `execmcp: 1` schema or MassGen-compatible).
std::shared_ptr<const Config> load_config(const std::string& path);
// Same, from text; `path` is used for messages and to resolve relative paths.
std::shared_ptr<const Config> load_config_text(const std::string& text, const std::string& path);

const char* schema_name(ConfigSchema schema);

}  // namespace execmcp::host
