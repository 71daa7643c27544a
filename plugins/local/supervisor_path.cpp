// See supervisor_path.hpp.
#include "supervisor_path.hpp"

#include <dlfcn.h>

#include <filesystem>

namespace execmcp::plugins::local {

namespace {
constexpr const char* kProgramName = "execmcp-supervisor";
}  // namespace

std::string default_supervisor_path() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&default_supervisor_path), &info) == 0 ||
      info.dli_fname == nullptr)
    return kProgramName;
  std::error_code ec;
  auto so = std::filesystem::absolute(info.dli_fname, ec);
  if (ec) so = info.dli_fname;
  return (so.parent_path().parent_path() / kProgramName).string();
}

}  // namespace execmcp::plugins::local
