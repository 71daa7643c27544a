// The command line the benches that time curls from inside a docker-api agent share
// (egress_bench, egress_secrets_bench): the plugin, the image, the curls per side, per call, and
// the agents started for the start-time medians.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "bench_plugin.hpp"

namespace execmcp::bench {

struct CurlBenchOptions {
  std::string plugin = kDockerApiPlugin;
  std::string image = "execmcp/runtime:latest";
  int samples = 200;  // curls per side
  int batch = 10;     // curls per call (one shell loop); the sides alternate call by call
  int starts = 3;     // agents started for the start-time medians
};

// --plugin, --image, --samples, --batch, --starts (each count >= 1), -h/--help (prints `usage`
// and exits 0). Throws std::invalid_argument on anything else. batch is at most samples.
inline CurlBenchOptions parse_curl_bench_options(int argc, char** argv, void (*usage)()) {
  CurlBenchOptions opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    auto count = [&]() {
      const int n = std::stoi(value());
      if (n < 1) throw std::invalid_argument(a + " must be >= 1");
      return n;
    };
    if (a == "--plugin") {
      opt.plugin = value();
    } else if (a == "--image") {
      opt.image = value();
    } else if (a == "--samples") {
      opt.samples = count();
    } else if (a == "--batch") {
      opt.batch = count();
    } else if (a == "--starts") {
      opt.starts = count();
    } else if (a == "-h" || a == "--help") {
      usage();
      std::exit(0);
    } else {
      throw std::invalid_argument("unknown option " + a);
    }
  }
  opt.batch = std::min(opt.batch, opt.samples);
  return opt;
}

}  // namespace execmcp::bench
