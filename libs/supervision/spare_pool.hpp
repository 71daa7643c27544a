// The spare pool: the C-library-only half of command supervision (see spare_pool.cpp). Both the
// local backend's execmcp-supervisor and the in-container execmcp-runner run it.
#pragma once

namespace execmcp::plugins::supervision {

// True when a program was started as a spare pool (argv[1] is the protocol's marker argument).
bool is_spare_pool_invocation(int argc, char** argv) noexcept;

// Serves supervisor_protocol.hpp's socket (fd kSocketFd) until its peer closes it; returns the
// process's exit code. Refuses (exit code 2, with a message on stderr) when started any other way.
int spare_pool_main(int argc, char** argv) noexcept;

}  // namespace execmcp::plugins::supervision
