// The command line the benches that time curls from inside a docker-api agent share
// (egress_bench, egress_secrets_bench): the plugin, the image, the curls per side, per call, and
// the agents started for the start-time medians.
#pragma once

#include <algorithm>
#include <string>

#include "bench_plugin.hpp"
#include "bench_util.hpp"

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
  Args(usage)
      .text("--plugin", opt.plugin)
      .text("--image", opt.image)
      .count("--samples", opt.samples)
      .count("--batch", opt.batch)
      .count("--starts", opt.starts)
      .parse(argc, argv);
  opt.batch = std::min(opt.batch, opt.samples);
  return opt;
}

}  // namespace execmcp::bench
