// docker-api's engine: each Engine call as Engine API requests over DockerClient.
#include "docker_api_engine.hpp"

#include <cctype>
#include <cstdlib>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "docker_common/parts/preinstall.hpp"
#include "runner_client/exec_stream_decoder.hpp"

namespace execmcp::plugins::docker_api {
namespace {

using nlohmann::json;
namespace dc = docker_common;
using Kind = dc::EngineError::Kind;
using docker_client::engine_message;
using docker_client::kMaxApiVersion;
using docker_client::negotiate_api_version;
using docker_client::parse_docker_host;
using docker_client::select_docker_host;

using docker_client::url_encode;

// A request that did not get the status it wanted: unreachable, or the engine's own words.
dc::EngineError failure(const HttpResponse& r, Kind kind = Kind::kOther) {
  if (!r.error.empty()) return dc::EngineError::of(Kind::kUnreachable, r.error);
  return dc::EngineError::of(kind, engine_message(r.status, r.body));
}

// The exec's hijacked stream, decoded; its exit code from GET /exec/{id}/json.
class ApiExecSession final : public dc::ExecSession {
 public:
  ApiExecSession(DockerApiEngine& engine, std::string exec_id, std::unique_ptr<ExecConnection> conn)
      : engine_(engine), exec_id_(std::move(exec_id)), conn_(std::move(conn)), buf_(64 * 1024) {}

  ReadStatus read(std::chrono::milliseconds wait,
                  runner_client::ExecStreamDecoder::Handler& handler) override {
    if (!conn_) return {true, {}};
    auto rr = conn_->read_some(buf_.data(), buf_.size(), wait);
    if (!rr.error.empty()) return {false, rr.error};
    if (rr.bytes > 0 && !decoder_.feed(std::string_view(buf_.data(), rr.bytes), handler))
      return {false, decoder_.error()};
    return {rr.eof, {}};
  }

  WriteStatus write_some(std::string_view data, std::chrono::milliseconds wait) override {
    if (!conn_) return {0, "the exec stream is closed"};
    auto w = conn_->write_some(data, wait);
    return {w.bytes, w.error};
  }

  void close_stdin() override {
    if (conn_) conn_->close_write();
  }

  [[nodiscard]] bool carries_input() const override { return conn_ && conn_->upgraded(); }

  Exit finish(bool killed) override {
    conn_.reset();
    // The exit code is known once the daemon has seen the process end; poll briefly.
    Exit exit;
    exit.engine_answered = false;
    for (int i = 0; i < 40; ++i) {
      auto r = engine_.client().request("GET", engine_.api("/exec/" + exec_id_ + "/json"), {},
                                        std::chrono::seconds(10));
      exit.engine_answered = r.error.empty();
      if (!r.ok()) break;
      const auto j = json::parse(r.body, nullptr, false);
      if (!j.is_object()) break;
      if (!(j.contains("Running") && j["Running"].is_boolean() && j["Running"].get<bool>())) {
        if (j.contains("ExitCode") && j["ExitCode"].is_number_integer())
          exit.code = j["ExitCode"].get<int>();
        break;
      }
      if (killed) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return exit;
  }

 private:
  DockerApiEngine& engine_;
  std::string exec_id_;
  std::unique_ptr<ExecConnection> conn_;
  runner_client::ExecStreamDecoder decoder_;
  std::vector<char> buf_;
};

// The log's multiplexed frames (a container without a TTY) decoded as they come; stdout only.
class ApiLogStream final : public dc::LogStream {
 public:
  explicit ApiLogStream(std::unique_ptr<BodyStream> body) : body_(std::move(body)) {}

  ReadStatus read(std::chrono::milliseconds wait, std::string& out) override {
    std::string raw;
    const auto r = body_->read(wait, raw);
    if (!r.error.empty()) return {false, r.error};
    if (!raw.empty()) {
      Collect collect(out);
      if (!decoder_.feed(raw, collect)) return {false, decoder_.error()};
    }
    return {r.eof, {}};
  }

 private:
  struct Collect final : runner_client::ExecStreamDecoder::Handler {
    explicit Collect(std::string& out) : out_(out) {}
    void on_payload(runner_client::ExecStreamDecoder::Stream stream,
                    std::string_view data) override {
      if (stream == runner_client::ExecStreamDecoder::Stream::Stdout) out_.append(data);
    }
    std::string& out_;
  };

  std::unique_ptr<BodyStream> body_;
  runner_client::ExecStreamDecoder decoder_;
};

// GET /events as it comes: JSON documents, one a line, no framing of Docker's own.
class ApiEventStream final : public dc::EventStream {
 public:
  explicit ApiEventStream(std::unique_ptr<BodyStream> body) : body_(std::move(body)) {}

  ReadStatus read(std::chrono::milliseconds wait, std::string& out) override {
    const auto r = body_->read(wait, out);
    return {r.eof, r.error};
  }

 private:
  std::unique_ptr<BodyStream> body_;
};

}  // namespace

DockerApiEngine::DockerApiEngine(const std::string& docker_host)
    : client_(parse_docker_host(select_docker_host(docker_host, std::getenv("DOCKER_HOST")))) {}

std::string DockerApiEngine::describe() const {
  return client_.endpoint().uri;
}

bool DockerApiEngine::sees_host_files() const {
  return client_.endpoint().kind == DockerEndpoint::Kind::Unix;
}

std::string DockerApiEngine::api(const std::string& path) {
  std::lock_guard lock(mutex_);
  return "/v" + api_version_ + path;
}

dc::EngineError DockerApiEngine::connect() {
  {
    std::lock_guard lock(mutex_);
    if (!api_version_.empty()) return {};
  }
  auto r = client_.request("GET", "/version", {}, std::chrono::seconds(10));
  if (!r.error.empty()) return dc::EngineError::of(Kind::kUnreachable, r.error);
  if (r.status != 200)
    return dc::EngineError::sentence(
        Kind::kOther, "Docker answered /version with " + engine_message(r.status, r.body));
  const auto j = json::parse(r.body, nullptr, false);
  const std::string server =
      j.is_object() && j.contains("ApiVersion") && j["ApiVersion"].is_string()
          ? j["ApiVersion"].get<std::string>()
          : std::string(kMaxApiVersion);
  std::lock_guard lock(mutex_);
  api_version_ = negotiate_api_version(server);
  return {};
}

dc::EngineError DockerApiEngine::runtimes(dc::RuntimeList& out) {
  auto r = client_.request("GET", api("/info"));
  if (!r.ok()) return failure(r);
  const auto info = json::parse(r.body, nullptr, false);
  if (!info.is_object() || !info.contains("Runtimes"))
    return dc::EngineError::of(Kind::kOther, "GET /info answered with no Runtimes");
  out = dc::runtime_list_from_info(info["Runtimes"]);
  return {};
}

dc::EngineError DockerApiEngine::check_image(const std::string& image) {
  auto r = client_.request("GET", api("/images/" + image + "/json"));
  if (r.ok()) return {};
  return failure(r, r.status == 404 ? Kind::kImageMissing : Kind::kOther);
}

dc::EngineError DockerApiEngine::image_info(const std::string& image, dc::ImageInfo& out) {
  auto r = client_.request("GET", api("/images/" + image + "/json"));
  if (!r.ok()) return failure(r, r.status == 404 ? Kind::kImageMissing : Kind::kOther);
  out = dc::image_info_from_inspect(json::parse(r.body, nullptr, false));
  if (out.id.empty()) return dc::EngineError::of(Kind::kOther, "the image's inspect has no Id");
  return {};
}

dc::EngineError DockerApiEngine::create_install(const dc::InstallSpec& spec) {
  auto r = client_.request("POST", api("/containers/create?name=" + url_encode(spec.name)),
                           dc::install_create_body(spec).dump());
  if (r.status == 201) return {};
  return failure(r, r.status == 404   ? Kind::kImageMissing
                    : r.status == 409 ? Kind::kConflict
                                      : Kind::kOther);
}

dc::EngineError DockerApiEngine::commit(const std::string& container,
                                        const dc::CommitOptions& options, std::string& image_id) {
  // The image's layer is written here: give it the time a large install takes to commit.
  auto r = client_.request(
      "POST",
      api("/commit?container=" + url_encode(container) + "&repo=" + url_encode(options.repo) +
          "&tag=" + url_encode(options.tag) + "&pause=0"),
      dc::commit_config(options).dump(), std::chrono::minutes(10));
  if (r.status != 201) return failure(r, r.status == 404 ? Kind::kNotFound : Kind::kOther);
  const auto doc = json::parse(r.body, nullptr, false);
  if (!doc.is_object() || !doc.contains("Id") || !doc["Id"].is_string())
    return dc::EngineError::of(Kind::kOther, "the commit's answer has no Id");
  image_id = doc["Id"].get<std::string>();
  return {};
}

dc::EngineError DockerApiEngine::list(const std::map<std::string, std::string>& labels,
                                      std::vector<dc::ContainerInfo>& out) {
  json wanted = json::array();
  for (const auto& [k, v] : labels) wanted.push_back(k + "=" + v);
  const json filters = {{"label", wanted}};
  auto r =
      client_.request("GET", api("/containers/json?all=1&filters=" + url_encode(filters.dump())));
  if (!r.ok()) return failure(r);
  const auto list = json::parse(r.body, nullptr, false);
  if (!list.is_array())
    return dc::EngineError::of(Kind::kOther, "the container list is not a list");
  // The list's shape differs from inspect's: Names, top-level Labels, State as a word.
  for (const auto& c : list) {
    if (!c.is_object()) continue;
    dc::ContainerInfo info;
    info.id = c.value("Id", std::string());
    if (c.contains("Names") && c["Names"].is_array() && !c["Names"].empty() &&
        c["Names"][0].is_string())
      info.name = c["Names"][0].get<std::string>();
    if (!info.name.empty() && info.name.front() == '/') info.name.erase(0, 1);
    if (c.contains("Labels") && c["Labels"].is_object())
      for (const auto& [k, v] : c["Labels"].items())
        if (v.is_string()) info.labels[k] = v.get<std::string>();
    if (c.contains("Mounts") && c["Mounts"].is_array())
      for (const auto& m : c["Mounts"]) {
        if (!m.is_object()) continue;
        info.mounts.push_back({m.value("Type", std::string()), m.value("Source", std::string()),
                               m.value("Destination", std::string()),
                               m.contains("RW") && m["RW"].is_boolean() && m["RW"].get<bool>()});
      }
    info.state.exists = true;
    info.state.running = c.value("State", std::string()) == "running";
    out.push_back(std::move(info));
  }
  return {};
}

dc::EngineError DockerApiEngine::inspect(const std::string& name, dc::ContainerInfo& out) {
  auto r =
      client_.request("GET", api("/containers/" + name + "/json"), {}, std::chrono::seconds(10));
  if (!r.ok()) return failure(r, r.status == 404 ? Kind::kNotFound : Kind::kOther);
  const auto j = json::parse(r.body, nullptr, false);
  if (!j.is_object())
    return dc::EngineError::of(Kind::kOther, "the container's inspect document is not JSON");
  out = dc::container_info_from_inspect(j);
  return {};
}

dc::EngineError DockerApiEngine::create(const dc::ContainerSpec& spec) {
  auto r = client_.request("POST", api("/containers/create?name=" + url_encode(spec.name)),
                           dc::container_create_body(spec).dump());
  if (r.status == 201) return {};
  return failure(r, r.status == 404   ? Kind::kImageMissing
                    : r.status == 409 ? Kind::kConflict
                                      : Kind::kOther);
}

dc::EngineError DockerApiEngine::start(const std::string& name) {
  auto r = client_.request("POST", api("/containers/" + name + "/start"));
  if (r.error.empty() && (r.status == 204 || r.status == 304)) return {};
  return failure(r, r.status == 404 ? Kind::kNotFound : Kind::kOther);
}

dc::EngineError DockerApiEngine::stop(const std::string& name, std::chrono::seconds timeout) {
  // The engine answers once the container has stopped: after `timeout` at most, and the kill.
  auto r = client_.request(
      "POST", api("/containers/" + name + "/stop?t=" + std::to_string(timeout.count())), {},
      timeout + std::chrono::seconds(60));
  if (r.error.empty() && (r.status == 204 || r.status == 304)) return {};
  return failure(r, r.status == 404 ? Kind::kNotFound : Kind::kOther);
}

dc::EngineError DockerApiEngine::remove(const std::string& name_or_id) {
  auto r = client_.request("DELETE", api("/containers/" + name_or_id + "?force=1&v=1"));
  if (r.ok()) return {};
  return failure(r, r.status == 404 ? Kind::kNotFound : Kind::kOther);
}

bool DockerApiEngine::wait_stopped(const std::string& name, std::chrono::milliseconds timeout) {
  auto r = client_.request("POST", api("/containers/" + name + "/wait?condition=not-running"), {},
                           timeout);
  return r.error.empty() && (r.status == 200 || r.status == 404);
}

dc::EngineError DockerApiEngine::create_network(const dc::NetworkSpec& spec) {
  const json body = {{"Name", spec.name},      {"Driver", "bridge"},    {"Internal", spec.internal},
                     {"CheckDuplicate", true}, {"Labels", spec.labels}, {"Options", spec.options},
                     {"Attachable", false}};
  auto r = client_.request("POST", api("/networks/create"), body.dump());
  if (r.status == 201) return {};
  return failure(r, r.status == 409 ? Kind::kConflict : Kind::kOther);
}

dc::EngineError DockerApiEngine::inspect_network(const std::string& name, dc::NetworkInfo& out) {
  auto r = client_.request("GET", api("/networks/" + url_encode(name)));
  if (!r.ok()) return failure(r, r.status == 404 ? Kind::kNotFound : Kind::kOther);
  const auto j = json::parse(r.body, nullptr, false);
  if (!j.is_object())
    return dc::EngineError::of(Kind::kOther, "the network's inspect document is not JSON");
  out = dc::network_info_from_inspect(j);
  return {};
}

dc::EngineError DockerApiEngine::list_networks(const std::map<std::string, std::string>& labels,
                                               std::vector<dc::NetworkInfo>& out) {
  out.clear();
  json wanted = json::array();
  for (const auto& [k, v] : labels) wanted.push_back(k + "=" + v);
  const json filters = {{"label", wanted}};
  auto r = client_.request("GET", api("/networks?filters=" + url_encode(filters.dump())));
  if (!r.ok()) return failure(r);
  const auto list = json::parse(r.body, nullptr, false);
  if (!list.is_array()) return dc::EngineError::of(Kind::kOther, "the network list is not a list");
  for (const auto& n : list) out.push_back(dc::network_info_from_inspect(n));
  return {};
}

dc::EngineError DockerApiEngine::connect_network(const std::string& network,
                                                 const std::string& container,
                                                 const std::string& alias) {
  json body = {{"Container", container}};
  if (!alias.empty()) body["EndpointConfig"] = {{"Aliases", json::array({alias})}};
  auto r =
      client_.request("POST", api("/networks/" + url_encode(network) + "/connect"), body.dump());
  if (r.error.empty() && r.status == 200) return {};
  return failure(r, r.status == 404 ? Kind::kNotFound : Kind::kOther);
}

dc::EngineError DockerApiEngine::remove_network(const std::string& name_or_id) {
  auto r = client_.request("DELETE", api("/networks/" + url_encode(name_or_id)));
  if (r.error.empty() && (r.status == 204 || r.status == 200)) return {};
  // 403: "network has active endpoints" (a container is still on it).
  return failure(r, r.status == 404                      ? Kind::kNotFound
                    : r.status == 403 || r.status == 409 ? Kind::kConflict
                                                         : Kind::kOther);
}

dc::EngineError DockerApiEngine::copy_into(const std::string& name, const std::string& dir,
                                           const std::string& tar) {
  auto r = client_.request("PUT", api("/containers/" + name + "/archive?path=" + url_encode(dir)),
                           tar, std::chrono::seconds(60), "application/x-tar");
  if (r.ok()) return {};
  return failure(r, r.status == 404 ? Kind::kNotFound : Kind::kOther);
}

dc::EngineError DockerApiEngine::copy_from(const std::string& name, const std::string& path,
                                           std::string& tar) {
  tar.clear();
  HttpResponse r;
  // Read as a stream, so that an archive past the bound is never held whole.
  auto body =
      client_.open_stream(api("/containers/" + name + "/archive?path=" + url_encode(path)), r);
  if (!body) return failure(r, r.status == 404 ? Kind::kNotFound : Kind::kOther);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      tar.clear();
      return dc::EngineError::sentence(
          Kind::kOther, "copying " + path + " out of container " + name + " timed out");
    }
    const auto got =
        body->read(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now), tar);
    if (!got.error.empty()) {
      tar.clear();
      return dc::EngineError::of(Kind::kUnreachable, got.error);
    }
    if (tar.size() > kMaxCopyFromBytes) {
      tar.clear();
      return dc::EngineError::sentence(
          Kind::kOther, "the archive of " + path + " in container " + name + " is larger than " +
                            std::to_string(kMaxCopyFromBytes >> 20) + " MiB");
    }
    if (got.eof) return {};
  }
}

dc::EngineError DockerApiEngine::logs(const std::string& name, std::string& text) {
  auto r = client_.request("GET", api("/containers/" + name + "/logs?stdout=1&stderr=1"), {},
                           std::chrono::seconds(30));
  if (!r.ok()) return failure(r, r.status == 404 ? Kind::kNotFound : Kind::kOther);
  std::string err;
  runner_client::demux_all(r.body, text, &err);
  if (!err.empty()) text += "\n[execmcp: log stream ended early: " + err + "]\n";
  return {};
}

std::unique_ptr<dc::LogStream> DockerApiEngine::follow_logs(const std::string& name,
                                                            const std::string& since,
                                                            dc::EngineError& error) {
  std::string path = "/containers/" + name + "/logs?follow=1&stdout=1&timestamps=1";
  if (!since.empty()) path += "&since=" + url_encode(since);
  HttpResponse r;
  auto body = client_.open_stream(api(path), r);
  if (!body) {
    error = failure(r, r.status == 404 ? Kind::kNotFound : Kind::kOther);
    return nullptr;
  }
  return std::make_unique<ApiLogStream>(std::move(body));
}

std::unique_ptr<dc::EventStream> DockerApiEngine::follow_events(const std::string& name,
                                                                const std::string& since,
                                                                dc::EngineError& error) {
  const json filters = {{"type", json::array({"container"})},
                        {"container", json::array({name})},
                        {"event", json::array({"kill", "die", "oom", "stop", "destroy"})}};
  std::string path = "/events?filters=" + url_encode(filters.dump());
  if (!since.empty()) path += "&since=" + url_encode(since);
  HttpResponse r;
  // Short: stop() waits for this thread, and the engine answers at once (it flushes the header).
  auto body = client_.open_stream(api(path), r, std::chrono::seconds(5));
  if (!body) {
    error = failure(r);
    return nullptr;
  }
  return std::make_unique<ApiEventStream>(std::move(body));
}

std::unique_ptr<ExecConnection> DockerApiEngine::start_exec(const std::string& name,
                                                            const dc::ExecOptions& options,
                                                            std::string& exec_id,
                                                            dc::EngineError& error) {
  json body = {{"Cmd", options.cmd},
               {"AttachStdout", true},
               {"AttachStderr", true},
               {"AttachStdin", options.attach_stdin},
               {"WorkingDir", options.work_dir},
               {"User", options.user},
               {"Tty", false}};
  if (!options.env.empty()) body["Env"] = options.env;
  auto r = client_.request("POST", api("/containers/" + name + "/exec"), body.dump());
  if (r.status != 201) {
    // 409: the container is not running (or paused).
    error = failure(r, r.status == 404   ? Kind::kNotFound
                       : r.status == 409 ? Kind::kNotRunning
                                         : Kind::kOther);
    return nullptr;
  }
  exec_id = json::parse(r.body, nullptr, false).value("Id", std::string());
  if (exec_id.empty()) {
    error = dc::EngineError::sentence(Kind::kOther, "Docker created an exec without an id");
    return nullptr;
  }
  std::string why;
  auto conn = client_.start_exec(api("/exec/" + exec_id + "/start"), why);
  if (!conn) error = dc::EngineError::sentence(Kind::kOther, why);
  return conn;
}

std::unique_ptr<dc::ExecSession> DockerApiEngine::exec(const std::string& name,
                                                       const dc::ExecOptions& options,
                                                       dc::EngineError& error) {
  std::string exec_id;
  auto conn = start_exec(name, options, exec_id, error);
  if (!conn) return nullptr;
  return std::make_unique<ApiExecSession>(*this, std::move(exec_id), std::move(conn));
}

std::optional<runner_client::ChannelEnds> DockerApiEngine::open_channel(
    const std::string& name, const dc::ExecOptions& options, dc::EngineError& error) {
  std::string exec_id;
  auto conn = start_exec(name, options, exec_id, error);
  if (!conn) return std::nullopt;
  if (!conn->upgraded()) {  // the runner would never hear from us
    error = dc::EngineError::sentence(Kind::kNoInput, "the exec stream was not upgraded");
    return std::nullopt;
  }
  std::string leftover;
  const int fd = conn->detach(leftover);
  if (fd < 0) {
    error = dc::EngineError::sentence(Kind::kOther, "the runner's exec stream closed at once");
    return std::nullopt;
  }
  return runner_client::ChannelEnds::docker_multiplexed(fd, std::move(leftover));
}

}  // namespace execmcp::plugins::docker_api
