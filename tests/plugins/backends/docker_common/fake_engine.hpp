// An in-memory Engine for tests of what sits above it (the container lifecycle, the exec path):
// containers and images in maps, every mutating call recorded, failures switched on by a test.
// Not thread-safe, except the log feeds (follow_logs()) and the event feed (follow_events()),
// which a follower's thread reads while a test writes; header-only, so no plugin links it.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "docker_common/engine/engine.hpp"

namespace execmcp::plugins::docker_common {

class FakeEngine final : public Engine {
 public:
  // What one exec prints and how it ends (FakeEngine::exec_results, used in order; when none is
  // left, an exec prints nothing and exits 0).
  struct ExecResult {
    std::string stdout_data;
    std::string stderr_data;
    int exit_code = 0;
  };

  // --- the engine's state, set and read by tests ---
  bool reachable = true;
  std::set<std::string> images;
  // What runtimes() lists (name -> runtimeArgs); runtimes_error, when set, is what it fails with.
  RuntimeList runtime_list = {{"runc", {"runc", {}}}};
  std::optional<EngineError> runtimes_error;
  int runtimes_calls = 0;
  std::map<std::string, ContainerInfo> containers;  // by name
  std::map<std::string, NetworkInfo> networks;      // by name
  // The next create() of each name fails with kConflict this many times.
  int conflicts_on_create = 0;
  // create() of these names fails (kOther), as an engine that refuses the spec.
  std::set<std::string> refuse_create;
  // create_network() refuses any spec carrying one of these driver options (kOther), as Podman 4
  // refuses Docker's bridge options.
  std::set<std::string> unsupported_network_options;
  std::deque<ExecResult> exec_results;
  // Each exec() removes the container first, as if it went away just as the call came.
  bool vanish_on_exec = false;
  // An exec's output never ends (gVisor leaves the streams of a stopped container's execs open):
  // each read waits its whole wait, and finish() knows no exit code.
  bool endless_execs = false;
  // Every call that changes something, in order: "create NAME", "start NAME", "stop NAME",
  // "remove NAME", "exec NAME".
  std::vector<std::string> calls;
  // The last spec create() took.
  ContainerSpec last_spec;
  std::string last_connect_alias;  // of the last connect_network()
  // The last spec create_install() took.
  InstallSpec last_install;
  // The options of the last exec().
  ExecOptions last_exec;
  // What copy_from() gives for a path in any container (a tar archive), else kNotFound; each
  // copy_from() as "NAME:PATH"; each copy_into() that worked; copy_into_error, when set, is what
  // every copy_into() fails with.
  std::map<std::string, std::string> archives;
  std::vector<std::string> copied_from;
  struct Copy {
    std::string name, dir, tar;
    bool running = false;  // the container ran when it was copied into
  };
  std::vector<Copy> copies;
  std::optional<EngineError> copy_into_error;
  // Called on the stored container at each inspect(), before it is copied out: a state that
  // changes between two looks (an OOM event the engine learns of after the exit).
  std::function<void(ContainerInfo&)> on_inspect;

  // What follow_logs() of one container reads: text a test appends (from any thread), streams that
  // it can end (the container stopped or restarted). Every follow reads the whole log from its
  // start, as a real engine would without `since`.
  class LogFeed {
   public:
    void push(const std::string& text) {
      std::lock_guard lock(mutex_);
      text_ += text;
      changed_.notify_all();
    }
    // The streams open now end (after what was pushed); later follows read on.
    void end_streams() {
      std::lock_guard lock(mutex_);
      ++generation_;
      changed_.notify_all();
    }
    // follow_logs() fails with kNotFound while set (the container is gone).
    void set_missing(bool missing) {
      std::lock_guard lock(mutex_);
      missing_ = missing;
    }
    // How many follows were opened, and the `since` of the last.
    [[nodiscard]] int follows() const {
      std::lock_guard lock(mutex_);
      return follows_;
    }
    [[nodiscard]] std::string last_since() const {
      std::lock_guard lock(mutex_);
      return last_since_;
    }

   private:
    friend class FakeEngine;
    class Stream final : public LogStream {
     public:
      Stream(std::shared_ptr<LogFeed> feed, int generation)
          : feed_(std::move(feed)), generation_(generation) {}
      ReadStatus read(std::chrono::milliseconds wait, std::string& out) override {
        std::unique_lock lock(feed_->mutex_);
        feed_->changed_.wait_for(lock, wait, [&] {
          return feed_->text_.size() > at_ || feed_->generation_ != generation_;
        });
        out.append(feed_->text_, at_);
        at_ = feed_->text_.size();
        return {feed_->generation_ != generation_, {}};
      }

     private:
      std::shared_ptr<LogFeed> feed_;
      int generation_;
      std::size_t at_ = 0;
    };

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::string text_;
    int generation_ = 0;
    bool missing_ = false;
    int follows_ = 0;
    std::string last_since_;
  };
  // The feed of `name`'s log (made at the first ask); thread-safe.
  std::shared_ptr<LogFeed> log_feed(const std::string& name) {
    std::lock_guard lock(feeds_mutex_);
    auto& feed = feeds_[name];
    if (!feed) feed = std::make_shared<LogFeed>();
    return feed;
  }

  // What follow_events() reads (any container's): lines a test pushes (from any thread), streams
  // it can end (the engine restarted), and a refusal (a socket proxy that refuses GET /events). A
  // stream reads what is pushed after it opened.
  class EventFeed {
   public:
    void push(const std::string& text) {
      std::lock_guard lock(mutex_);
      text_ += text;
      changed_.notify_all();
    }
    // The streams open now end (after what was pushed); later follows read on.
    void end_streams() {
      std::lock_guard lock(mutex_);
      ++generation_;
      changed_.notify_all();
    }
    // follow_events() fails with `error` while set; nullopt lets it through again.
    void refuse(std::optional<EngineError> error) {
      std::lock_guard lock(mutex_);
      refusal_ = std::move(error);
    }
    [[nodiscard]] int follows() const {
      std::lock_guard lock(mutex_);
      return follows_;
    }
    [[nodiscard]] std::string last_name() const {
      std::lock_guard lock(mutex_);
      return last_name_;
    }

   private:
    friend class FakeEngine;
    class Stream final : public EventStream {
     public:
      Stream(std::shared_ptr<EventFeed> feed, int generation, std::size_t at)
          : feed_(std::move(feed)), generation_(generation), at_(at) {}
      ReadStatus read(std::chrono::milliseconds wait, std::string& out) override {
        std::unique_lock lock(feed_->mutex_);
        feed_->changed_.wait_for(lock, wait, [&] {
          return feed_->text_.size() > at_ || feed_->generation_ != generation_;
        });
        out.append(feed_->text_, at_);
        at_ = feed_->text_.size();
        return {feed_->generation_ != generation_, {}};
      }

     private:
      std::shared_ptr<EventFeed> feed_;
      int generation_;
      std::size_t at_;
    };

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::string text_;
    int generation_ = 0;
    std::optional<EngineError> refusal_;
    int follows_ = 0;
    std::string last_name_;
  };
  // Thread-safe: follow_events() reads only this.
  const std::shared_ptr<EventFeed> event_feed = std::make_shared<EventFeed>();

  [[nodiscard]] std::size_t count(const std::string& call) const {
    return static_cast<std::size_t>(std::count(calls.begin(), calls.end(), call));
  }
  // A container as the engine would list it.
  ContainerInfo& add_container(const std::string& name, bool running,
                               std::map<std::string, std::string> labels = {}) {
    auto& c = containers[name];
    c.id = "id-" + name;
    c.name = name;
    c.labels = std::move(labels);
    c.state.exists = true;
    c.state.running = running;
    return c;
  }

  // --- Engine ---
  [[nodiscard]] std::string describe() const override { return "fake://engine"; }
  [[nodiscard]] bool sees_host_files() const override { return true; }
  EngineError connect() override {
    return reachable ? EngineError{}
                     : EngineError::of(EngineError::Kind::kUnreachable,
                                       "cannot reach the engine at fake://engine");
  }
  EngineError runtimes(RuntimeList& out) override {
    if (auto err = connect(); !err.ok()) return err;
    ++runtimes_calls;
    if (runtimes_error) return *runtimes_error;
    out = runtime_list;
    return {};
  }
  EngineError check_image(const std::string& image) override {
    if (auto err = connect(); !err.ok()) return err;
    if (!images.contains(image))
      return EngineError::of(EngineError::Kind::kImageMissing, "no such image: " + image);
    return {};
  }
  EngineError image_info(const std::string& image, ImageInfo& out) override {
    if (auto err = check_image(image); !err.ok()) return err;
    out = ImageInfo{};
    out.id = "sha256:" + image;
    return {};
  }
  // Recorded, then refused: an install is not faked further.
  EngineError create_install(const InstallSpec& spec) override {
    calls.push_back("create_install " + spec.name);
    last_install = spec;
    return EngineError::of(EngineError::Kind::kOther, "not faked");
  }
  EngineError commit(const std::string&, const CommitOptions&, std::string&) override {
    return EngineError::of(EngineError::Kind::kOther, "not faked");
  }
  EngineError list(const std::map<std::string, std::string>& labels,
                   std::vector<ContainerInfo>& out) override {
    if (auto err = connect(); !err.ok()) return err;
    out.clear();
    for (const auto& [name, c] : containers) {
      const bool all = std::all_of(labels.begin(), labels.end(), [&](const auto& l) {
        const auto it = c.labels.find(l.first);
        return it != c.labels.end() && it->second == l.second;
      });
      if (all) out.push_back(c);
    }
    return {};
  }
  EngineError inspect(const std::string& name, ContainerInfo& out) override {
    if (auto err = connect(); !err.ok()) return err;
    auto* c = find(name);
    if (c == nullptr) return EngineError::of(EngineError::Kind::kNotFound, "no such container");
    if (on_inspect) on_inspect(*c);
    out = *c;
    return {};
  }
  EngineError create(const ContainerSpec& spec) override {
    if (auto err = connect(); !err.ok()) return err;
    calls.push_back("create " + spec.name);
    if (conflicts_on_create > 0) {
      --conflicts_on_create;
      return EngineError::of(EngineError::Kind::kConflict, "name in use");
    }
    if (containers.contains(spec.name))
      return EngineError::of(EngineError::Kind::kConflict, "name in use");
    if (refuse_create.contains(spec.name))
      return EngineError::of(EngineError::Kind::kOther, "refused by the test");
    if (!images.contains(spec.image))
      return EngineError::of(EngineError::Kind::kImageMissing, "no such image");
    if (!spec.runtime.empty() && !runtime_list.contains(spec.runtime))
      return EngineError::of(EngineError::Kind::kOther,
                             "Unknown runtime specified " + spec.runtime);
    last_spec = spec;
    add_container(spec.name, false, spec.labels);
    return {};
  }
  EngineError start(const std::string& name) override {
    if (auto err = connect(); !err.ok()) return err;
    calls.push_back("start " + name);
    auto* c = find(name);
    if (c == nullptr) return EngineError::of(EngineError::Kind::kNotFound, "no such container");
    c->state.running = true;
    return {};
  }
  EngineError stop(const std::string& name, std::chrono::seconds) override {
    if (auto err = connect(); !err.ok()) return err;
    calls.push_back("stop " + name);
    auto* c = find(name);
    if (c == nullptr) return EngineError::of(EngineError::Kind::kNotFound, "no such container");
    c->state.running = false;
    return {};
  }
  EngineError remove(const std::string& name_or_id) override {
    if (auto err = connect(); !err.ok()) return err;
    calls.push_back("remove " + name_or_id);
    auto* c = find(name_or_id);
    if (c == nullptr) return EngineError::of(EngineError::Kind::kNotFound, "no such container");
    containers.erase(c->name);
    return {};
  }
  bool wait_stopped(const std::string& name, std::chrono::milliseconds) override {
    const auto* c = find(name);
    return c == nullptr || !c->state.running;
  }
  EngineError create_network(const NetworkSpec& spec) override {
    if (auto err = connect(); !err.ok()) return err;
    calls.push_back("create_network " + spec.name);
    for (const auto& [option, value] : spec.options)
      if (unsupported_network_options.contains(option))
        return EngineError::of(EngineError::Kind::kOther,
                               "Error: unsupported network option " + option);
    if (networks.contains(spec.name))
      return EngineError::of(EngineError::Kind::kConflict, "network name in use");
    networks[spec.name] = {
        "net-" + spec.name, spec.name,   "bridge",
        spec.internal,      spec.labels, {"172.30." + std::to_string(networks.size()) + ".0/24"},
        spec.options};
    return {};
  }
  EngineError inspect_network(const std::string& name, NetworkInfo& out) override {
    if (auto err = connect(); !err.ok()) return err;
    const auto it = networks.find(name);
    if (it == networks.end())
      return EngineError::of(EngineError::Kind::kNotFound, "no such network");
    out = it->second;
    return {};
  }
  EngineError list_networks(const std::map<std::string, std::string>& labels,
                            std::vector<NetworkInfo>& out) override {
    if (auto err = connect(); !err.ok()) return err;
    out.clear();
    for (const auto& [name, n] : networks) {
      bool all = true;
      for (const auto& [k, v] : labels) {
        const auto it = n.labels.find(k);
        all = all && it != n.labels.end() && it->second == v;
      }
      if (all) out.push_back(n);
    }
    return {};
  }
  EngineError connect_network(const std::string& network, const std::string& container,
                              const std::string& alias) override {
    if (auto err = connect(); !err.ok()) return err;
    calls.push_back("connect_network " + network + " " + container);
    auto* c = find(container);
    if (c == nullptr || !networks.contains(network))
      return EngineError::of(EngineError::Kind::kNotFound, "no such container or network");
    if (!alias.empty() &&
        networks.at(network).options.contains("com.docker.network.bridge.default_bridge"))
      return EngineError::of(EngineError::Kind::kOther,
                             "network-scoped alias is supported only for containers in user "
                             "defined networks");
    c->networks[network] = "10.0.0." + std::to_string(c->networks.size() + 2);
    last_connect_alias = alias;
    return {};
  }
  EngineError remove_network(const std::string& name_or_id) override {
    if (auto err = connect(); !err.ok()) return err;
    calls.push_back("remove_network " + name_or_id);
    for (const auto& [name, c] : containers)
      if (c.networks.contains(name_or_id))
        return EngineError::of(EngineError::Kind::kConflict, "network has active endpoints");
    std::string name = name_or_id;
    for (const auto& [n, info] : networks)
      if (info.id == name_or_id) name = n;
    for (const auto& [n, c] : containers)
      if (c.networks.contains(name))
        return EngineError::of(EngineError::Kind::kConflict, "network has active endpoints");
    if (networks.erase(name) == 0)
      return EngineError::of(EngineError::Kind::kNotFound, "no such network");
    return {};
  }
  EngineError copy_into(const std::string& name, const std::string& dir,
                        const std::string& tar) override {
    if (copy_into_error) return *copy_into_error;
    const auto* c = find(name);
    copies.push_back({name, dir, tar, c != nullptr && c->state.running});
    return {};
  }
  EngineError copy_from(const std::string& name, const std::string& path,
                        std::string& tar) override {
    tar.clear();
    if (auto err = connect(); !err.ok()) return err;
    copied_from.push_back(name + ":" + path);
    if (find(name) == nullptr)
      return EngineError::of(EngineError::Kind::kNotFound, "no such container");
    const auto it = archives.find(path);
    if (it == archives.end())
      return EngineError::of(EngineError::Kind::kNotFound,
                             "Could not find the file " + path + " in container " + name);
    tar = it->second;
    return {};
  }
  EngineError logs(const std::string&, std::string& text) override {
    text.clear();
    return {};
  }

  // Thread-safe: reads only the feed of `name` (log_feed()).
  std::unique_ptr<LogStream> follow_logs(const std::string& name, const std::string& since,
                                         EngineError& error) override {
    auto feed = log_feed(name);
    std::lock_guard lock(feed->mutex_);
    ++feed->follows_;
    feed->last_since_ = since;
    if (feed->missing_) {
      error = EngineError::of(EngineError::Kind::kNotFound, "no such container");
      return nullptr;
    }
    return std::make_unique<LogFeed::Stream>(feed, feed->generation_);
  }

  // Thread-safe: reads only event_feed.
  std::unique_ptr<EventStream> follow_events(const std::string& name, const std::string&,
                                             EngineError& error) override {
    std::lock_guard lock(event_feed->mutex_);
    ++event_feed->follows_;
    event_feed->last_name_ = name;
    if (event_feed->refusal_) {
      error = *event_feed->refusal_;
      return nullptr;
    }
    return std::make_unique<EventFeed::Stream>(event_feed, event_feed->generation_,
                                               event_feed->text_.size());
  }

  std::unique_ptr<ExecSession> exec(const std::string& name, const ExecOptions& options,
                                    EngineError& error) override {
    if (error = connect(); !error.ok()) return nullptr;
    calls.push_back("exec " + name);
    last_exec = options;
    if (vanish_on_exec) containers.erase(name);
    const auto* c = find(name);
    if (c == nullptr) {
      error = EngineError::of(EngineError::Kind::kNotFound, "no such container");
      return nullptr;
    }
    if (!c->state.running) {
      error = EngineError::of(EngineError::Kind::kNotRunning, "container is not running");
      return nullptr;
    }
    ExecResult r;
    if (!exec_results.empty()) {
      r = exec_results.front();
      exec_results.pop_front();
    }
    return std::make_unique<Session>(std::move(r), endless_execs);
  }
  std::optional<runner_client::ChannelEnds> open_channel(const std::string&, const ExecOptions&,
                                                         EngineError& error) override {
    error = EngineError::of(EngineError::Kind::kOther, "not faked");
    return std::nullopt;
  }
  [[nodiscard]] bool input_always_arrives() const override { return true; }

 private:
  std::mutex feeds_mutex_;
  std::map<std::string, std::shared_ptr<LogFeed>> feeds_;

  // Finds a container by name or id.
  ContainerInfo* find(const std::string& name_or_id) {
    if (auto it = containers.find(name_or_id); it != containers.end()) return &it->second;
    for (auto& [name, c] : containers)
      if (c.id == name_or_id) return &c;
    return nullptr;
  }

  // Hands its output over at the first read, then ends.
  class Session final : public ExecSession {
   public:
    Session(ExecResult result, bool endless) : result_(std::move(result)), endless_(endless) {}
    ReadStatus read(std::chrono::milliseconds wait,
                    runner_client::ExecStreamDecoder::Handler& handler) override {
      if (endless_) {
        std::this_thread::sleep_for(wait);
        return {false, {}};
      }
      if (!result_.stdout_data.empty())
        handler.on_payload(runner_client::ExecStreamDecoder::Stream::Stdout, result_.stdout_data);
      if (!result_.stderr_data.empty())
        handler.on_payload(runner_client::ExecStreamDecoder::Stream::Stderr, result_.stderr_data);
      result_.stdout_data.clear();
      result_.stderr_data.clear();
      return {true, {}};
    }
    WriteStatus write_some(std::string_view data, std::chrono::milliseconds) override {
      return {data.size(), {}};
    }
    void close_stdin() override {}
    [[nodiscard]] bool carries_input() const override { return true; }
    Exit finish(bool) override {
      return {endless_ ? std::nullopt : std::optional<int>(result_.exit_code), true};
    }

   private:
    ExecResult result_;
    bool endless_;
  };
};

}  // namespace execmcp::plugins::docker_common
