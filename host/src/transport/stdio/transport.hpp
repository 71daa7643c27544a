// The transport seam: how the MCP session reads and writes newline-delimited JSON-RPC messages.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace execmcp::host::mcp {

class Transport {
 public:
  virtual ~Transport() = default;

  // Blocks for the next message line (without its newline). nullopt: end of input, a read error,
  // or close() was called.
  virtual std::optional<std::string> read_line() = 0;

  // Writes one message followed by a newline, atomically with respect to other writers. Thread
  // safe, but the session calls it from one thread only (its Outbox's writer), because it may
  // block for as long as the peer does not read. Returns false once the peer is gone or after
  // abort_writes(); later writes then fail fast.
  virtual bool write_line(std::string_view message) = 0;

  // Makes a write_line() blocked on a peer that does not read return false now, and every later
  // one at once (from any thread): shutdown never waits on a stalled peer.
  virtual void abort_writes() = 0;

  // Writes the message and its newline now if that cannot block (it is small and the peer has
  // room); false: nothing was written, use write_line(). Lets a short response skip the hop to
  // the writer thread. Thread safe.
  virtual bool try_write_line(std::string_view /*message*/) { return false; }

  // Ends input: wakes a blocked read_line() (from any thread). Writes stay possible so responses
  // to calls still running can be delivered during shutdown.
  virtual void close() = 0;
};

}  // namespace execmcp::host::mcp
