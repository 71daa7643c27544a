// The execmcp command line behind main(): parses it and runs the subcommand.
#pragma once

#include <string>
#include <vector>

namespace execmcp::host::cli {

// Runs the command line (argv without the program name); returns the process exit code.
int run(const std::vector<std::string>& argv);

const char* version();

}  // namespace execmcp::host::cli
