// The `preinstall` setting as data: the local files it names, the cache key of the image it makes,
// the install script, and the bodies that create the install container and commit it. No engine
// here: PreinstallPart (preinstall_part.hpp) drives the build.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "docker_common/engine/engine.hpp"
#include "docker_common/lifecycle/mount_source.hpp"
#include "docker_common/settings/docker_settings.hpp"

namespace execmcp::plugins::docker_common {

// Where the local files are copied in the install container (removed before the commit).
inline constexpr const char* kPreinstallDir = "/.execmcp-preinstall";
// The cached images: `execmcp/cache:<first 16 hex digits of the key>`.
inline constexpr const char* kCacheRepo = "execmcp/cache";
inline constexpr const char* kLabelCacheKey = "execmcp.cache.key";
inline constexpr const char* kLabelCacheBase = "execmcp.cache.base";
inline constexpr const char* kLabelCacheLists = "execmcp.cache.lists";
// Install containers are named `execmcp-preinstall-<key16>-<random>` (no label: a label would be
// committed into the image, and from there into every agent's container).
inline constexpr const char* kInstallNamePrefix = "execmcp-preinstall-";
// The local files are read into memory (hashed and copied from the same bytes): this bounds them.
inline constexpr std::size_t kMaxLocalBytes = std::size_t{256} << 20;
// The lines of the install log a failure quotes.
inline constexpr std::size_t kFailureLogLines = 30;

// A local file named by an entry: the bytes read once, their hash, where the install sees them.
struct PreinstallFile {
  std::string host_path;
  std::string container_path;  // kPreinstallDir/<n>/<file name>
  std::string data;
  std::string sha256;  // hex
};

struct PreinstallPlan {
  PreinstallSettings lists;  // as configured
  std::vector<PreinstallFile> files;
  // The lists as the installers get them: each local file by its container path.
  std::vector<std::string> system, python, npm;
  std::string error;  // why the files cannot be used ("" when they can)
};

// "" when every entry that is an absolute path names a regular file, else why not (for the
// constructor: check-config says so, not the first start).
std::string check_preinstall_files(const PreinstallSettings& settings);

// "" when no entry that is an absolute path lies inside a writable root (nor is reached through a
// symlink or a missing directory: check_input_file()), else why not. The install runs the files
// as root: an agent must not be able to choose their bytes.
std::string check_preinstall_inputs(const PreinstallSettings& settings,
                                    const std::vector<WritableRoot>& writable);

// Reads every entry that is an absolute path: it must be a regular file, and all of them together
// at most kMaxLocalBytes.
PreinstallPlan plan_preinstall(const PreinstallSettings& settings);

// SHA-256 (OpenSSL) in lower-case hex.
std::string sha256_hex(std::string_view data);

// SHA-256 of "execmcp-preinstall/1", the base image's id and the three lists in order, each local
// file entry replaced by its content hash and file name: the same packages on the same base give
// the same key wherever the files lie; a rebuilt base, a changed file or list gives another.
std::string preinstall_key(const std::string& base_image_id, const PreinstallPlan& plan);

// "execmcp/cache:<key[0:16]>".
std::string cache_tag(const std::string& key);

// The script the install container runs with `sh -eu -c`, in MassGen's order: system (apt-get
// update, unless every entry is a local .deb, then apt-get install), python (pip), npm. Before
// each step it prints "execmcp-preinstall: step <name>" to stderr, so a failure names its step.
// `exports` ("KEY=VALUE", e.g. the egress proxy's variables) are exported by the script itself,
// not given as the container's environment, so that the committed image does not keep them.
std::string preinstall_script(const PreinstallPlan& plan,
                              const std::vector<std::string>& exports = {});

// The local files as one tar archive to unpack at "/" (directories root's, 0755; files 0644).
std::string preinstall_tar(const PreinstallPlan& plan);

// The lists as the label kLabelCacheLists shows them (JSON; package names are not secrets).
std::string lists_label(const PreinstallSettings& settings);

// The step named by the last "execmcp-preinstall: step" line of `log` ("setup" when none).
std::string failed_step(const std::string& log);

// "preinstall failed at step <step> (exit code <code>); the last lines of its log:\n..."
std::string preinstall_failure(const std::string& log, int exit_code);

// What the install container keeps of root's capabilities (CapDrop ALL, then these): dpkg and
// apt need CHOWN, DAC_OVERRIDE, FOWNER and FSETID to unpack files with their owners and modes
// (setuid bits included) and to prepare apt's own directories, SETUID and SETGID to drop to the
// _apt user. Docker's other defaults (NET_RAW, MKNOD, SYS_CHROOT, KILL, SETFCAP, ...) are gone.
// Written as the docker CLI normalizes --cap-add (CAP_ prefix, sorted).
inline constexpr std::array<const char*, 6> kInstallCapabilities = {
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_SETGID", "CAP_SETUID"};

// The body of POST /containers/create for the install container.
nlohmann::json install_create_body(const InstallSpec& spec);

// The body of POST /commit (the committed image's config; the engine takes the rest from the
// container, which has the base image's).
nlohmann::json commit_config(const CommitOptions& options);
// The same as `docker commit --change` instructions (Dockerfile syntax).
std::vector<std::string> commit_changes(const CommitOptions& options);

}  // namespace execmcp::plugins::docker_common
