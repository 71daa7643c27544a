// A channel to an execmcp-runner that listens on the network (its listen mode, programs/runner):
// a TCP connection, the key handshake of supervision/runner_auth.hpp, and the socket handed over
// as ChannelEnds::raw, to a RunnerChannel like any other. The seam of a backend whose sandboxes
// are reached over a network (docker-swarm, later a Kubernetes pod); no backend uses it yet.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "runner_client/runner_channel.hpp"
#include "supervision/runner_auth.hpp"

namespace execmcp::plugins::runner_client {

struct RunnerAddress {
  std::string host;  // an address or a name
  std::uint16_t port = 0;
  std::string peer;  // how errors name it ("the sandbox's runner"); host:port when empty
};

struct TransportError {
  enum class Kind {
    kNone,
    kUnreachable,  // no connection, or no answer in time: not up yet, or its node is gone
    kRefused,      // the handshake failed: a wrong key, or not that sandbox's runner
    kProtocol,     // not an execmcp runner, or another version of the handshake
  };
  Kind kind = Kind::kNone;
  std::string message;  // never holds the key
};

// Connects and authenticates within `timeout` (connection and handshake together). The ends
// belong to the caller's RunnerChannel, which then reads the runner's hello as over a pipe.
std::optional<ChannelEnds> connect_runner(const RunnerAddress& at,
                                          const supervision::runner_auth::RunnerKey& key,
                                          std::chrono::milliseconds timeout, TransportError& error);

}  // namespace execmcp::plugins::runner_client
