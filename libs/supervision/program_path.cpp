// See program_path.hpp. Each plugin links this library statically, so the address below lies in
// the calling plugin's own shared library.
#include "program_path.hpp"

#include <dlfcn.h>

#include <filesystem>

namespace execmcp::plugins::supervision {

std::string program_beside_plugin(std::string_view name) {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&program_beside_plugin), &info) == 0 ||
      info.dli_fname == nullptr)
    return std::string(name);
  std::error_code ec;
  auto so = std::filesystem::absolute(info.dli_fname, ec);
  if (ec) so = info.dli_fname;
  return (so.parent_path().parent_path() / name).string();
}

}  // namespace execmcp::plugins::supervision
