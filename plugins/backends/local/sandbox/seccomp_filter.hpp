// The local sandbox's seccomp filter as the plugin carries it: BPF generated at build time from
// kRefusedSyscalls (seccomp_rules.hpp), handed to bubblewrap in a sealed memfd.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace execmcp::plugins::local::sandbox {

// The filter's bytes (struct sock_filter[], native architecture).
std::string_view seccomp_bpf();
std::size_t seccomp_instruction_count();
std::size_t seccomp_rule_count();

// A sealed memfd holding the filter, offset 0, close-on-exec; -1 and `error` on failure.
int seccomp_memfd(std::string& error);

}  // namespace execmcp::plugins::local::sandbox
