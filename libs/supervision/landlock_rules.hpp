// Landlock for execmcp-runner in the local OS sandbox: the rules travel as the runner's arguments
// (built by the launcher from the sandbox's mounts), and the runner applies them to itself before
// it says hello, so its spare pool and every command inherit them. Paths are as the sandbox sees
// them. ABI 1 is refused (without REFER every cross-directory rename is EXDEV: git and pip break).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace execmcp::plugins::supervision::landlock {

inline constexpr std::string_view kRwArg = "--execmcp-landlock-rw=";      // read, write, execute
inline constexpr std::string_view kRoArg = "--execmcp-landlock-ro=";      // read and execute
inline constexpr std::string_view kListArg = "--execmcp-landlock-list=";  // list directories
inline constexpr std::string_view kMaxAbiArg = "--execmcp-landlock-max-abi=";

struct Rules {
  std::vector<std::string> rw, ro, list;
  int max_abi = 0;  // 0: no cap
  [[nodiscard]] bool empty() const { return rw.empty() && ro.empty() && list.empty(); }
};

// Parses one argument into `rules`: false when it is not a Landlock argument (or a malformed one).
bool parse_arg(std::string_view arg, Rules& rules);
std::vector<std::string> to_args(const Rules& rules);

// The kernel's Landlock ABI (0: none: not built in, or disabled at boot).
int kernel_abi();

// The access rights handled at `abi`, and those a rule of each kind grants (for directories;
// a rule on a file keeps the file rights only).
std::uint64_t handled_access(int abi);
std::uint64_t rw_access(int abi);
std::uint64_t ro_access(int abi);
std::uint64_t list_access(int abi);

// Restricts the calling thread (and what it starts) to `rules` at min(kernel ABI, max_abi).
// Returns the ABI applied, or 0 with `error` (ABI < 2, a path that cannot be opened, a refused
// syscall). Call it while single-threaded.
int apply(const Rules& rules, std::string& error);

}  // namespace execmcp::plugins::supervision::landlock
