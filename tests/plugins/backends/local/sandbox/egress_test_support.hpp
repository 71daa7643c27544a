// Shared by the local sandbox's egress tests: a local "internet", python3's http.server on one of
// this machine's own non-loopback addresses (traffic to it never leaves the machine), and the
// hosts file that names it for the proxy (allowed.execmcp.test and denied.execmcp.test).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace execmcp_egress_test {

// One of this machine's own IPv4 addresses other than loopback ("" when none): traffic to it
// never leaves the machine.
inline std::string own_address() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return {};
  std::string found;
  for (auto* a = list; a != nullptr && found.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
    char text[INET_ADDRSTRLEN];
    found = ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
  }
  ::freeifaddrs(list);
  return found;
}

inline std::uint16_t free_port(const std::string& address) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  ::inet_pton(AF_INET, address.c_str(), &addr.sin_addr);
  socklen_t len = sizeof addr;
  std::uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

inline bool accepts(const std::string& address, std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, address.c_str(), &addr.sin_addr);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

// The HTTP server and its hosts file under `root` (which it creates); `error()` says why not.
class LocalInternet {
 public:
  explicit LocalInternet(const std::string& root) : root_(root) {
    address_ = own_address();
    if (address_.empty()) {
      error_ = "no non-loopback IPv4 address on this machine";
      return;
    }
    std::filesystem::create_directories(root_ + "/www");
    ::chmod(root_.c_str(), 0755);
    std::ofstream(root_ + "/www/hello.txt") << "HELLO-FROM-THE-LOCAL-INTERNET\n";
    std::ofstream(root_ + "/hosts") << address_ << " allowed.execmcp.test\n"
                                    << address_ << " denied.execmcp.test\n";
    ::chmod((root_ + "/hosts").c_str(), 0644);
    port_ = free_port(address_);
    const std::string port = std::to_string(port_);
    std::vector<std::string> args{"/usr/bin/python3", "-m",     "http.server", port,
                                  "--bind",           address_, "--directory", root_ + "/www"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    if (::posix_spawn(&server_, argv[0], &actions, nullptr, argv.data(), environ) != 0)
      server_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    for (int i = 0; i < 200 && server_ > 0 && !accepts(address_, port_); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (server_ <= 0 || !accepts(address_, port_)) error_ = "the test's HTTP server did not start";
  }
  ~LocalInternet() {
    if (server_ > 0) {
      ::kill(server_, SIGKILL);
      ::waitpid(server_, nullptr, 0);
    }
  }
  LocalInternet(const LocalInternet&) = delete;
  LocalInternet& operator=(const LocalInternet&) = delete;

  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] const std::string& address() const { return address_; }
  [[nodiscard]] std::uint16_t port() const { return port_; }
  [[nodiscard]] std::string hosts_file() const { return root_ + "/hosts"; }

 private:
  std::string root_, address_, error_;
  std::uint16_t port_ = 0;
  pid_t server_ = -1;
};

}  // namespace execmcp_egress_test
