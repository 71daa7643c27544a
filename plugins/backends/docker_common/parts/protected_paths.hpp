// Protected paths as a part of the container's lifecycle: a protection never lapses, so each
// protected path of a writable grant must be there at every container start, and be the file it
// was at this process's first start (by device and inode), or the container does not start.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "docker_common/lifecycle/container_part.hpp"

namespace execmcp::plugins::docker_common {

class ContainerLifecycle;

class ProtectedPathsPart final : public ContainerPart {
 public:
  explicit ProtectedPathsPart(ContainerLifecycle& lifecycle) : lifecycle_(lifecycle) {}

  // "" when every protected path of a writable grant exists and is the file it was at the first
  // check (recorded then), else why the container must not start. Also for an attached
  // container, whose read-only mount of a protected path is only worth something if it is there.
  std::string check();

  std::string prepare_spec(ContainerSpec& spec) override;
  // A rename keeps each file's inode: the protected paths are the same files at new names.
  void on_relocate(const std::string& from, const std::string& to) override;

 private:
  ContainerLifecycle& lifecycle_;
  std::mutex mutex_;  // guards ids_
  // Each protected path's (st_dev, st_ino) at the first start of this process.
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> ids_;
};

}  // namespace execmcp::plugins::docker_common
