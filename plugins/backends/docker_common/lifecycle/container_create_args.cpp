// Renders the per-agent container spec as `docker create` / `podman create` arguments.
#include "docker_common/lifecycle/container_create_args.hpp"

#include "docker_common/parts/preinstall.hpp"

namespace execmcp::plugins::docker_common {

std::string exact_cpus(std::int64_t nano_cpus) {
  // --cpus is parsed as an exact rational (Go's big.Rat): a double's rounding could move NanoCpus.
  constexpr std::int64_t kNano = 1'000'000'000;
  std::string out = std::to_string(nano_cpus / kNano);
  std::string fraction = std::to_string(nano_cpus % kNano);
  if (fraction == "0") return out;
  fraction.insert(0, 9 - fraction.size(), '0');
  while (fraction.back() == '0') fraction.pop_back();
  return out + "." + fraction;
}

std::string mount_field(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  return out + "\"";
}

namespace {

std::string bind_mount(const std::string& source, const std::string& target, bool read_only) {
  return "--mount=type=bind," + mount_field("source=" + source) + "," +
         mount_field("target=" + target) + (read_only ? ",readonly" : "");
}

// What the agent's container and the preinstall container share: no restart, a capped log.
void append_restart_and_log(std::vector<std::string>& a) {
  a.push_back("--restart=no");
  a.push_back("--log-driver=json-file");
  a.push_back(std::string("--log-opt=max-size=") + kLogMaxSize);
  a.push_back(std::string("--log-opt=max-file=") + kLogMaxFiles);
}

void append_memory(std::vector<std::string>& a, const std::optional<std::int64_t>& bytes) {
  if (!bytes) return;
  a.push_back("--memory=" + std::to_string(*bytes));
  // No swap beyond the limit, as in the create body: a hog is OOM-killed.
  a.push_back("--memory-swap=" + std::to_string(*bytes));
}

void append_pids_limit(std::vector<std::string>& a, std::int64_t limit, CliFlavor flavor) {
  if (limit > 0) {
    a.push_back("--pids-limit=" + std::to_string(limit));
  } else if (flavor == CliFlavor::kPodman) {
    a.push_back("--pids-limit=-1");  // Podman's default is 4096; Docker's is none
  }
}

}  // namespace

CreateArgs container_create_args(const ContainerSpec& spec, CliFlavor flavor) {
  CreateArgs out;
  if (spec.image.empty() || spec.image.front() == '-') {
    out.error = "the image reference '" + spec.image + "' cannot be given to the CLI";
    return out;
  }
  if (flavor == CliFlavor::kPodman && spec.disk_bytes) {
    out.error =
        "the 'disk' setting cannot be applied with Podman: Podman has no per-container size limit "
        "(its --storage-opt is a global storage-driver option); remove 'disk'";
    return out;
  }
  auto& a = out.args;
  a.push_back("--name=" + spec.name);
  // Nothing is ever pulled: a missing image is an error that names docker/build.sh.
  a.push_back("--pull=never");
  for (const auto& [k, v] : spec.labels) a.push_back("--label=" + k + "=" + v);
  for (const auto& e : spec.env) a.push_back("--env=" + e);
  if (!spec.user.empty()) a.push_back("--user=" + spec.user);  // empty: the image's, as "User": ""
  if (!spec.working_dir.empty()) a.push_back("--workdir=" + spec.working_dir);
  a.push_back("--network=" + spec.network);
  if (!spec.network_alias.empty()) a.push_back("--network-alias=" + spec.network_alias);
  if (!spec.runtime.empty()) a.push_back("--runtime=" + spec.runtime);
  a.push_back("--cap-drop=ALL");
  if (spec.sudo) {
    for (const char* cap : kSudoCapabilities) a.push_back(std::string("--cap-add=") + cap);
  } else {
    a.push_back("--security-opt=no-new-privileges");
  }
  a.push_back("--init");
  append_restart_and_log(a);
  append_memory(a, spec.memory_bytes);
  if (spec.nano_cpus) a.push_back("--cpus=" + exact_cpus(*spec.nano_cpus));
  if (spec.disk_bytes) a.push_back("--storage-opt=size=" + std::to_string(*spec.disk_bytes));
  if (spec.read_only_rootfs) {
    a.push_back("--read-only");
    // Podman would otherwise put tmpfs of its own over /run, /tmp and /var/tmp.
    if (flavor == CliFlavor::kPodman) a.push_back("--read-only-tmpfs=false");
  }
  for (const auto& [path, options] : spec.tmpfs) a.push_back("--tmpfs=" + path + ":" + options);
  append_pids_limit(a, spec.pids_limit, flavor);
  if (spec.nproc_limit > 0)
    a.push_back("--ulimit=nproc=" + std::to_string(spec.nproc_limit) + ":" +
                std::to_string(spec.nproc_limit));
  for (const auto& m : spec.mounts) a.push_back(bind_mount(m.source, m.target, m.read_only));
  if (spec.runner == RunnerDelivery::Bind)
    a.push_back(bind_mount(spec.runner_source, kRunnerPath, true));
  if (spec.runner == RunnerDelivery::Copy)
    a.push_back(std::string("--mount=type=volume,target=") + kRunnerDir);  // anonymous: rm -v
  // The CLI takes the program only; its arguments go before the command.
  if (!spec.entrypoint.empty()) a.push_back("--entrypoint=" + spec.entrypoint.front());
  for (const auto& target : spec.volumes)
    a.push_back("--mount=type=volume,target=" + target);  // anonymous: rm -v
  a.push_back(spec.image);
  if (!spec.entrypoint.empty())
    a.insert(a.end(), spec.entrypoint.begin() + 1, spec.entrypoint.end());
  a.insert(a.end(), spec.cmd.begin(), spec.cmd.end());
  return out;
}

CreateArgs install_create_args(const InstallSpec& spec, CliFlavor flavor) {
  CreateArgs out;
  if (spec.image.empty() || spec.image.front() == '-') {
    out.error = "the image reference '" + spec.image + "' cannot be given to the CLI";
    return out;
  }
  auto& a = out.args;
  a.push_back("--name=" + spec.name);
  a.push_back("--pull=never");
  if (!spec.user.empty()) a.push_back("--user=" + spec.user);
  a.push_back("--network=" + spec.network);
  a.push_back("--cap-drop=ALL");
  for (const char* cap : kInstallCapabilities) a.push_back(std::string("--cap-add=") + cap);
  a.push_back("--security-opt=no-new-privileges");
  append_restart_and_log(a);
  append_memory(a, spec.memory_bytes);
  append_pids_limit(a, spec.pids_limit, flavor);
  a.push_back(spec.image);
  a.insert(a.end(), spec.cmd.begin(), spec.cmd.end());
  return out;
}

}  // namespace execmcp::plugins::docker_common
