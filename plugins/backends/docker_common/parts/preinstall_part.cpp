// See preinstall_part.hpp.
#include "docker_common/parts/preinstall_part.hpp"

#include <map>
#include <memory>
#include <stdexcept>

#include "docker_common/lifecycle/container_lifecycle.hpp"

namespace execmcp::plugins::docker_common {
namespace {

using Kind = EngineError::Kind;

constexpr const char* kBuildHint = "build it with docker/build.sh (from the execmcp source tree)";

// How long an install of `preinstall` may take before it is given up.
constexpr auto kPreinstallTimeout = std::chrono::minutes(30);

// One build per cache key in this process: a second agent with the same lists waits for the first
// one's image instead of building it again. (Across processes a race builds twice; the last commit
// holds the tag.)
std::mutex& preinstall_build_mutex(const std::string& key) {
  static std::mutex map_mutex;
  static std::map<std::string, std::unique_ptr<std::mutex>> mutexes;
  std::lock_guard lock(map_mutex);
  auto& m = mutexes[key];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

}  // namespace

PreinstallPart::PreinstallPart(ContainerLifecycle& lifecycle) : lifecycle_(lifecycle) {
  const auto& settings = lifecycle_.settings();
  if (auto err = check_preinstall_files(settings.preinstall); !err.empty())
    throw std::invalid_argument(err);
  // Another agent's paths are known only at start() (prepare()); this one's are here.
  if (auto err = check_preinstall_inputs(settings.preinstall,
                                         writable_roots(*lifecycle_.init(), settings.extra_mounts));
      !err.empty())
    throw std::invalid_argument(err);
}

std::string PreinstallPart::prepare_spec(ContainerSpec& spec) {
  std::lock_guard lock(mutex_);
  if (!image_.empty()) spec.image = image_;
  return {};
}

bool PreinstallPart::remake_image(const std::string& image, std::string& error) {
  if (image == agent_image(lifecycle_.settings())) return false;
  {
    std::lock_guard lock(mutex_);
    if (image != image_) return false;
  }
  lifecycle_.log(sdk::LogLevel::Warn, "preinstall image " + image + " is gone; building it again");
  error = prepare();
  return true;
}

void PreinstallPart::decorate_result(std::uint64_t /*mark*/, sdk::ExecResult& result) {
  std::string notice;
  {
    std::lock_guard lock(mutex_);
    notice = std::exchange(notice_, std::string());
  }
  if (!notice.empty()) result.notices.insert(result.notices.begin(), std::move(notice));
}

std::string PreinstallPart::prepare() {
  const auto& settings = lifecycle_.settings();
  auto& engine = lifecycle_.engine();
  const std::string base_ref = agent_image(settings);
  ImageInfo base;
  if (auto err = engine.image_info(base_ref, base); !err.ok()) {
    if (err.kind == Kind::kImageMissing) return "image '" + base_ref + "' not found: " + kBuildHint;
    return describe_failure(err, "inspecting image '" + base_ref + "'");
  }
  // The install runs its local files as root: none may lie where an agent (this one or another
  // running now) can write, checked again at each build as mount sources are at each start.
  std::vector<WritableRoot> roots;
  if (auto err = lifecycle_.add_other_agents_roots(roots); !err.empty()) return err;
  const auto own = writable_roots(*lifecycle_.init(), settings.extra_mounts);
  roots.insert(roots.end(), own.begin(), own.end());
  if (auto err = check_preinstall_inputs(settings.preinstall, roots); !err.empty()) return err;
  const auto plan = plan_preinstall(settings.preinstall);
  if (!plan.error.empty()) return plan.error;  // a file the config names: never "continue"
  const std::string key = preinstall_key(base.id, plan);
  const std::string tag = cache_tag(key);
  std::string image_id, failure;
  {
    std::lock_guard build_lock(preinstall_build_mutex(key));
    ImageInfo cached;
    const auto looked = engine.image_info(tag, cached);
    if (looked.ok() && cached.labels[kLabelCacheKey] == key) {
      image_id = cached.id;
      lifecycle_.log(sdk::LogLevel::Info,
                     "preinstall: using the cached image " + tag + " (" + image_id + ")");
    } else if (!looked.ok() && looked.kind != Kind::kImageMissing) {
      failure = describe_failure(looked, "inspecting image '" + tag + "'");
    } else {
      failure = build(base, plan, key, image_id);
    }
  }
  if (failure.empty()) {
    std::lock_guard lock(mutex_);
    image_ = image_id;
    notice_.clear();
    return {};
  }
  if (!settings.preinstall.continue_on_failure) return failure;
  // preinstall_on_failure: continue. The agent runs without its packages, and is told so.
  lifecycle_.log(sdk::LogLevel::Warn,
                 failure + "\n(preinstall_on_failure: continue: starting from " + base_ref + ")");
  std::lock_guard lock(mutex_);
  image_.clear();
  notice_ = failure + "\nThe container was started from '" + base_ref +
            "' without these packages (preinstall_on_failure: continue).";
  return {};
}

std::string PreinstallPart::build(const ImageInfo& base, const PreinstallPlan& plan,
                                  const std::string& key, std::string& image_id) {
  const auto& settings = lifecycle_.settings();
  auto& engine = lifecycle_.engine();
  InstallSpec spec;
  spec.name = kInstallNamePrefix + key.substr(0, 16) + "-" + random_marker().substr(0, 8);
  spec.image = base.id;
  // Root for the package managers; no "0:0" over an image whose user is root already, so that the
  // commit keeps its user as it was (the engine takes an empty one from the container).
  spec.user = base.user.empty() ? "" : "0:0";
  // Where the agent's helpers go out: with network: egress, through its proxy, under its policy
  // (the proxy is up: its part comes first).
  const auto route = lifecycle_.route();
  spec.cmd = {"/bin/sh", "-eu", "-c", "export HOME=/root\n" + preinstall_script(plan, route.env)};
  spec.network = route.network;
  spec.memory_bytes = settings.memory_bytes;
  spec.pids_limit = settings.pids_limit;
  lifecycle_.log(sdk::LogLevel::Info, "preinstall: building " + cache_tag(key) + " from " +
                                          base.id + " in container " + spec.name);
  if (auto err = engine.create_install(spec); !err.ok())
    return describe_failure(err, "creating the preinstall container '" + spec.name + "'");
  struct Remover {
    Engine& engine;
    const std::string& name;
    ~Remover() { engine.remove(name); }
  } remover{engine, spec.name};
  if (!plan.files.empty())
    if (auto err = engine.copy_into(spec.name, "/", preinstall_tar(plan)); !err.ok())
      return describe_failure(err, "copying preinstall's local files into '" + spec.name + "'");
  if (auto err = engine.start(spec.name); !err.ok())
    return describe_failure(err, "starting the preinstall container '" + spec.name + "'");
  const bool ended = engine.wait_stopped(spec.name, kPreinstallTimeout);
  std::string log_text;
  engine.logs(spec.name, log_text);
  if (!ended)
    return "preinstall did not finish within " +
           std::to_string(std::chrono::minutes(kPreinstallTimeout).count()) + " minutes; " +
           preinstall_failure(log_text, -1);
  ContainerInfo info;
  if (auto err = engine.inspect(spec.name, info); !err.ok())
    return describe_failure(err, "inspecting the preinstall container '" + spec.name + "'");
  if (info.state.exit_code != 0) return preinstall_failure(log_text, info.state.exit_code);
  CommitOptions commit;
  commit.repo = kCacheRepo;
  commit.tag = key.substr(0, 16);
  commit.user = base.user;
  commit.cmd = base.cmd;
  commit.entrypoint = base.entrypoint;
  commit.labels = {{kLabelCacheKey, key},
                   {kLabelCacheBase, base.id},
                   {kLabelCacheLists, lists_label(settings.preinstall)}};
  if (auto err = engine.commit(spec.name, commit, image_id); !err.ok())
    return describe_failure(err, "committing the preinstall container '" + spec.name + "'");
  lifecycle_.log(sdk::LogLevel::Info,
                 "preinstall: built " + cache_tag(key) + " (" + image_id + ")");
  return {};
}

}  // namespace execmcp::plugins::docker_common
