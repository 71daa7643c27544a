// ABI version of the plugin boundary and the id of the compiler a plugin was built with.
#pragma once

namespace execmcp::sdk {

// Same major required; a plugin's minor must be <= the host's minor (the host may be newer).
inline constexpr unsigned kAbiMajor = 1;
// 1.1: FileReadRequest and FileWriteRequest end with a cancel token (appended, so a 1.0 plugin
// reads the prefix it knows).
inline constexpr unsigned kAbiMinor = 1;

#define EXECMCP_SDK_STRINGIFY_(x) #x
#define EXECMCP_SDK_STRINGIFY(x) EXECMCP_SDK_STRINGIFY_(x)

#if defined(__clang__)
inline constexpr const char* kCompilerId =
    "clang-" EXECMCP_SDK_STRINGIFY(__clang_major__) "." EXECMCP_SDK_STRINGIFY(__clang_minor__);
#elif defined(__GNUC__)
inline constexpr const char* kCompilerId =
    "gcc-" EXECMCP_SDK_STRINGIFY(__GNUC__) "." EXECMCP_SDK_STRINGIFY(__GNUC_MINOR__);
#else
inline constexpr const char* kCompilerId = "unknown";
#endif

}  // namespace execmcp::sdk
