// The one rule for whether a plugin's ABI version can be loaded, and the words for a refusal;
// shared by the host's plugin registry and the conformance kit's loader.
#pragma once

#include <string>

#include "execmcp/sdk/version.hpp"

namespace execmcp::sdk {

// "" when a plugin built for `major.minor` can be loaded by this SDK version, else why not and what
// to do, in one sentence or two (the caller prefixes the file).
inline std::string abi_refusal(unsigned major, unsigned minor) {
  const std::string ours = std::to_string(kAbiMajor) + "." + std::to_string(kAbiMinor);
  const std::string found = std::to_string(major) + "." + std::to_string(minor);
  if (major == kAbiMajor && minor <= kAbiMinor) return "";
  const std::string expected =
      "incompatible plugin ABI: expected " + ours + " (major " + std::to_string(kAbiMajor) +
      ", minor <= " + std::to_string(kAbiMinor) + "), found " + found + "; ";
  if (major < kAbiMajor)
    return expected + "plugin ABI " + found + " is no longer supported: the major version must " +
           "match (2.0 added optional capabilities through query_interface; see " +
           "docs/plugin-authoring.md, Versioning). Rebuild the plugin against execmcp SDK " + ours +
           "; a plugin that compiled against SDK 1.x needs no source change.";
  if (major > kAbiMajor)
    return expected + "the major version must match. Rebuild the plugin against execmcp SDK " +
           ours + " or use an execmcp that matches it.";
  return expected + "the plugin needs a newer host (plugin minor must be <= host minor). " +
         "Rebuild the plugin against execmcp SDK " + ours + " or use an execmcp that matches it.";
}

}  // namespace execmcp::sdk
