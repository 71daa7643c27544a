// Loads a backend plugin library through Boost.DLL for the conformance kit, the way a host does.
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include <boost/dll/shared_library.hpp>

#include "execmcp/conformance/backend_conformance.hpp"
#include "execmcp/sdk/abi_check.hpp"
#include "execmcp/sdk/plugin.hpp"

namespace execmcp::conformance {

namespace {

// Owns the plugin-made backend and a reference to its library. Members are destroyed in reverse
// order, so the backend goes first and the library is unloaded last.
class LibraryBoundBackend final : public sdk::ExecutorBackend {
 public:
  LibraryBoundBackend(std::shared_ptr<boost::dll::shared_library> library,
                      std::unique_ptr<sdk::ExecutorBackend> backend)
      : library_(std::move(library)), backend_(std::move(backend)) {}

  std::string start() override { return backend_->start(); }
  void stop() noexcept override { backend_->stop(); }
  void cleanup() noexcept override { backend_->cleanup(); }
  sdk::ExecResult execute(const sdk::ExecRequest& request) override {
    return backend_->execute(request);
  }
  sdk::FileReadResult read_file(const sdk::FileReadRequest& request) override {
    return backend_->read_file(request);
  }
  sdk::FileWriteResult write_file(const sdk::FileWriteRequest& request) override {
    return backend_->write_file(request);
  }
  [[nodiscard]] sdk::BackendTraits traits() const override { return backend_->traits(); }

 private:
  std::shared_ptr<boost::dll::shared_library> library_;
  std::unique_ptr<sdk::ExecutorBackend> backend_;
};

std::shared_ptr<boost::dll::shared_library> load_checked(const std::string& path) {
  auto library = std::make_shared<boost::dll::shared_library>();
  boost::dll::fs::error_code ec;
  library->load(path, boost::dll::load_mode::rtld_lazy | boost::dll::load_mode::rtld_local, ec);
  if (ec) throw std::runtime_error("cannot load plugin '" + path + "': " + ec.message());
  if (!library->has(sdk::kDescriptorSymbol))
    throw std::runtime_error("'" + path + "' is not an execmcp plugin (no descriptor)");
  const auto& descriptor = library->get_alias<const sdk::PluginDescriptor>(sdk::kDescriptorSymbol);
  if (descriptor.magic != sdk::kDescriptorMagic)
    throw std::runtime_error("'" + path + "' has a corrupt execmcp descriptor");
  if (std::string refusal = sdk::abi_refusal(descriptor.abi_major, descriptor.abi_minor);
      !refusal.empty())
    throw std::runtime_error("'" + path + "': " + refusal);
  if (descriptor.kind != sdk::PluginKind::Backend)
    throw std::runtime_error("'" + path + "' is not a backend plugin");
  if (!library->has(sdk::kBackendFactorySymbol))
    throw std::runtime_error("'" + path + "' has no backend factory");
  return library;
}

}  // namespace

BackendFactory plugin_backend_factory(const std::string& library_path) {
  // Loaded on first use, so a bad path fails the tests with a message instead of the static init.
  struct Loaded {
    std::mutex mutex;
    std::shared_ptr<boost::dll::shared_library> library;
  };
  auto loaded = std::make_shared<Loaded>();
  return [library_path,
          loaded](const sdk::BackendInit& init) -> std::unique_ptr<sdk::ExecutorBackend> {
    std::shared_ptr<boost::dll::shared_library> library;
    {
      std::lock_guard lock(loaded->mutex);
      if (!loaded->library) loaded->library = load_checked(library_path);
      library = loaded->library;
    }
    auto& factory = library->get_alias<sdk::BackendFactory>(sdk::kBackendFactorySymbol);
    std::string error;
    std::unique_ptr<sdk::ExecutorBackend> backend(factory(init, error));
    if (!backend)
      throw std::runtime_error("plugin '" + library_path + "' refused to create a backend: " +
                               (error.empty() ? std::string("no reason given") : error));
    return std::make_unique<LibraryBoundBackend>(library, std::move(backend));
  };
}

}  // namespace execmcp::conformance
