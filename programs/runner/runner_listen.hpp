// execmcp-runner's listen mode (supervision/runner_auth.hpp): the runner of a sandbox reached over
// the network. It listens on TCP; a peer that completes the key handshake gets the channel (the
// same frames as over stdin/stdout), one at a time; a newer authenticated connection replaces the
// live one (whose calls are then killed, as when a pipe's channel ends). A peer that does not
// complete it gets nothing but the runner's handshake bytes, and costs one line on stderr.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace execmcp::plugins::runner_program {

struct ListenOptions {
  std::uint16_t port = 0;
  std::string key_file;
  std::string bind_address = "0.0.0.0";
};

// Parses the listen mode's arguments at argv[1..]; `next` is the index of the first argument
// after them. False when argv[1] and argv[2] are not the listen mode's (or are malformed).
bool parse_listen_args(int argc, char** argv, ListenOptions& options, int& next);

// Reads the key, makes the process not dumpable and without new privileges, listens, and runs
// `serve(fd)` on each authenticated connection in turn (the fd is a socket both ways; serve
// returns when it ends or is shut down). Returns only on a setup failure: 2, with a line on stderr.
int listen_main(const ListenOptions& options, const std::function<void(int)>& serve);

}  // namespace execmcp::plugins::runner_program
