// The benches' shared helpers (see bench_util.hpp).
#include "bench_util.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>

extern char** environ;

namespace execmcp::bench {

Percentiles percentiles(std::vector<double> ms) {
  Percentiles p;
  p.n = ms.size();
  if (ms.empty()) return p;
  std::sort(ms.begin(), ms.end());
  auto rank = [&](double q) {
    const auto r = static_cast<std::size_t>(std::ceil(q * static_cast<double>(ms.size())));
    return ms[std::min(ms.size() - 1, r == 0 ? 0 : r - 1)];
  };
  p.p50 = rank(0.50);
  p.p90 = rank(0.90);
  p.p99 = rank(0.99);
  p.max = ms.back();
  return p;
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

std::string random_hex(std::size_t bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::random_device random;
  std::string out;
  for (std::size_t i = 0; i < bytes; ++i) {
    const unsigned byte = random() & 0xFF;
    out += {kHex[byte >> 4], kHex[byte & 0xF]};
  }
  return out;
}

int spawn_quiet(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) != pid) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

std::string capture(const std::string& command, int* status) {
  std::string out;
  FILE* p = ::popen((command + " 2>/dev/null").c_str(), "r");
  if (p == nullptr) {
    if (status != nullptr) *status = -1;
    return out;
  }
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = ::pclose(p);
  if (status != nullptr) *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

std::string output_of(const std::string& command) {
  std::string out = capture(command);
  if (const auto nl = out.find('\n'); nl != std::string::npos) out.resize(nl);
  return out;
}

std::string load_average() {
  const std::string line = output_of("cat /proc/loadavg");
  std::size_t end = 0;
  for (int fields = 0; fields < 3 && end != std::string::npos; ++fields)
    end = line.find(' ', end == 0 ? 0 : end + 1);
  return line.substr(0, end);
}

int run_main(const char* program, const std::function<int()>& run) {
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
}

TempDir::TempDir(const std::string& prefix) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  root = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
}

Args& Args::text(const std::string& name, std::string& out) {
  return value(name, [&out](const std::string& v) { out = v; });
}

Args& Args::count(const std::string& name, int& out, int least) {
  return value(name, [&out, name, least](const std::string& v) {
    std::size_t used = 0;
    int n = 0;
    try {
      n = std::stoi(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != v.size())
      throw std::invalid_argument(name + " needs a whole number, not '" + v + "'");
    if (n < least) throw std::invalid_argument(name + " must be at least " + std::to_string(least));
    out = n;
  });
}

Args& Args::flag(const std::string& name, bool& out, bool value) {
  flags_[name] = [&out, value] { out = value; };
  return *this;
}

Args& Args::value(const std::string& name, std::function<void(const std::string&)> take) {
  values_[name] = std::move(take);
  return *this;
}

void Args::parse(int argc, char** argv) const {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      usage_();
      std::exit(0);
    }
    if (const auto f = flags_.find(a); f != flags_.end()) {
      f->second();
      continue;
    }
    const auto v = values_.find(a);
    if (v == values_.end())
      throw std::invalid_argument("unknown option " + a + " (--help lists them)");
    if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
    v->second(argv[++i]);
  }
}

}  // namespace execmcp::bench
