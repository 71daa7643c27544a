// Where the local backend finds its execmcp-supervisor program.
#pragma once

#include <string>

#include "supervision/program_path.hpp"

namespace execmcp::plugins::local {

inline std::string default_supervisor_path() {
  return supervision::program_beside_plugin("execmcp-supervisor");
}

}  // namespace execmcp::plugins::local
