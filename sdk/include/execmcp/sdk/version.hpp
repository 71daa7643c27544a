// ABI version of the plugin boundary and the id of the compiler a plugin was built with.
#pragma once

namespace execmcp::sdk {

// Same major required; a plugin's minor must be <= the host's minor (the host may be newer).
// 2.0: ExecutorBackend and CommandFilter end with query_interface() (optional capabilities, the
// last change to their virtual tables); ExecResult::work_dir; PathGrant::protected_paths.
// 2.1: a plugin may export its own settings check (settings_check.hpp).
// 2.2: BackendInit::sandbox_cwd; the optional interface execmcp.sandbox/1 (sandbox_control.hpp).
// 2.3: the optional interface execmcp.network_events/1 (network_events.hpp).
// 2.4: a plugin may export a description of its settings for check-config (settings_check.hpp).
// 2.5: the optional interface execmcp.secret_events/1 (secret_events.hpp).
// How the boundary grows from here: docs/plugin-authoring.md, "Versioning".
inline constexpr unsigned kAbiMajor = 2;
inline constexpr unsigned kAbiMinor = 5;

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
