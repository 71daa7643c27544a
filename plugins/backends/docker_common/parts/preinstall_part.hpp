// `preinstall` as a part of the container's lifecycle: before the agent's container is made, the
// image with the lists installed is found in the cache or built (through the agent's proxy with
// `network: egress`), and the container is made from it. With preinstall_on_failure: continue, a
// failed build leaves the base image and a notice for the next command's result.
#pragma once

#include <mutex>
#include <string>

#include "docker_common/engine/engine.hpp"
#include "docker_common/lifecycle/container_part.hpp"
#include "docker_common/parts/preinstall.hpp"

namespace execmcp::plugins::docker_common {

class ContainerLifecycle;

class PreinstallPart final : public ContainerPart {
 public:
  // Throws std::invalid_argument when a file the lists name is unusable or lies where this agent
  // can write (another agent's paths are known only at start).
  explicit PreinstallPart(ContainerLifecycle& lifecycle);

  std::string before_create() override { return prepare(); }
  std::string prepare_spec(ContainerSpec& spec) override;
  bool remake_image(const std::string& image, std::string& error) override;
  void decorate_result(std::uint64_t mark, sdk::ExecResult& result) override;

 private:
  // Finds or builds the image of the lists: "" and image_ set, or why the agent must not start
  // (with preinstall_on_failure: continue, a failure leaves the base image and notice_ instead).
  std::string prepare();
  // Builds the image of `plan` on `base` as cache_tag(`key`): "" and its id in `image_id`, or the
  // failure.
  std::string build(const ImageInfo& base, const PreinstallPlan& plan, const std::string& key,
                    std::string& image_id);

  ContainerLifecycle& lifecycle_;
  std::mutex mutex_;    // guards the two below
  std::string image_;   // the image id containers are made from; "": agent_image()
  std::string notice_;  // for the next command's result (preinstall_on_failure)
};

}  // namespace execmcp::plugins::docker_common
