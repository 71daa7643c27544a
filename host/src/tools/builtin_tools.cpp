// The list of tools execmcp serves.
#include "tools/tool.hpp"

namespace execmcp::host::tools {

std::vector<Tool> make_builtin_tools() {
  std::vector<Tool> tools;
  tools.push_back(make_execute_command_tool());
  tools.push_back(make_read_file_tool());
  tools.push_back(make_write_file_tool());
  tools.push_back(make_read_docstring_tool());
  for (Tool& tool : make_background_shell_tools()) tools.push_back(std::move(tool));
  return tools;
}

}  // namespace execmcp::host::tools
