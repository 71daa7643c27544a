// See sandbox_limits.hpp.
#include "sandbox_limits.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>
#include <vector>

namespace execmcp::plugins::local {

namespace {

using sandbox::CgroupController;

std::string mib(std::int64_t bytes) {
  return std::to_string(bytes / (1024 * 1024)) + " MiB";
}

std::string cpus_text(double cpus) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", cpus);
  return text;
}

}  // namespace

LimitsPlan plan_limits(const SandboxSettings& settings,
                       const sandbox::CgroupAvailability& available) {
  LimitsPlan plan;
  auto& l = plan.limits;
  l.memory_bytes = settings.memory_bytes;
  if (settings.pids_limit > 0) l.pids = settings.pids_limit;
  l.cpus = settings.cpus;
  l.cpu_share = true;
  plan.required = (settings.memory_set && l.memory_bytes) || (settings.pids_limit_set && l.pids) ||
                  (settings.cpus_set && l.cpus);
  std::vector<std::string> left_out;
  std::set<std::string> why_left_out;
  for (CgroupController c : l.controllers()) {
    const std::string problem = available.problem(c);
    if (problem.empty()) continue;
    switch (c) {
      case CgroupController::kMemory:
        if (settings.memory_set) {
          plan.error += (plan.error.empty() ? "" : "; ") + std::string("sandbox.memory (") +
                        mib(*l.memory_bytes) + ") needs a memory cgroup: " + problem;
        } else {
          left_out.push_back("memory (" + mib(*l.memory_bytes) + ")");
          why_left_out.insert(problem);
        }
        l.memory_bytes.reset();
        break;
      case CgroupController::kPids:
        if (settings.pids_limit_set) {
          plan.error += (plan.error.empty() ? "" : "; ") + std::string("sandbox.pids_limit (") +
                        std::to_string(*l.pids) + ") needs a pids cgroup: " + problem;
        } else {
          left_out.push_back("pids (" + std::to_string(*l.pids) + ")");
          why_left_out.insert(problem);
        }
        l.pids.reset();
        break;
      case CgroupController::kCpu:
        if (settings.cpus_set) {
          plan.error += (plan.error.empty() ? "" : "; ") + std::string("sandbox.cpus (") +
                        cpus_text(*l.cpus) + ") needs a cpu cgroup: " + problem;
        } else {
          left_out.push_back("a CPU share of its own");
          why_left_out.insert(problem);
        }
        l.cpus.reset();
        l.cpu_share = false;
        break;
    }
  }
  if (!plan.error.empty())
    plan.error +=
        " (the sandbox's limits: set it to \"none\" / 0, or leave it out, to run "
        "without it)";
  if (!left_out.empty()) {
    std::string list, why;
    for (const auto& item : left_out) list += (list.empty() ? "" : ", ") + item;
    for (const auto& item : why_left_out) why += (why.empty() ? "" : "; ") + item;
    plan.warning = "the sandbox runs WITHOUT its default limits on " + list + ": " + why +
                   " (set sandbox.memory / pids_limit / cpus to require them: the agent then does "
                   "not start without them)";
  }
  std::string summary;
  auto add = [&](const std::string& item) { summary += (summary.empty() ? "" : ", ") + item; };
  if (l.memory_bytes) add("memory " + mib(*l.memory_bytes));
  if (l.pids) add("pids " + std::to_string(*l.pids));
  if (l.cpus) {
    add("cpus " + cpus_text(*l.cpus));
  } else if (l.cpu_share) {
    add("CPU shared with other sandboxes (no quota)");
  }
  plan.summary = summary.empty()
                     ? "none"
                     : summary + " (a cgroup " + available.version + " of its own per sandbox)";
  return plan;
}

std::string sandbox_cgroup_name(const std::string& agent_id, const std::string& instance_id) {
  static std::atomic<unsigned long> made{0};
  const std::string instance = instance_id.empty() ? std::to_string(::getpid()) : instance_id;
  return "execmcp-" + agent_id + "-" + instance + "-" + std::to_string(++made);
}

void remove_leftover_sandbox_cgroups(const std::string& agent_id) {
  static std::mutex mutex;
  static std::set<std::string> done;
  {
    std::lock_guard lock(mutex);
    if (!done.insert(agent_id).second) return;
  }
  sandbox::remove_leftover_cgroups("execmcp-" + agent_id + "-");
}

std::shared_ptr<sandbox::SandboxCgroup> make_sandbox_cgroup(const LimitsPlan& plan,
                                                            const std::string& name,
                                                            std::string& error,
                                                            std::string& warning) {
  if (plan.limits.controllers().empty()) return nullptr;
  std::string why;
  std::shared_ptr<sandbox::SandboxCgroup> cgroup =
      sandbox::SandboxCgroup::create(name, plan.limits, why);
  if (cgroup) return cgroup;
  if (plan.required) {
    error = "the sandbox's resource limits cannot be applied: " + why;
  } else {
    warning = "the sandbox runs WITHOUT its default limits (" + plan.summary + "): " + why;
  }
  return nullptr;
}

std::string memory_limit_notice(const std::optional<std::int64_t>& memory_bytes) {
  return "the command was killed by the kernel's out-of-memory killer (exit 137): the sandbox "
         "reached its memory limit" +
         (memory_bytes ? " (sandbox.memory, " + mib(*memory_bytes) + ")" : std::string());
}

}  // namespace execmcp::plugins::local
