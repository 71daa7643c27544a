// The audit trail: one log line per tool call (and per request a sandbox's network policy
// refused), and optionally one JSON object per line in a file.
#include "agent/audit_log.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <stdexcept>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "agent/bounded_text.hpp"
#include "config/config.hpp"

namespace execmcp::host {

namespace {

// Commands may hold any bytes; replace invalid UTF-8 rather than fail the audit.
std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string utc_timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[40];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buffer, static_cast<int>(millis));
  return out;
}

// Every string field cut at kAuditFieldBytes: what the log line shows.
AuditRecord bounded(const AuditRecord& record) {
  AuditRecord out;
  for (auto [to, from] : {std::pair{&out.agent_id, &record.agent_id},
                          {&out.instance_id, &record.instance_id},
                          {&out.tool, &record.tool},
                          {&out.principal, &record.principal},
                          {&out.user, &record.user},
                          {&out.path, &record.path},
                          {&out.command, &record.command},
                          {&out.work_dir, &record.work_dir},
                          {&out.shell_id, &record.shell_id},
                          {&out.verdict, &record.verdict},
                          {&out.reason, &record.reason},
                          {&out.error, &record.error},
                          {&out.remote_host, &record.remote_host},
                          {&out.method, &record.method},
                          {&out.secret, &record.secret},
                          {&out.task, &record.task}})
    *to = cut_text(*from, kAuditFieldBytes);
  out.bytes = record.bytes;
  out.remote_port = record.remote_port;
  out.exit_code = record.exit_code;
  out.duration_seconds = record.duration_seconds;
  out.timed_out = record.timed_out;
  out.cancelled = record.cancelled;
  return out;
}

}  // namespace

std::string task_audit_reference(const std::string& task_id) {
  return "t-" + digest_hex(sha256_digest(task_id)).substr(0, 16);
}

AuditLog::AuditLog(const std::string& file) : path_(file) {
  if (file.empty()) return;
  std::error_code ec;
  const auto parent = std::filesystem::path(file).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  file_ = std::fopen(file.c_str(), "a");
  if (file_ == nullptr)
    throw std::runtime_error("cannot open audit file '" + file + "': " + std::strerror(errno));
}

std::shared_ptr<AuditLog> AuditLog::shared(const std::string& file) {
  if (file.empty()) return std::make_shared<AuditLog>();
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<AuditLog>> writers;
  std::error_code ec;
  std::string key = std::filesystem::weakly_canonical(file, ec).string();
  if (ec || key.empty()) key = file;
  std::lock_guard lock(mutex);
  if (auto existing = writers[key].lock()) return existing;
  auto writer = std::make_shared<AuditLog>(file);
  writers[key] = writer;
  return writer;
}

AuditLog::~AuditLog() {
  if (file_ != nullptr) std::fclose(file_);
}

std::string AuditLog::to_json_line(const AuditRecord& record) {
  nlohmann::json line = {
      {"time", utc_timestamp()},        {"agent", record.agent_id},
      {"instance", record.instance_id}, {"tool", record.tool},
      {"principal", record.principal},  {"verdict", record.verdict},
      {"command", record.command},      {"work_dir", record.work_dir},
      {"exit_code", record.exit_code},  {"duration_seconds", record.duration_seconds},
      {"timed_out", record.timed_out},  {"cancelled", record.cancelled}};
  if (!record.path.empty()) {
    line["path"] = record.path;
    line["bytes"] = record.bytes;
  }
  if (!record.shell_id.empty()) line["shell_id"] = record.shell_id;
  if (!record.remote_host.empty()) {
    line["host"] = record.remote_host;
    line["port"] = record.remote_port;
    line["method"] = record.method;
  }
  if (!record.secret.empty()) line["secret"] = record.secret;
  if (!record.task.empty()) line["task"] = record.task;
  if (!record.user.empty()) line["user"] = record.user;
  if (!record.reason.empty()) line["reason"] = record.reason;
  if (!record.error.empty()) line["error"] = record.error;
  // Bounded here, over every string value, so a field added above cannot escape the bound.
  nlohmann::json cut = nlohmann::json::object();
  for (auto& [key, value] : line.items()) {
    if (!value.is_string()) continue;
    const auto& text = value.get_ref<const std::string&>();
    if (text.size() <= kAuditFieldBytes) continue;
    cut[key] = {{"bytes", text.size()}, {"sha256", digest_hex(sha256_digest(text))}};
    value = cut_text(text, kAuditFieldBytes);
  }
  if (!cut.empty()) line["cut"] = std::move(cut);
  return json_text(line);
}

void AuditLog::record(const AuditRecord& full) noexcept {
  try {
    const AuditRecord record = bounded(full);
    if (!record.remote_host.empty()) {
      spdlog::info("audit agent={}{} tool={} verdict={} host={} port={} method={}{}{}{}",
                   record.agent_id, record.user.empty() ? "" : " user=" + record.user, record.tool,
                   record.verdict, json_text(record.remote_host), record.remote_port,
                   json_text(record.method),
                   record.path.empty() ? "" : " path=" + json_text(record.path),
                   record.secret.empty() ? "" : " secret=" + json_text(record.secret),
                   record.reason.empty() ? "" : " reason=" + json_text(record.reason));
    } else if (record.path.empty()) {
      spdlog::info(
          "audit agent={}{} principal={} tool={}{}{} verdict={} exit={} duration={:.3f} "
          "command={}",
          record.agent_id, record.user.empty() ? "" : " user=" + record.user, record.principal,
          record.tool, record.shell_id.empty() ? "" : " shell=" + record.shell_id,
          record.task.empty() ? "" : " task=" + record.task, record.verdict, record.exit_code,
          record.duration_seconds, json_text(record.command));
    } else {
      spdlog::info("audit agent={}{} principal={} tool={} path={} bytes={}{}", record.agent_id,
                   record.user.empty() ? "" : " user=" + record.user, record.principal, record.tool,
                   json_text(record.path), record.bytes,
                   record.error.empty() ? "" : " error=" + json_text(record.error));
    }
    if (file_ == nullptr) return;
    const std::string line = to_json_line(full) + "\n";
    std::lock_guard lock(mutex_);
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fflush(file_);
  } catch (const std::exception& e) {
    try {
      spdlog::error("audit: cannot write record: {}", e.what());
    } catch (...) {
    }
  } catch (...) {
  }
}

}  // namespace execmcp::host
