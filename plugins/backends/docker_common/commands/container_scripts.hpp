// The shell and Python scripts the Docker backend runs in a container, kept as files in scripts/
// and compiled in by embed_scripts.cmake (their descriptions are in the files).
#pragma once

namespace execmcp::plugins::docker_common::scripts {

extern const char* const kCallWrapper;    // call_wrapper.sh: exec mode's wrapper of each command
extern const char* const kSweepPython;    // sweep.py: the kill sweep, with python3
extern const char* const kSweepShell;     // sweep.sh: the kill sweep, without python3
extern const char* const kTermMarked;     // term_marked.sh: SIGTERM to a call's processes
extern const char* const kDeliverRunner;  // deliver_runner.sh: attach mode's runner delivery

}  // namespace execmcp::plugins::docker_common::scripts
