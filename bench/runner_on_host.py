#!/usr/bin/env python3
"""execmcp-runner alone, on the host: `true` through its frames over pipes, with no Docker in
between. Against execmcp_docker_bench's agent row it shows what the engine's stream relaying adds.

  python3 bench/runner_on_host.py [build/lib/execmcp/execmcp-runner] [calls]
"""
import statistics
import struct
import subprocess
import sys
import time

RUN, STDIN_END, DONE = 2, 4, 8


def main():
    runner = sys.argv[1] if len(sys.argv) > 1 else "build/lib/execmcp/execmcp-runner"
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    if not runner.startswith("/"):
        import os
        runner = os.path.abspath(runner)
    p = subprocess.Popen([runner, "--execmcp-runner-channel=1"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def frame(kind, call, payload=b""):
        return struct.pack(">IIB", len(payload), call, kind) + payload

    def read_frame():
        length, call, kind = struct.unpack(">IIB", p.stdout.read(9))
        return kind, call, p.stdout.read(length)

    read_frame()  # hello
    spec = b"\0".join([b"1048576", b"/tmp", b"/bin/sh", b"true"]) + b"\0"
    times = []
    for i in range(calls + 10):
        start = time.perf_counter()
        p.stdin.write(frame(RUN, i + 1, spec) + frame(STDIN_END, i + 1))
        p.stdin.flush()
        while read_frame()[0] != DONE:
            pass
        if i >= 10:  # warm-up
            times.append((time.perf_counter() - start) * 1000)
    p.stdin.close()
    p.wait()
    times.sort()
    print(f"execmcp-runner on the host, execute(true) x{calls}: "
          f"p50 {statistics.median(times):.2f} ms, p99 {times[int(len(times) * 0.99) - 1]:.2f} ms")


if __name__ == "__main__":
    main()
