// The execmcp program's entry point: the command line (cli/commands.hpp) does the rest.
#include <string>
#include <vector>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return execmcp::host::cli::run(args);
}
