// The benches' HTTP/1.1 client and `execmcp serve --http` process (see http_client.hpp).
#include "http_client.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace execmcp::bench {

namespace {

using Clock = std::chrono::steady_clock;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

long status_kib(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(field.size()));
  return 0;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

HttpServerProcess::HttpServerProcess(const std::string& bin, const std::string& config,
                                     const std::vector<std::string>& extra_args,
                                     const std::string& stderr_file) {
  std::vector<std::string> argv = {bin, "serve", "--config", config, "--http", "127.0.0.1:0"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  const int rc = posix_spawn(&pid_, bin.c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + bin + ": " + std::strerror(rc));
  // The port is chosen by the kernel (:0), so it is only known from the log line.
  static const std::regex listening(R"(listening on http://127\.0\.0\.1:([0-9]+))");
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < deadline) {
    const std::string log = read_file(stderr_file);
    std::smatch m;
    if (std::regex_search(log, m, listening)) {
      port_ = static_cast<std::uint16_t>(std::stoi(m[1].str()));
      return;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("execmcp serve --http exited at start:\n" + log);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop();
  throw std::runtime_error("execmcp serve --http did not log its port within 30 s:\n" +
                           read_file(stderr_file));
}

HttpServerProcess::~HttpServerProcess() {
  stop();
}

int HttpServerProcess::stop(std::chrono::seconds grace) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  const auto deadline = Clock::now() + grace;
  for (;;) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) break;
    if (Clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      pid_ = -1;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

long HttpServerProcess::peak_rss_kib() const {
  return status_kib(pid_, "VmHWM:");
}

long HttpServerProcess::rss_kib() const {
  return status_kib(pid_, "VmRSS:");
}

HttpConnection::HttpConnection(std::uint16_t port) : port_(port) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  // Requests are small and answered one at a time: no Nagle delay on the request's last bytes.
  const int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int e = errno;
    close(fd_);
    throw std::runtime_error(std::string("connect: ") + std::strerror(e));
  }
}

HttpConnection::~HttpConnection() {
  if (fd_ >= 0) close(fd_);
}

void HttpConnection::read_more(Clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) throw std::runtime_error("timed out waiting for the HTTP response");
    pollfd pfd{fd_, POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char chunk[65536];
    const ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) throw std::runtime_error(std::string("recv: ") + std::strerror(errno));
    if (n == 0) throw std::runtime_error("the server closed the connection");
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return;
  }
}

std::string HttpConnection::read_line(Clock::time_point deadline) {
  for (;;) {
    const auto end = buffer_.find("\r\n");
    if (end != std::string::npos) {
      std::string line = buffer_.substr(0, end);
      buffer_.erase(0, end + 2);
      return line;
    }
    read_more(deadline);
  }
}

std::string HttpConnection::read_exact(std::size_t n, Clock::time_point deadline) {
  while (buffer_.size() < n) read_more(deadline);
  std::string out = buffer_.substr(0, n);
  buffer_.erase(0, n);
  return out;
}

void HttpConnection::abort() {
  ::shutdown(fd_, SHUT_RDWR);
}

HttpResponse HttpConnection::post(const std::string& path, const HttpHeaders& headers,
                                  const std::string& body, std::chrono::milliseconds timeout) {
  std::string request =
      "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) + "\r\n";
  for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
  request += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return exchange(request, timeout);
}

HttpResponse HttpConnection::get(const std::string& path, const HttpHeaders& headers,
                                 std::chrono::milliseconds timeout) {
  std::string request =
      "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) + "\r\n";
  for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
  return exchange(request + "\r\n", timeout);
}

HttpResponse HttpConnection::send_raw(const std::string& bytes, std::chrono::milliseconds timeout) {
  return exchange(bytes, timeout);
}

HttpResponse HttpConnection::exchange(const std::string& request,
                                      std::chrono::milliseconds timeout) {
  std::size_t done = 0;
  while (done < request.size()) {
    const ssize_t n = send(fd_, request.data() + done, request.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(std::string("send: ") + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  const auto deadline = Clock::now() + timeout;
  HttpResponse response;
  const std::string status_line = read_line(deadline);
  if (status_line.rfind("HTTP/1.1 ", 0) != 0 || status_line.size() < 12)
    throw std::runtime_error("bad HTTP status line: " + status_line.substr(0, 100));
  response.status = std::stoi(status_line.substr(9, 3));
  long content_length = -1;
  bool chunked = false;
  for (;;) {
    const std::string line = read_line(deadline);
    if (line.empty()) break;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = lower(line.substr(0, colon));
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    response.headers.emplace_back(name, value);
    if (name == "content-length") content_length = std::stol(value);
    if (name == "transfer-encoding" && lower(value).find("chunked") != std::string::npos)
      chunked = true;
    if (name == "connection" && lower(value).find("close") != std::string::npos)
      response.close = true;
  }
  if (chunked) {
    for (;;) {
      const std::size_t size = std::stoul(read_line(deadline), nullptr, 16);
      if (size == 0) {
        while (!read_line(deadline).empty()) {
        }
        break;
      }
      response.body += read_exact(size, deadline);
      read_line(deadline);
    }
  } else if (content_length >= 0) {
    response.body = read_exact(static_cast<std::size_t>(content_length), deadline);
  } else {
    throw std::runtime_error("HTTP response without Content-Length or chunked encoding");
  }
  return response;
}

std::string HttpResponse::header(const std::string& name) const {
  for (const auto& [key, value] : headers)
    if (key == name) return value;
  return {};
}

std::string stateless_call_body(long id, const std::string& tool, const std::string& arguments) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":")" + tool + R"(","arguments":)" + arguments +
         R"(,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
         R"("io.modelcontextprotocol/clientCapabilities":{}}}})";
}

HttpHeaders stateless_call_headers(const std::string& tool) {
  return {{"Content-Type", "application/json"},
          {"Accept", "application/json, text/event-stream"},
          {"MCP-Protocol-Version", "2026-07-28"},
          {"Mcp-Method", "tools/call"},
          {"Mcp-Name", tool}};
}

std::string stateless_exec_body(long id, const std::string& command) {
  return stateless_call_body(id, "execute_command", R"({"command":")" + command + R"("})");
}

HttpHeaders stateless_exec_headers() {
  return stateless_call_headers("execute_command");
}

std::string rpc_of_body(const std::string& body) {
  if (body.rfind("event:", 0) != 0 && body.rfind("data:", 0) != 0) return body;
  std::string last;
  std::size_t pos = 0;
  while ((pos = body.find("data:", pos)) != std::string::npos) {
    const auto end = body.find('\n', pos);
    last = body.substr(pos + 5, end == std::string::npos ? std::string::npos : end - pos - 5);
    pos = end == std::string::npos ? body.size() : end;
  }
  return last;
}

}  // namespace execmcp::bench
