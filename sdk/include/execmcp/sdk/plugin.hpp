// The plugin descriptor and the one-line export macros a plugin library uses (built on Boost.DLL).
#pragma once

#include <cstdint>
#include <exception>
#include <string>

#include <boost/dll/alias.hpp>

#include "execmcp/sdk/command_filter.hpp"
#include "execmcp/sdk/executor_backend.hpp"
#include "execmcp/sdk/version.hpp"

namespace execmcp::sdk {

inline constexpr std::uint32_t kDescriptorMagic = 0x434D5845;  // "EXMC"

enum class PluginKind : std::uint32_t { Backend = 1, Filter = 2 };

// The first three fields keep their place in every ABI version, so a host can read them from any
// plugin before it touches anything else.
struct PluginDescriptor {
  std::uint32_t magic;
  std::uint32_t abi_major;
  std::uint32_t abi_minor;
  PluginKind kind;
  const char* name;         // how configs refer to the plugin, e.g. "local"
  const char* version;      // the plugin's own version, e.g. "1.2.0"
  const char* compiler_id;  // kCompilerId of the plugin's build
  const char* description;  // one line
};

// Factories report failure through `error` and return null; they never throw across the boundary.
using BackendFactory = ExecutorBackend*(const BackendInit& init, std::string& error);
using FilterFactory = CommandFilter*(const FilterInit& init, std::string& error);

inline constexpr const char* kDescriptorSymbol = "execmcp_plugin_descriptor";
inline constexpr const char* kBackendFactorySymbol = "execmcp_create_backend";
inline constexpr const char* kFilterFactorySymbol = "execmcp_create_filter";

namespace detail {
template <class Object, class Interface, class Init>
Interface* guarded_create(const Init& init, std::string& error) {
  try {
    return new Object(init);
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown exception";
  }
  return nullptr;
}
}  // namespace detail

}  // namespace execmcp::sdk

#define EXECMCP_DEFINE_PLUGIN_(kind_, Class, Interface, Init, factory_name, plugin_name,          \
                               plugin_version, plugin_description)                                \
  namespace execmcp_plugin_export {                                                               \
  extern const ::execmcp::sdk::PluginDescriptor descriptor;                                       \
  const ::execmcp::sdk::PluginDescriptor descriptor{::execmcp::sdk::kDescriptorMagic,             \
                                                    ::execmcp::sdk::kAbiMajor,                    \
                                                    ::execmcp::sdk::kAbiMinor,                    \
                                                    kind_,                                        \
                                                    plugin_name,                                  \
                                                    plugin_version,                               \
                                                    ::execmcp::sdk::kCompilerId,                  \
                                                    plugin_description};                          \
  ::execmcp::sdk::Interface* factory_name(const ::execmcp::sdk::Init& init, std::string& error) { \
    return ::execmcp::sdk::detail::guarded_create<Class, ::execmcp::sdk::Interface>(init, error); \
  }                                                                                               \
  }                                                                                               \
  BOOST_DLL_ALIAS(execmcp_plugin_export::descriptor, execmcp_plugin_descriptor)                   \
  BOOST_DLL_ALIAS(execmcp_plugin_export::factory_name, factory_name)

// Export `Class` (constructible from `const BackendInit&`; throw from the constructor on bad
// settings) as an executor backend plugin. Use once, at namespace scope, in one .cpp file.
#define EXECMCP_BACKEND_PLUGIN(Class, plugin_name, plugin_version, plugin_description)             \
  EXECMCP_DEFINE_PLUGIN_(::execmcp::sdk::PluginKind::Backend, Class, ExecutorBackend, BackendInit, \
                         execmcp_create_backend, plugin_name, plugin_version, plugin_description)

// Export `Class` (constructible from `const FilterInit&`) as a command filter plugin.
#define EXECMCP_FILTER_PLUGIN(Class, plugin_name, plugin_version, plugin_description)          \
  EXECMCP_DEFINE_PLUGIN_(::execmcp::sdk::PluginKind::Filter, Class, CommandFilter, FilterInit, \
                         execmcp_create_filter, plugin_name, plugin_version, plugin_description)
