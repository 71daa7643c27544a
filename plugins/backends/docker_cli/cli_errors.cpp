// Classifies the docker and podman CLIs' error text (docker 20.10 to 28, podman 4.3).
#include "docker_cli/cli_errors.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace execmcp::plugins::docker_cli {
namespace {

using docker_common::EngineError;
using Kind = EngineError::Kind;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool contains(const std::string& haystack_lower, std::string_view needle_lower) {
  return haystack_lower.find(needle_lower) != std::string::npos;
}

std::string_view strip(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The word after `flag` in an ssh command line quoted by the CLI ("[ssh -l user -p 22 -- host").
std::string word_after(std::string_view text, std::string_view flag) {
  const auto at = text.find(flag);
  if (at == std::string_view::npos) return {};
  text.remove_prefix(at + flag.size());
  const auto end = text.find_first_of(" ]");
  return std::string(text.substr(0, end));
}

// What ssh itself said: the text after the CLI's "stderr=".
std::string ssh_words(std::string_view err) {
  const auto at = err.find("stderr=");
  return trimmed_stderr(at == std::string_view::npos ? err : err.substr(at + 7));
}

}  // namespace

std::string trimmed_stderr(std::string_view err) {
  std::string out;
  std::size_t pos = 0;
  while (pos <= err.size()) {
    const std::size_t end = std::min(err.find('\n', pos), err.size());
    std::string_view line = strip(err.substr(pos, end - pos));
    pos = end + 1;
    for (std::string_view prefix : {"Error response from daemon: ", "Error: "})
      if (line.starts_with(prefix)) line.remove_prefix(prefix.size());
    // Warnings the CLI prints on its way (an unreadable config file) are not the failure.
    if (line.empty() || line.starts_with("WARNING:")) continue;
    if (!out.empty()) out += "; ";
    out.append(line);
  }
  if (out.size() > kStderrKept) {
    std::size_t cut = kStderrKept;
    // Back to the start of a UTF-8 character.
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
    out += "...";
  }
  return out;
}

std::string ssh_destination(std::string_view err, std::string_view docker_host) {
  std::string user, host, port;
  // docker quotes its ssh command: "command [ssh [-o ...] -l USER -p PORT -- HOST docker ...]".
  if (const auto cmd = err.find("[ssh "); cmd != std::string_view::npos) {
    const std::string_view line = err.substr(cmd);
    user = word_after(line, " -l ");
    port = word_after(line, " -p ");
    host = word_after(line, " -- ");
  }
  if (host.empty() && docker_host.starts_with("ssh://")) {
    std::string_view rest = docker_host.substr(6);
    rest = rest.substr(0, rest.find('/'));
    if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
      user = std::string(rest.substr(0, at));
      rest.remove_prefix(at + 1);
    }
    if (const auto colon = rest.rfind(':');
        colon != std::string_view::npos && rest.find(']', colon) == std::string_view::npos) {
      port = std::string(rest.substr(colon + 1));
      rest = rest.substr(0, colon);
    }
    host = std::string(rest);
  }
  if (host.empty()) return {};
  return (user.empty() ? "" : user + "@") + host + ":" + (port.empty() ? "22" : port);
}

std::string engine_address(std::string_view err, const CliTarget& target) {
  if (!target.docker_host.empty()) return target.docker_host;
  if (!target.context.empty()) return "context '" + target.context + "'";
  // "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker ..."
  constexpr std::string_view kAt = "Docker daemon at ";
  if (const auto at = err.find(kAt); at != std::string_view::npos) {
    std::string_view rest = err.substr(at + kAt.size());
    rest = rest.substr(0, rest.find_first_of(" \n"));
    while (rest.ends_with('.') || rest.ends_with(':')) rest.remove_suffix(1);
    if (!rest.empty()) return std::string(rest);
  }
  return target.podman ? "its default socket" : "unix:///var/run/docker.sock";
}

EngineError classify_cli_failure(const CliRun& run, const CliTarget& target) {
  if (!run.spawn_error.empty()) return EngineError::of(Kind::kUnreachable, run.spawn_error);
  const std::string said = trimmed_stderr(run.err);
  const std::string err = lower(run.err);
  if (run.timed_out)
    return EngineError::of(Kind::kUnreachable,
                           "the engine at " + engine_address("", target) + " (" + target.describe +
                               ") did not answer in time" +
                               (said.empty() ? std::string() : " (" + said + ")"));
  // ssh, run by the CLI for an ssh:// host, failed: docker quotes its command and what it said.
  if (contains(err, "dial-stdio") || contains(err, "exit status 255") ||
      contains(err, "permission denied (publickey") ||
      contains(err, "host key verification failed")) {
    const std::string dest = ssh_destination(run.err, target.docker_host);
    std::string words = ssh_words(run.err);
    if (contains(err, "permission denied (publickey") || contains(err, "permission denied (")) {
      words = "authentication failed (" + words + ")";
    } else if (contains(err, "host key verification failed")) {
      words = "the host key is not the known one (" + words + ")";
    }
    return EngineError::of(Kind::kUnreachable, "SSH to " + (dest.empty() ? "the engine" : dest) +
                                                   " failed: " + words + " [" + target.describe +
                                                   "]");
  }
  // The same words as docker-api's for the same failures.
  const std::string engine = target.podman ? "Podman" : "Docker";
  if (contains(err, "permission denied") &&
      (contains(err, "daemon socket") || contains(err, "podman socket") || contains(err, ".sock")))
    return EngineError::of(Kind::kUnreachable,
                           "no permission to use the " + engine + " socket at " +
                               engine_address(run.err, target) +
                               ": add this user to the 'docker' group (then log in again) or run "
                               "execmcp as a user that may use the socket (" +
                               said + ")");
  if (contains(err, "cannot connect to the docker daemon") ||
      contains(err, "error during connect") || contains(err, "unable to connect to podman") ||
      contains(err, "cannot connect to podman") || contains(err, "is the docker daemon running"))
    return EngineError::of(
        Kind::kUnreachable,
        "cannot reach " + engine + " at " + engine_address(run.err, target) +
            (target.podman ? ": is its service running? (" : ": is dockerd running? (") + said +
            ")");
  if (contains(err, "context \"") &&
      (contains(err, "does not exist") || contains(err, "not found")))
    return EngineError::of(Kind::kUnreachable,
                           "the docker context of " + target.describe + " does not exist (" + said +
                               "): check docker_context, and DOCKER_CONFIG or HOME in cli_env");
  if (contains(err, "no such image") || contains(err, "image not known"))
    return EngineError::of(Kind::kImageMissing, said);
  if (contains(err, "no such container") || contains(err, "no such object") ||
      contains(err, "no container with name or id") || contains(err, "no such network") ||
      (contains(err, "network") && contains(err, "not found")))
    return EngineError::of(Kind::kNotFound, said);
  if (contains(err, "is not running") || contains(err, "container state improper") ||
      contains(err, "is restarting") || docker_common::says_container_init_gone(err) ||
      contains(err, "container that has stopped"))
    return EngineError::of(Kind::kNotRunning, said);
  if (contains(err, "conflict") || contains(err, "is already in use") ||
      contains(err, "already exists") || contains(err, "already used") ||
      contains(err, "has active endpoints"))
    return EngineError::of(Kind::kConflict, said);
  return EngineError::of(Kind::kOther, said.empty() ? target.describe + " exited with status " +
                                                          std::to_string(run.exit_status) +
                                                          " and said nothing"
                                                    : said);
}

}  // namespace execmcp::plugins::docker_cli
