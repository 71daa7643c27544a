// Where the local backend finds its execmcp-supervisor program.
#pragma once

#include <string>

namespace execmcp::plugins::local {

// `<dir of the plugin .so>/../execmcp-supervisor`: lib/execmcp/ in the build and install trees.
std::string default_supervisor_path();

}  // namespace execmcp::plugins::local
