// The Engine API over a unix socket or tcp: docker-api's engine under the shared ContainerBackend.
#pragma once

#include <mutex>
#include <string>

#include "docker_client/docker_client.hpp"
#include "docker_common/engine/engine.hpp"

namespace execmcp::plugins::docker_api {

// The Engine API's HTTP client, shared with the docker-swarm backend
// (plugins/backends/docker_client).
using docker_client::BodyStream;
using docker_client::DockerClient;
using docker_client::DockerEndpoint;
using docker_client::ExecConnection;
using docker_client::HttpResponse;

class DockerApiEngine final : public docker_common::Engine {
 public:
  // `docker_host`: the setting (empty: $DOCKER_HOST, then the default socket). Throws
  // std::invalid_argument on an address it cannot use.
  explicit DockerApiEngine(const std::string& docker_host);

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] bool sees_host_files() const override;

  docker_common::EngineError connect() override;
  docker_common::EngineError runtimes(docker_common::RuntimeList& out) override;
  docker_common::EngineError check_image(const std::string& image) override;
  docker_common::EngineError image_info(const std::string& image,
                                        docker_common::ImageInfo& out) override;
  docker_common::EngineError create_install(const docker_common::InstallSpec& spec) override;
  docker_common::EngineError commit(const std::string& container,
                                    const docker_common::CommitOptions& options,
                                    std::string& image_id) override;
  docker_common::EngineError list(const std::map<std::string, std::string>& labels,
                                  std::vector<docker_common::ContainerInfo>& out) override;
  docker_common::EngineError inspect(const std::string& name,
                                     docker_common::ContainerInfo& out) override;
  docker_common::EngineError create(const docker_common::ContainerSpec& spec) override;
  docker_common::EngineError start(const std::string& name) override;
  docker_common::EngineError stop(const std::string& name, std::chrono::seconds timeout) override;
  docker_common::EngineError remove(const std::string& name_or_id) override;
  bool wait_stopped(const std::string& name, std::chrono::milliseconds timeout) override;
  docker_common::EngineError create_network(const docker_common::NetworkSpec& spec) override;
  docker_common::EngineError inspect_network(const std::string& name,
                                             docker_common::NetworkInfo& out) override;
  docker_common::EngineError list_networks(const std::map<std::string, std::string>& labels,
                                           std::vector<docker_common::NetworkInfo>& out) override;
  docker_common::EngineError connect_network(const std::string& network,
                                             const std::string& container,
                                             const std::string& alias) override;
  docker_common::EngineError remove_network(const std::string& name_or_id) override;
  docker_common::EngineError copy_into(const std::string& name, const std::string& dir,
                                       const std::string& tar) override;
  docker_common::EngineError copy_from(const std::string& name, const std::string& path,
                                       std::string& tar) override;
  docker_common::EngineError logs(const std::string& name, std::string& text) override;
  std::unique_ptr<docker_common::LogStream> follow_logs(const std::string& name,
                                                        const std::string& since,
                                                        docker_common::EngineError& error) override;
  std::unique_ptr<docker_common::EventStream> follow_events(
      const std::string& name, const std::string& since,
      docker_common::EngineError& error) override;
  std::unique_ptr<docker_common::ExecSession> exec(const std::string& name,
                                                   const docker_common::ExecOptions& options,
                                                   docker_common::EngineError& error) override;
  std::optional<runner_client::ChannelEnds> open_channel(
      const std::string& name, const docker_common::ExecOptions& options,
      docker_common::EngineError& error) override;
  [[nodiscard]] bool input_always_arrives() const override { return false; }

  // `path` with the negotiated version in front ("/v1.41/containers/...").
  std::string api(const std::string& path);
  DockerClient& client() { return client_; }

 private:
  // Creates and starts an exec; null and `error` on failure.
  std::unique_ptr<ExecConnection> start_exec(const std::string& name,
                                             const docker_common::ExecOptions& options,
                                             std::string& exec_id,
                                             docker_common::EngineError& error);

  DockerClient client_;
  std::mutex mutex_;  // guards api_version_
  std::string api_version_;
};

}  // namespace execmcp::plugins::docker_api
