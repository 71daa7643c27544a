// execmcp-runner's file calls (kFile): read, write, stat and list done by the runner itself, as
// the container's user, with no shell and no process. Anything but a regular file is refused
// before it is opened for a read or a write, and every open is O_NONBLOCK, so a FIFO swapped in
// after the check cannot block the call either.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "supervision/runner_protocol.hpp"

namespace execmcp::plugins::runner_program {

// Takes the bytes a call answers with (a read's data, a list's entries), in pieces of at most
// kMaxPayload bytes.
using FileEmit = std::function<void(std::string_view)>;

// Does `request` (`input`: a write's bytes) and says how it went. Never throws.
supervision::runner::FileReport do_file_call(const supervision::runner::FileRequest& request,
                                             const std::string& input, const FileEmit& emit);

}  // namespace execmcp::plugins::runner_program
