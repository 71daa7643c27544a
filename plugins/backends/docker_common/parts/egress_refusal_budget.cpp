// The budget of one sandbox's egress refusal events: the hour's budget, the repeat window and the
// summary of what they held back; and the notice of the refusals a command's run saw.
#include "docker_common/parts/egress_refusal_budget.hpp"

#include <cctype>
#include <set>
#include <vector>

#include "docker_common/log_text.hpp"
#include "docker_common/parts/egress_log_follower.hpp"

namespace execmcp::plugins::docker_common {
namespace {

// A summary's host, port and method: it stands for several.
constexpr const char* kSummaryHost = "*";
// The allow-list entries a notice names before "and N more".
constexpr std::size_t kNoticeAllowEntries = 8;

std::string allow_text(const EgressPolicy& policy) {
  std::string out = "allow: ";
  std::size_t shown = 0;
  for (const auto& entry : policy.allow) {
    if (shown == kNoticeAllowEntries) break;
    out += (shown++ == 0 ? "" : ", ") + log_text(entry.text, 256);
  }
  if (policy.allow.size() > shown)
    out += " and " + std::to_string(policy.allow.size() - shown) + " more";
  return out;
}

// Escaped already: ASCII letters only, so the same name in other cases is the same refusal.
std::string lower_ascii(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// At most `max` bytes of escaped (printable, valid UTF-8) text, cut between characters.
std::string cut_text(const std::string& text, std::size_t max) {
  if (text.size() <= max) return text;
  std::size_t n = max - 3;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xc0) == 0x80) --n;
  return text.substr(0, n) + "...";
}

std::string refusals(std::uint64_t n) {
  return std::to_string(n) + (n == 1 ? " refusal" : " refusals");
}

}  // namespace

bool RefusalBudget::admit(const sdk::NetworkEvent& event, Clock::time_point now,
                          EgressCounts& counts) {
  while (!reported_.empty() && now - reported_.front() >= kEgressBudgetWindow)
    reported_.pop_front();
  while (!recent_keys_.empty() && now - recent_keys_.front().first >= kEgressRepeatWindow) {
    const auto it = last_reported_.find(recent_keys_.front().second);
    if (it != last_reported_.end() && it->second == recent_keys_.front().first)
      last_reported_.erase(it);
    recent_keys_.pop_front();
  }
  const std::string host = lower_ascii(event.host);
  std::string key = host + '\n' + std::to_string(event.port) + '\n' + event.method;
  const bool repeat = last_reported_.contains(key);
  if (!repeat && reported_.size() < kEgressRecordsPerHour) {
    reported_.push_back(now);
    last_reported_[key] = now;
    recent_keys_.emplace_back(now, std::move(key));
    ++counts.reported;
    return true;
  }
  if (held_.repeats + held_.over_budget == 0) held_.since = now;
  ++(repeat ? held_.repeats : held_.over_budget);
  ++(repeat ? counts.repeats : counts.over_budget);
  held_.last_unix_ms = event.unix_ms;
  auto shown = cut_text(host, kEgressSummaryHostMax);
  if (held_.hosts.size() < kEgressSummaryHosts || held_.hosts.contains(shown)) {
    held_.hosts.insert(std::move(shown));
  } else {
    held_.more_hosts = true;
  }
  return false;
}

std::optional<sdk::NetworkEvent> RefusalBudget::summary(Clock::time_point now, bool stopping,
                                                        EgressCounts& counts) {
  const std::uint64_t held = held_.repeats + held_.over_budget;
  if (held == 0 || (!stopping && now - held_.since < kEgressSummaryEvery)) return std::nullopt;
  sdk::NetworkEvent event;
  event.host = kSummaryHost;
  event.method = kSummaryHost;
  event.refused = true;
  event.unix_ms = held_.last_unix_ms;
  // At most ~190 bytes of words and numbers and 6 x 42 of hosts: under the 512 the host keeps.
  event.reason =
      "summary of " + refusals(held) + " (" + kEgressRefusalReason + ") not reported one by one: ";
  if (held_.repeats > 0)
    event.reason += std::to_string(held_.repeats) + " repeated one reported in the last " +
                    std::to_string(kEgressRepeatWindow.count()) + " s";
  if (held_.over_budget > 0)
    event.reason += std::string(held_.repeats > 0 ? ", " : "") + std::to_string(held_.over_budget) +
                    " over this sandbox's budget of " + std::to_string(kEgressRecordsPerHour) +
                    " an hour";
  event.reason += "; hosts: ";
  bool first = true;
  for (const auto& host : held_.hosts) {
    event.reason += (first ? "" : ", ") + host;
    first = false;
  }
  if (held_.more_hosts) event.reason += " and more";
  held_ = Held{};
  ++counts.summaries;
  return event;
}

RefusalNotices::RefusalNotices(const EgressPolicy& policy) : allow_text_(allow_text(policy)) {}

void RefusalNotices::add(std::string target) {
  recent_.push_back({++seen_, std::move(target)});
  if (recent_.size() > kEgressRecentRefusals) recent_.pop_front();
}

std::string RefusalNotices::notice(std::uint64_t mark) const {
  const std::uint64_t count = seen_ - mark;
  if (count == 0) return {};
  std::vector<std::string> targets;
  std::set<std::string> seen;
  std::size_t others = 0;  // kept ones not named
  for (const auto& r : recent_) {
    if (r.seq <= mark || seen.contains(r.target)) continue;
    seen.insert(r.target);
    if (targets.size() < kEgressNoticeHosts) {
      targets.push_back(r.target);
    } else {
      ++others;
    }
  }
  std::string out = "the egress proxy refused " +
                    (count == 1 ? std::string("a request") : std::to_string(count) + " requests") +
                    ": ";
  for (std::size_t i = 0; i < targets.size(); ++i) out += (i == 0 ? "" : ", ") + targets[i];
  // Refusals older than the kept ones are counted but not named.
  const bool unnamed = count > kEgressRecentRefusals;
  if (others > 0 || unnamed)
    out += unnamed ? " and more" : " and " + std::to_string(others) + " more";
  out += " (" + std::string(kEgressRefusalReason) + "; " + allow_text_ + ")";
  return out;
}

bool SecretEventBudget::admit(sdk::SecretEvent& event, Clock::time_point now) {
  while (!reported_.empty() && now - reported_.front() >= kEgressBudgetWindow)
    reported_.pop_front();
  while (!recent_keys_.empty() && now - recent_keys_.front().first >= kSecretRepeatWindow) {
    const auto& [when, key] = recent_keys_.front();
    if (auto it = last_reported_.find(key); it != last_reported_.end() && it->second == when)
      last_reported_.erase(it);
    recent_keys_.pop_front();
  }
  auto key = std::to_string(static_cast<int>(event.kind)) + ' ' + event.secret + ' ' +
             lower_ascii(event.host) + ' ' + event.method + ' ' + event.path;
  if (last_reported_.count(key) > 0 || reported_.size() >= kSecretEventsPerHour) {
    ++held_;
    return false;
  }
  reported_.push_back(now);
  last_reported_[key] = now;
  recent_keys_.emplace_back(now, std::move(key));
  event.dropped_before = held_;
  held_ = 0;
  return true;
}

}  // namespace execmcp::plugins::docker_common
