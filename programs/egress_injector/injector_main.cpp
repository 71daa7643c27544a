// execmcp-egress-injector: the egress proxy's process for the hosts an agent's secrets name
// (docs/architecture.md, "Secrets at the proxy"). In the proxy container it is PID 1's child:
//
//   execmcp-egress-injector --serve -- /usr/local/bin/execmcp-egress
//       listens on 127.0.0.1:3130 (Squid's parent for the secret hosts) and on the control socket,
//       runs the command (Squid) as its child, forwards SIGINT/SIGTERM to it and exits with its
//       status; if the injector fails, Squid goes with it (fail closed).
//   execmcp-egress-injector --receive
//       the bundle from stdin to the serving process (docker exec -i -u proxy ...).
//
// Squid stays the one enforcement point: the injector never resolves a name or connects out; it
// reaches every upstream through Squid's port 127.0.0.1:3129. One thread, one io_context, a
// coroutine per connection (Boost 1.74's asio::awaitable: linear code for a relay with a dozen
// steps, where callbacks would need a class per step).
#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it

#include <sys/prctl.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "control_socket.hpp"
#include "injector.hpp"
#include "proxy_session.hpp"

namespace execmcp::egress_injector {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

constexpr const char* kUsage =
    "usage: execmcp-egress-injector --serve [--listen ADDR:PORT] [--upstream-proxy ADDR:PORT]\n"
    "                                [--control PATH] [--pool N] -- COMMAND [ARG...]\n"
    "       execmcp-egress-injector --receive [--control PATH]\n";

struct Options {
  bool serve = false;
  bool receive = false;
  tcp::endpoint listen{asio::ip::make_address("127.0.0.1"), 3130};
  tcp::endpoint upstream_proxy{asio::ip::make_address("127.0.0.1"), 3129};
  std::string control = kDefaultControlPath;
  std::size_t pool = 4;
  std::vector<std::string> command;
};

tcp::endpoint parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) throw std::invalid_argument(text + ": expected ADDRESS:PORT");
  return {asio::ip::make_address(text.substr(0, colon)),
          static_cast<unsigned short>(std::stoul(text.substr(colon + 1)))};
}

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--serve")
      options.serve = true;
    else if (arg == "--receive")
      options.receive = true;
    else if (arg == "--listen")
      options.listen = parse_endpoint(value());
    else if (arg == "--upstream-proxy")
      options.upstream_proxy = parse_endpoint(value());
    else if (arg == "--control")
      options.control = value();
    else if (arg == "--pool")
      options.pool = std::stoul(value());
    else if (arg == "--") {
      options.command.assign(argv + i + 1, argv + argc);
      break;
    } else {
      throw std::invalid_argument("unknown argument " + arg);
    }
  }
  if (options.serve == options.receive) throw std::invalid_argument("give --serve or --receive");
  if (options.serve && options.command.empty())
    throw std::invalid_argument("--serve needs the command to run after --");
  return options;
}

void rethrow(std::exception_ptr error) {
  if (error) std::rethrow_exception(error);
}

asio::awaitable<void> accept_loop(tcp::acceptor& acceptor, Injector& injector) {
  for (;;) {
    auto socket = co_await acceptor.async_accept(asio::use_awaitable);
    if (injector.sessions() >= injector.limits().max_sessions) continue;  // closed: Squid retries
    ++injector.sessions();
    asio::co_spawn(
        acceptor.get_executor(),
        [&injector, socket = std::move(socket)]() mutable -> asio::awaitable<void> {
          try {
            co_await run_session(std::move(socket), injector);
          } catch (const std::exception& e) {
            std::fprintf(stderr, "execmcp-egress-injector: session ended: %s\n", e.what());
          }
          --injector.sessions();
        },
        asio::detached);
  }
}

int serve(const Options& options) {
  ::signal(SIGPIPE, SIG_IGN);
  // The secrets live in this process's memory: no core dump, and no ptrace or /proc/PID/mem for
  // the other processes of its user (Squid runs as the same user).
  ::prctl(PR_SET_DUMPABLE, 0);
  asio::io_context io(1);
  Injector injector(options.upstream_proxy, options.pool);
  tcp::acceptor acceptor(io);
  acceptor.open(options.listen.protocol());
  acceptor.set_option(tcp::acceptor::reuse_address(true));
  acceptor.bind(options.listen);
  acceptor.listen(asio::socket_base::max_listen_connections);
  ControlSocket control(io, options.control, injector);
  // Signals are caught before the child exists, so that an early exit of it is not missed.
  asio::signal_set signals(io, SIGINT, SIGTERM, SIGCHLD);
  ChildProcess child(options.command);
  int status = 70;
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int number) {
        if (ec) return;
        if (number != SIGCHLD) child.signal(number);
        if (child.reap(status)) {
          io.stop();
          return;
        }
        signals.async_wait(on_signal);
      };
  signals.async_wait(on_signal);
  asio::co_spawn(io, accept_loop(acceptor, injector), rethrow);
  asio::co_spawn(io, control.serve(), rethrow);
  try {
    io.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "execmcp-egress-injector: %s; stopping the proxy\n", e.what());
    return 70;  // ~ChildProcess kills Squid: no proxy without its injector
  }
  std::fflush(stdout);
  return status;
}

}  // namespace

void emit_event(const egress_secrets::SecretEvent& event) {
  std::string line = egress_secrets::format_event_line(event);
  if (line.empty() || line.back() != '\n') line += '\n';
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(STDOUT_FILENO, line.data() + done, line.size() - done);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace execmcp::egress_injector

int main(int argc, char** argv) {
  using namespace execmcp::egress_injector;
  Options options;
  try {
    options = parse_options(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "execmcp-egress-injector: %s\n%s", e.what(), kUsage);
    return 2;
  }
  if (options.receive) return receive_bundle(options.control);
  try {
    return serve(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "execmcp-egress-injector: %s; the proxy is not started\n", e.what());
    return 70;
  }
}
