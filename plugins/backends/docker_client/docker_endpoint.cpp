// DOCKER_HOST parsing, engine error messages and API version negotiation.
#include "docker_client/docker_endpoint.hpp"

#include <cctype>
#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace execmcp::plugins::docker_client {

DockerEndpoint parse_docker_host(const std::string& value) {
  DockerEndpoint ep;
  ep.uri = value;
  auto starts = [&](std::string_view p) { return value.rfind(p, 0) == 0; };
  if (starts("unix://")) {
    ep.path = value.substr(7);
  } else if (!value.empty() && value.front() == '/') {
    ep.path = value;
    ep.uri = "unix://" + value;
  } else if (starts("tcp://") || starts("http://")) {
    ep.kind = DockerEndpoint::Kind::Tcp;
    std::string rest = value.substr(value.find("://") + 3);
    if (auto slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
    const auto colon = rest.rfind(':');
    if (colon == std::string::npos) {
      ep.host = rest;
      ep.port = "2375";
    } else {
      ep.host = rest.substr(0, colon);
      ep.port = rest.substr(colon + 1);
    }
    if (ep.host.size() > 2 && ep.host.front() == '[' && ep.host.back() == ']')
      ep.host = ep.host.substr(1, ep.host.size() - 2);
    if (ep.host.empty() || ep.port.empty() ||
        ep.port.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument("docker host '" + value + "': expected tcp://host:port");
    return ep;
  } else {
    throw std::invalid_argument("docker host '" + value +
                                "': expected unix:///path/to/docker.sock or tcp://host:port");
  }
  if (ep.path.empty() || ep.path.front() != '/')
    throw std::invalid_argument("docker host '" + value + "': expected unix:///absolute/path");
  return ep;
}

std::string select_docker_host(const std::string& setting, const char* env_value) {
  if (!setting.empty()) return setting;
  if (env_value != nullptr && *env_value != '\0') return env_value;
  return kDefaultDockerHost;
}

std::string engine_message(int status, std::string_view body) {
  std::string text;
  const auto json = nlohmann::json::parse(body, nullptr, false);
  if (json.is_object() && json.contains("message") && json["message"].is_string())
    text = json["message"].get<std::string>();
  else
    text = std::string(body);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  if (text.empty()) text = "(no message)";
  return "HTTP " + std::to_string(status) + ": " + text;
}

std::string negotiate_api_version(const std::string& server_version, const std::string& ours) {
  unsigned smaj = 0, smin = 0, omaj = 0, omin = 0;
  if (std::sscanf(ours.c_str(), "%u.%u", &omaj, &omin) != 2) return ours;
  if (std::sscanf(server_version.c_str(), "%u.%u", &smaj, &smin) != 2) return ours;
  if (smaj < omaj || (smaj == omaj && smin < omin))
    return std::to_string(smaj) + "." + std::to_string(smin);
  return ours;
}

std::string url_encode(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

}  // namespace execmcp::plugins::docker_client
