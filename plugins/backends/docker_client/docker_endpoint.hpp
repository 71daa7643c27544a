// Where the Docker engine is (DOCKER_HOST forms) and how its HTTP answers read as messages.
#pragma once

#include <string>
#include <string_view>

namespace execmcp::plugins::docker_client {

inline constexpr const char* kDefaultDockerHost = "unix:///var/run/docker.sock";
// The highest Engine API version this client speaks; a newer engine is asked for this one.
inline constexpr const char* kMaxApiVersion = "1.41";

struct DockerEndpoint {
  enum class Kind { Unix, Tcp };
  Kind kind = Kind::Unix;
  std::string path;  // Unix
  std::string host;  // Tcp
  std::string port;  // Tcp
  std::string uri;   // as given, for messages
};

// Accepts unix:///path, /path, tcp://host:port (http:// too). Throws std::invalid_argument.
DockerEndpoint parse_docker_host(const std::string& value);

// The setting if non-empty, else $DOCKER_HOST if non-empty, else the default socket.
std::string select_docker_host(const std::string& setting, const char* env_value);

// The engine's error text: the "message" of a JSON body when present, else the raw body.
std::string engine_message(int status, std::string_view body);

// min(server, ours) of two "major.minor" versions; ours when the server's is unparsable.
std::string negotiate_api_version(const std::string& server_version,
                                  const std::string& ours = kMaxApiVersion);

// A path segment or query value for the Engine API: RFC 3986 unreserved characters as they are,
// every other byte %XX.
std::string url_encode(std::string_view s);

}  // namespace execmcp::plugins::docker_client
