// See container_part.hpp: the chain that asks every part of a container in order.
#include "docker_common/lifecycle/container_part.hpp"

#include <algorithm>

namespace execmcp::plugins::docker_common {

PartStep PartChain::on_start() {
  for (auto* part : parts_)
    if (auto step = part->on_start(); step.stop) return step;
  return PartStep::next();
}

std::string PartChain::after_start(ContainerProbe& probe) {
  for (auto* part : parts_)
    if (auto err = part->after_start(probe); !err.empty()) return err;
  return {};
}

std::string PartChain::prepare_start() {
  for (auto* part : parts_)
    if (auto err = part->prepare_start(); !err.empty()) return err;
  return {};
}

std::string PartChain::before_create() {
  for (auto* part : parts_)
    if (auto err = part->before_create(); !err.empty()) return err;
  return {};
}

void PartChain::on_start_failed() noexcept {
  for (auto* part : parts_) part->on_start_failed();
}

PartStep PartChain::before_recover(sdk::LogLevel level) {
  for (auto* part : parts_)
    if (auto step = part->before_recover(level); step.stop) return step;
  return PartStep::next();
}

std::string PartChain::prepare_spec(ContainerSpec& spec) {
  for (auto* part : parts_)
    if (auto err = part->prepare_spec(spec); !err.empty()) return err;
  return {};
}

std::string PartChain::after_create() {
  for (auto* part : parts_)
    if (auto err = part->after_create(); !err.empty()) return err;
  return {};
}

void PartChain::on_container_start(bool created) {
  for (auto* part : parts_) part->on_container_start(created);
}

bool PartChain::remake_image(const std::string& image, std::string& error) {
  return std::any_of(parts_.begin(), parts_.end(),
                     [&](ContainerPart* part) { return part->remake_image(image, error); });
}

std::string PartChain::on_stop(std::chrono::seconds timeout) {
  for (auto* part : parts_)
    if (auto err = part->on_stop(timeout); !err.empty()) return err;
  return {};
}

void PartChain::on_backend_stop() noexcept {
  for (auto* part : parts_) part->on_backend_stop();
}

void PartChain::on_remove() noexcept {
  for (auto* part : parts_) part->on_remove();
}

void PartChain::on_relocate(const std::string& from, const std::string& to) {
  for (auto* part : parts_) part->on_relocate(from, to);
}

void PartChain::route(NetworkRoute& route) const {
  for (const auto* part : parts_) part->route(route);
}

void* PartChain::query_interface(std::string_view id) noexcept {
  for (auto* part : parts_)
    if (void* found = part->query_interface(id)) return found;
  return nullptr;
}

void PartChain::add_call_env(std::vector<std::string>& env) const {
  for (const auto* part : parts_) part->add_call_env(env);
}

PartChain::CallMarks PartChain::begin_calls() {
  CallMarks marks;
  marks.reserve(parts_.size());
  for (auto* part : parts_) marks.push_back(part->begin_call());
  return marks;
}

void PartChain::decorate_results(const CallMarks& marks, sdk::ExecResult& result) {
  for (std::size_t i = 0; i < parts_.size(); ++i)
    parts_[i]->decorate_result(i < marks.size() ? marks[i] : 0, result);
}

}  // namespace execmcp::plugins::docker_common
