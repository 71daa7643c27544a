// Whether an object holding one of our names is ours (ownership.hpp).
#include "docker_common/lifecycle/ownership.hpp"

#include "docker_common/lifecycle/container_spec.hpp"
#include "docker_common/log_text.hpp"

namespace execmcp::plugins::docker_common {
namespace {

std::string label(const std::map<std::string, std::string>& labels, const char* key) {
  const auto it = labels.find(key);
  return it == labels.end() ? std::string() : it->second;
}

}  // namespace

bool is_own(const std::map<std::string, std::string>& labels, const Ownership& own) {
  if (label(labels, kLabelManaged) != "true" || label(labels, kLabelAgent) != own.agent ||
      label(labels, kLabelInstance) != own.instance)
    return false;
  const std::string role = label(labels, kLabelRole);
  if (own.role.empty()) return role == kRoleAgent || !labels.contains(kLabelRole);
  return role == own.role;
}

std::string not_own_refusal(const std::string& what, const std::string& name,
                            const std::map<std::string, std::string>& labels,
                            const Ownership& own) {
  auto shown = [&](const char* key) { return "'" + log_text(label(labels, key), 128) + "'"; };
  const bool vowel = !what.empty() && std::string("aeiou").find(what.front()) != std::string::npos;
  return std::string(vowel ? "an " : "a ") + what + " named " + name +
         " exists on the engine, but it is not this sandbox's (" + "its labels say managed " +
         shown(kLabelManaged) + ", agent " + shown(kLabelAgent) + ", instance " +
         shown(kLabelInstance) + ", role " + shown(kLabelRole) + "; this " + what + " is agent '" +
         own.agent + "', instance '" + own.instance + "', role '" +
         (own.role.empty() ? std::string(kRoleAgent) : own.role) +
         "'): execmcp neither removes nor uses it. Remove or rename it if it is stale";
}

EngineError inspect_own(Engine& engine, const std::string& name, const Ownership& ownership,
                        ContainerInfo& out, std::string& refusal, const std::string& what) {
  refusal.clear();
  const auto err = engine.inspect(name, out);
  if (err.ok() && !is_own(out.labels, ownership))
    refusal = not_own_refusal(what, name, out.labels, ownership);
  return err;
}

std::string own_handle(const ContainerInfo& info, const std::string& name) {
  return info.id.empty() ? name : info.id;
}

EngineError remove_own(Engine& engine, const std::string& name, const Ownership& ownership,
                       std::string& refusal, const std::string& what) {
  ContainerInfo info;
  const auto err = inspect_own(engine, name, ownership, info, refusal, what);
  if (!err.ok() || !refusal.empty()) return err;
  return engine.remove(own_handle(info, name));
}

EngineError stop_own(Engine& engine, const std::string& name, const Ownership& ownership,
                     std::chrono::seconds timeout, std::string& refusal, const std::string& what) {
  ContainerInfo info;
  const auto err = inspect_own(engine, name, ownership, info, refusal, what);
  if (!err.ok() || !refusal.empty()) return err;
  return engine.stop(own_handle(info, name), timeout);
}

}  // namespace execmcp::plugins::docker_common
