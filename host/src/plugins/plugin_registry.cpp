// Finds execmcp plugins (shared libraries), checks their ABI, and creates filters and backends.
#include "plugins/plugin_registry.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <spdlog/spdlog.h>
#include <boost/dll/runtime_symbol_info.hpp>

#include "execmcp/sdk/abi_check.hpp"

namespace execmcp::host {

namespace fs = std::filesystem;

namespace {

std::string safe_string(const char* text) {
  return text == nullptr ? std::string() : text;
}

// Boost.DLL drops dlerror()'s text; ask the loader again to tell the operator why.
std::string dlopen_diagnostic(const std::string& file) {
  dlerror();
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) {
    dlclose(handle);
    return "unknown loader error";
  }
  const char* message = dlerror();
  return message == nullptr ? "unknown loader error" : message;
}

}  // namespace

const char* kind_name(sdk::PluginKind kind) {
  switch (kind) {
    case sdk::PluginKind::Backend:
      return "backend";
    case sdk::PluginKind::Filter:
      return "filter";
  }
  return "unknown";
}

std::vector<std::string> PluginRegistry::default_search_dirs(
    const std::vector<std::string>& config_paths) {
  std::vector<std::string> dirs = config_paths;
  if (const char* env = std::getenv("EXECMCP_PLUGIN_PATH")) {
    std::stringstream list(env);
    std::string dir;
    while (std::getline(list, dir, ':'))
      if (!dir.empty()) dirs.push_back(dir);
  }
  boost::dll::fs::error_code ec;
  const auto exe = boost::dll::program_location(ec);
  if (!ec) {
    const fs::path exe_dir = fs::path(exe.string()).parent_path();
    const std::string usual =
        (exe_dir / ".." / "lib" / "execmcp" / "plugins").lexically_normal().string();
#ifdef EXECMCP_PLUGIN_DIR_FROM_BIN
    const std::string installed =
        (exe_dir / EXECMCP_PLUGIN_DIR_FROM_BIN).lexically_normal().string();
    if (installed != usual) dirs.push_back(installed);
#endif
    dirs.push_back(usual);
    dirs.push_back(exe_dir.string());
  }
  return dirs;
}

void PluginRegistry::scan(const std::vector<std::string>& paths,
                          const std::vector<std::string>& required) {
  for (const auto& path : paths) {
    std::error_code ec;
    const bool is_required = std::find(required.begin(), required.end(), path) != required.end();
    if (!fs::exists(path, ec)) {
      if (is_required)
        errors_.push_back(path + ": plugin path does not exist (check plugin_paths in the config)");
      continue;
    }
    const std::string canonical = fs::weakly_canonical(path, ec).string();
    if (std::find(searched_.begin(), searched_.end(), canonical) != searched_.end()) continue;
    searched_.push_back(canonical);
    if (!fs::is_directory(path, ec)) {
      load_file(path);
      continue;
    }
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      if (entry.path().extension() == ".so" && !entry.is_directory(ec))
        files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) load_file(file);
  }
}

bool PluginRegistry::load_file(const std::string& path) {
  std::error_code fs_ec;
  const std::string file = fs::weakly_canonical(path, fs_ec).string();
  if (!fs::exists(file, fs_ec)) {
    errors_.push_back(path + ": plugin file does not exist");
    return false;
  }
  for (const auto& [name, loaded] : loaded_) {
    if (loaded.info.file == file) return true;  // scanned twice through two search paths
  }
  auto fail = [&](const std::string& message) {
    errors_.push_back(file + ": " + message);
    return false;
  };

  auto library = std::make_shared<boost::dll::shared_library>();
  try {
    boost::dll::fs::error_code ec;
    library->load(file, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
    if (ec || !library->is_loaded()) return fail("cannot load: " + dlopen_diagnostic(file));
    if (!library->has(sdk::kDescriptorSymbol))
      return fail(std::string("not an execmcp plugin (no '") + sdk::kDescriptorSymbol +
                  "' symbol); build plugins with execmcp_add_plugin() and EXECMCP_BACKEND_PLUGIN "
                  "or EXECMCP_FILTER_PLUGIN");
    const auto& descriptor =
        library->get_alias<const sdk::PluginDescriptor>(sdk::kDescriptorSymbol);
    if (descriptor.magic != sdk::kDescriptorMagic) {
      std::ostringstream message;
      message << "not an execmcp plugin (descriptor magic 0x" << std::hex << descriptor.magic
              << ", expected 0x" << sdk::kDescriptorMagic << ")";
      return fail(message.str());
    }
    if (std::string refusal = sdk::abi_refusal(descriptor.abi_major, descriptor.abi_minor);
        !refusal.empty())
      return fail(refusal);
    PluginInfo info;
    info.abi_major = descriptor.abi_major;
    info.abi_minor = descriptor.abi_minor;
    info.kind = descriptor.kind;
    info.name = safe_string(descriptor.name);
    info.version = safe_string(descriptor.version);
    info.description = safe_string(descriptor.description);
    info.compiler_id = safe_string(descriptor.compiler_id);
    info.file = file;
    if (info.name.empty()) return fail("plugin descriptor has no name");
    if (info.kind != sdk::PluginKind::Backend && info.kind != sdk::PluginKind::Filter)
      return fail("plugin '" + info.name + "' has unknown kind " +
                  std::to_string(static_cast<std::uint32_t>(info.kind)));
    const char* factory = info.kind == sdk::PluginKind::Backend ? sdk::kBackendFactorySymbol
                                                                : sdk::kFilterFactorySymbol;
    if (!library->has(factory))
      return fail(std::string("plugin '") + info.name + "' is a " + kind_name(info.kind) +
                  " but exports no '" + factory + "' factory");
    if (info.compiler_id != sdk::kCompilerId)
      warnings_.push_back(file + ": plugin '" + info.name + "' was built with " + info.compiler_id +
                          ", this host with " + sdk::kCompilerId +
                          "; it should work, but rebuild it if it misbehaves");
    if (auto it = loaded_.find(info.name); it != loaded_.end()) {
      warnings_.push_back(file + ": plugin '" + info.name + "' ignored: already loaded from " +
                          it->second.info.file + " (the first one found wins)");
      return false;
    }
    infos_.push_back(info);
    const std::string name = info.name;
    loaded_.emplace(name, Loaded{std::move(info), std::move(library)});
    return true;
  } catch (const std::exception& e) {
    return fail(std::string("cannot load: ") + e.what());
  } catch (...) {
    return fail("cannot load: unknown error");
  }
}

const PluginInfo* PluginRegistry::find(const std::string& name) const {
  auto it = loaded_.find(name);
  return it == loaded_.end() ? nullptr : &it->second.info;
}

std::string PluginRegistry::unknown_plugin_message(const std::string& name,
                                                   sdk::PluginKind kind) const {
  std::string known;
  for (const auto& info : infos_)
    if (info.kind == kind) known += (known.empty() ? "" : ", ") + info.name;
  std::string dirs;
  for (const auto& dir : searched_) dirs += (dirs.empty() ? "" : ", ") + dir;
  return std::string("no ") + kind_name(kind) + " plugin named '" + name +
         "' (found: " + (known.empty() ? "none" : known) +
         "; searched: " + (dirs.empty() ? "nothing" : dirs) +
         "). Add its directory to plugin_paths or EXECMCP_PLUGIN_PATH; `execmcp plugins` lists "
         "what is found.";
}

std::string PluginRegistry::absent(const std::string& name, sdk::PluginKind kind) const {
  auto it = loaded_.find(name);
  if (it == loaded_.end()) return unknown_plugin_message(name, kind);
  if (it->second.info.kind != kind)
    return "plugin '" + name + "' (" + it->second.info.file + ") is a " +
           kind_name(it->second.info.kind) + ", not a " + kind_name(kind);
  return {};
}

const PluginRegistry::Loaded& PluginRegistry::require(const std::string& name,
                                                      sdk::PluginKind kind) const {
  if (auto why = absent(name, kind); !why.empty()) throw PluginError(why);
  return loaded_.find(name)->second;
}

namespace {

template <class Interface, class Factory, class Init>
PluginPtr<Interface> call_factory(const std::shared_ptr<boost::dll::shared_library>& library,
                                  const PluginInfo& info, const char* symbol, const Init& init) {
  const std::string who = "plugin '" + info.name + "' (" + info.file + ")";
  std::string error;
  Interface* object = nullptr;
  try {
    Factory& factory = library->get_alias<Factory>(symbol);
    object = factory(init, error);
  } catch (const std::exception& e) {
    throw PluginError(who + ": factory threw: " + e.what());
  } catch (...) {
    throw PluginError(who + ": factory threw an unknown exception");
  }
  if (object == nullptr)
    throw PluginError(who + ": " + (error.empty() ? "factory returned nothing" : error));
  return PluginPtr<Interface>(object, PluginDeleter<Interface>(library));
}

}  // namespace

std::vector<sdk::SettingsProblem> PluginRegistry::check_settings(
    const std::string& name, sdk::PluginKind kind, const std::string& settings_json) const {
  std::vector<sdk::SettingsProblem> problems;
  const auto it = loaded_.find(name);
  if (it == loaded_.end() || it->second.info.kind != kind) return problems;
  const auto& library = it->second.library;
  try {
    if (!library->has(sdk::kSettingsCheckSymbol)) return problems;
    auto& check = library->get_alias<sdk::SettingsCheck>(sdk::kSettingsCheckSymbol);
    check(settings_json, problems);
  } catch (const std::exception& e) {
    problems.push_back({"", std::string("the plugin's settings check threw: ") + e.what()});
  } catch (...) {
    problems.push_back({"", "the plugin's settings check threw an unknown exception"});
  }
  return problems;
}

std::vector<std::string> PluginRegistry::describe_settings(const std::string& name,
                                                           sdk::PluginKind kind,
                                                           const std::string& settings_json) const {
  std::vector<std::string> lines;
  const auto it = loaded_.find(name);
  if (it == loaded_.end() || it->second.info.kind != kind) return lines;
  const auto& library = it->second.library;
  try {
    if (!library->has(sdk::kSettingsDescriptionSymbol)) return lines;
    auto& describe = library->get_alias<sdk::SettingsDescription>(sdk::kSettingsDescriptionSymbol);
    describe(settings_json, lines);
  } catch (...) {
    lines.clear();  // only shown: a failing description shows nothing
  }
  return lines;
}

PluginPtr<sdk::ExecutorBackend> PluginRegistry::create_backend(const std::string& name,
                                                               const sdk::BackendInit& init) const {
  const auto& loaded = require(name, sdk::PluginKind::Backend);
  return call_factory<sdk::ExecutorBackend, sdk::BackendFactory>(loaded.library, loaded.info,
                                                                 sdk::kBackendFactorySymbol, init);
}

PluginPtr<sdk::CommandFilter> PluginRegistry::create_filter(const std::string& name,
                                                            const sdk::FilterInit& init) const {
  const auto& loaded = require(name, sdk::PluginKind::Filter);
  return call_factory<sdk::CommandFilter, sdk::FilterFactory>(loaded.library, loaded.info,
                                                              sdk::kFilterFactorySymbol, init);
}

}  // namespace execmcp::host
