// Pieces of the support probe the launcher shares (not part of the launcher's contract).
#pragma once

#include <string>

namespace execmcp::plugins::local::sandbox {

// The bubblewrap to run: EXECMCP_BWRAP when set (tests), else the first found of the usual places.
std::string find_bwrap();

}  // namespace execmcp::plugins::local::sandbox
