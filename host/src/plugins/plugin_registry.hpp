// Finds execmcp plugins (shared libraries), checks their ABI, and creates filters and backends.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/dll/shared_library.hpp>

#include "execmcp/sdk/plugin.hpp"
#include "execmcp/sdk/settings_check.hpp"

namespace execmcp::host {

// Deletes a plugin-made object, keeping its library loaded until the object is gone.
template <class T>
class PluginDeleter {
 public:
  PluginDeleter() = default;
  explicit PluginDeleter(std::shared_ptr<boost::dll::shared_library> library)
      : library_(std::move(library)) {}
  void operator()(T* object) const noexcept {
    try {
      delete object;
    } catch (...) {  // a throwing destructor in a plugin must not take the host down
    }
  }

 private:
  std::shared_ptr<boost::dll::shared_library> library_;
};

template <class T>
using PluginPtr = std::unique_ptr<T, PluginDeleter<T>>;

// Adopts an in-process object (tests, built-in fakes) with no library behind it.
template <class T, class U>
PluginPtr<T> adopt_plugin_object(std::unique_ptr<U> object) {
  return PluginPtr<T>(object.release(), PluginDeleter<T>());
}

struct PluginInfo {
  std::string name;
  sdk::PluginKind kind = sdk::PluginKind::Backend;
  std::string version;
  std::string description;
  std::string compiler_id;
  unsigned abi_major = 0;
  unsigned abi_minor = 0;
  std::string file;  // absolute path of the library
};

// Thrown by create_*; the message names the plugin, its file and what went wrong.
class PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

const char* kind_name(sdk::PluginKind kind);

class PluginRegistry {
 public:
  PluginRegistry() = default;
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;
  PluginRegistry(PluginRegistry&&) = default;
  PluginRegistry& operator=(PluginRegistry&&) = default;

  // Config dirs, then $EXECMCP_PLUGIN_PATH, then <exe dir>/../lib/execmcp/plugins (and the
  // install's plugin dir if the libdir differs), then <exe dir>.
  static std::vector<std::string> default_search_dirs(const std::vector<std::string>& config_paths);

  // Loads every *.so in each dir (sorted by name within a dir); a path that is a file is loaded
  // directly. Paths listed in `required` must exist (others are skipped silently when missing).
  void scan(const std::vector<std::string>& paths, const std::vector<std::string>& required = {});
  // Loads one library; returns false (and records an error) when it is not a usable plugin.
  bool load_file(const std::string& file);

  [[nodiscard]] const std::vector<PluginInfo>& plugins() const { return infos_; }
  [[nodiscard]] const std::vector<std::string>& errors() const { return errors_; }
  [[nodiscard]] const std::vector<std::string>& warnings() const { return warnings_; }
  [[nodiscard]] const PluginInfo* find(const std::string& name) const;

  // The plugin's own check of `settings_json` (SDK 2.1, settings_check.hpp): every problem it
  // finds, without creating anything. Nothing when the plugin is unknown or of another kind
  // (create_* says so) or exports no check.
  std::vector<sdk::SettingsProblem> check_settings(const std::string& name, sdk::PluginKind kind,
                                                   const std::string& settings_json) const;
  // The plugin's own description of `settings_json` (SDK 2.4): the lines check-config prints.
  // Nothing when the plugin is unknown, of another kind or exports no description.
  std::vector<std::string> describe_settings(const std::string& name, sdk::PluginKind kind,
                                             const std::string& settings_json) const;

  // "" when a plugin `name` of `kind` is loaded; else why not (unknown, or of the other kind), as
  // create_* says it.
  [[nodiscard]] std::string absent(const std::string& name, sdk::PluginKind kind) const;

  // Throw PluginError when the plugin is unknown, of the other kind, or its factory fails.
  PluginPtr<sdk::ExecutorBackend> create_backend(const std::string& name,
                                                 const sdk::BackendInit& init) const;
  PluginPtr<sdk::CommandFilter> create_filter(const std::string& name,
                                              const sdk::FilterInit& init) const;

 private:
  struct Loaded {
    PluginInfo info;
    std::shared_ptr<boost::dll::shared_library> library;
  };
  const Loaded& require(const std::string& name, sdk::PluginKind kind) const;
  std::string unknown_plugin_message(const std::string& name, sdk::PluginKind kind) const;

  std::vector<PluginInfo> infos_;
  std::map<std::string, Loaded> loaded_;
  std::vector<std::string> searched_;
  std::vector<std::string> errors_;
  std::vector<std::string> warnings_;
};

}  // namespace execmcp::host
