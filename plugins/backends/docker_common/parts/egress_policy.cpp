// The egress policy: strict parsing of the `egress` setting, Squid's configuration and refusal page
// rendered from it, and the proxy's access log read back.
#include "docker_common/parts/egress_policy.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "docker_common/parts/egress_secret_squid.hpp"
#include "docker_common/settings/env_file.hpp"
#include "execmcp/egress_secrets/secret_bundle.hpp"

namespace execmcp::plugins::docker_common {
namespace {

// What a bundle the injector accepts may hold.
constexpr std::size_t kMaxEgressSecrets = egress_secrets::kMaxSecrets;
constexpr std::size_t kMaxSecretHosts = egress_secrets::kMaxHostsPerSecret;

constexpr const char* kEntryForms =
    "a host name (pypi.org), a wildcard (*.npmjs.org: every name under npmjs.org, not "
    "npmjs.org itself), an IP address (10.0.0.1, fd00::1) or a CIDR (10.20.0.0/16, fd00::/8)";
constexpr const char* kPageName = "ERR_EXECMCP_EGRESS_DENIED";
constexpr const char* kLogTag = "execmcp-egress";

bool is_label_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_';
}

// A DNS name of labels [A-Za-z0-9_-]{1,63} joined by single dots, not starting or ending a label
// with '-', at most 253 characters, whose last label is not all digits (that is an IPv4 typo).
bool is_host_name(const std::string& name, std::string& why) {
  if (name.size() > 253) {
    why = "a host name is at most 253 characters";
    return false;
  }
  std::size_t start = 0;
  std::string last;
  while (true) {
    const std::size_t dot = name.find('.', start);
    const std::string label = name.substr(start, dot == std::string::npos ? dot : dot - start);
    if (label.empty()) {
      why = "an empty label (two dots in a row, or a dot at an end)";
      return false;
    }
    if (label.size() > 63 || !std::all_of(label.begin(), label.end(), is_label_char) ||
        label.front() == '-' || label.back() == '-') {
      why = "'" + label + "' is not a DNS label (letters, digits, '-' inside, at most 63)";
      return false;
    }
    last = label;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (std::all_of(last.begin(), last.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
    why = "not a valid IP address, and a host name does not end in a number";
    return false;
  }
  return true;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// An address in presentation form; the family in `family`, the bytes in `bytes`.
bool parse_address(const std::string& text, int& family, std::array<unsigned char, 16>& bytes) {
  if (inet_pton(AF_INET, text.c_str(), bytes.data()) == 1) {
    family = AF_INET;
    return true;
  }
  if (inet_pton(AF_INET6, text.c_str(), bytes.data()) == 1) {
    family = AF_INET6;
    return true;
  }
  return false;
}

std::string address_text(int family, const std::array<unsigned char, 16>& bytes) {
  std::array<char, INET6_ADDRSTRLEN> out{};
  inet_ntop(family, bytes.data(), out.data(), out.size());
  return out.data();
}

// True when an IPv6 address with this prefix lies wholly in ::/96 or ::ffff:0:0/96, the
// IPv4-compatible and IPv4-mapped forms, where Squid keeps IPv4: such an entry is written as IPv4.
bool in_ipv4_forms(int family, const std::array<unsigned char, 16>& bytes, int prefix,
                   std::string& why) {
  if (family != AF_INET6 || prefix < 96) return false;
  const bool zero10 = std::all_of(bytes.begin(), bytes.begin() + 10, [](auto b) { return b == 0; });
  const bool compatible = zero10 && bytes[10] == 0 && bytes[11] == 0;
  const bool mapped = zero10 && bytes[10] == 0xff && bytes[11] == 0xff;
  if (!compatible && !mapped) return false;
  why =
      "an IPv6 form of IPv4 (or ::1, ::, which the proxy never reaches): write the IPv4 "
      "address or network instead";
  return true;
}

std::optional<EgressEntry> parse_network(const std::string& text, std::string& why) {
  const std::size_t slash = text.find('/');
  const std::string address = text.substr(0, slash);
  const std::string prefix_text = text.substr(slash + 1);
  int family = 0;
  std::array<unsigned char, 16> bytes{};
  if (!parse_address(address, family, bytes)) {
    why = "'" + address + "' before the '/' is not an IP address";
    return std::nullopt;
  }
  const int max_prefix = family == AF_INET ? 32 : 128;
  int prefix = -1;
  const char* end = prefix_text.data() + prefix_text.size();
  const auto [ptr, ec] = std::from_chars(prefix_text.data(), end, prefix);
  if (prefix_text.empty() || prefix_text.size() > 3 || ec != std::errc() || ptr != end ||
      prefix < 0 || prefix > max_prefix) {
    why = "the prefix length after '/' must be a number from 0 to " + std::to_string(max_prefix);
    return std::nullopt;
  }
  if (in_ipv4_forms(family, bytes, prefix, why)) return std::nullopt;
  // Host bits are cleared, as Squid would (with a warning): 10.20.1.5/16 is 10.20.0.0/16.
  const int byte_count = family == AF_INET ? 4 : 16;
  for (int i = 0; i < byte_count; ++i) {
    const int keep = std::clamp(prefix - i * 8, 0, 8);
    bytes[static_cast<std::size_t>(i)] &= static_cast<unsigned char>(0xff00 >> keep);
  }
  return EgressEntry{EgressEntry::Kind::kNetwork,
                     address_text(family, bytes) + "/" + std::to_string(prefix), text};
}

// Address ranges as 128-bit numbers. Squid keeps an acl's addresses in one splay tree, IPv4 as
// IPv4-mapped IPv6, and drops an entry that overlaps another (warning "... is ignored", sometimes
// the wider one): every `dst` acl rendered here holds disjoint CIDRs only.
__extension__ typedef unsigned __int128 Number;  // GCC and Clang have it
struct Range {
  Number first;
  Number last;  // inclusive
};
constexpr Number kTop4 = (Number{1} << 32) - 1;
constexpr Number kTop6 = ~Number{0};

Number to_number(int family, const std::array<unsigned char, 16>& bytes) {
  Number n = 0;
  for (int i = 0; i < (family == AF_INET ? 4 : 16); ++i) n = (n << 8) | bytes[i];
  return n;
}

std::string to_text(int family, Number n, int prefix) {
  std::array<unsigned char, 16> bytes{};
  const int count = family == AF_INET ? 4 : 16;
  for (int i = count - 1; i >= 0; --i, n >>= 8)
    bytes[static_cast<std::size_t>(i)] = static_cast<unsigned char>(n & 0xff);
  return address_text(family, bytes) + "/" + std::to_string(prefix);
}

// Sorted, with overlapping and adjacent ranges joined.
std::vector<Range> merged(std::vector<Range> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.first < b.first; });
  std::vector<Range> out;
  for (const auto& r : ranges) {
    if (!out.empty() && (r.first <= out.back().last || r.first - 1 == out.back().last)) {
      out.back().last = std::max(out.back().last, r.last);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

// [0, top] less the merged `ranges`.
std::vector<Range> complement(const std::vector<Range>& ranges, Number top) {
  std::vector<Range> out;
  Number next = 0;
  for (const auto& r : ranges) {
    if (r.first > next) out.push_back({next, r.first - 1});
    if (r.last >= top) return out;
    next = r.last + 1;
  }
  out.push_back({next, top});
  return out;
}

// The CIDRs that cover `range` exactly, each the largest block aligned where it starts.
void cover(int family, Range range, std::vector<std::string>& out) {
  const int bits = family == AF_INET ? 32 : 128;
  Number first = range.first;
  while (true) {
    int size = 0;  // log2 of the block
    while (size < bits && ((first >> size) & 1) == 0) ++size;
    const auto end_of = [&first](int log2) {
      return log2 >= 128 ? ~Number{0} : first + ((Number{1} << log2) - 1);
    };
    while (size > 0 && end_of(size) > range.last) --size;
    if (size == bits && family == AF_INET) {
      // Squid replaces 0.0.0.0/0 with `all`, which holds IPv6 too: two halves instead.
      out.push_back("0.0.0.0/1");
      out.push_back("128.0.0.0/1");
      return;
    }
    out.push_back(to_text(family, first, bits - size));
    if (end_of(size) >= range.last) return;
    first = end_of(size) + 1;
  }
}

// The address and network entries of one family as ranges.
std::vector<Range> entry_ranges(int family, const std::vector<EgressEntry>& allow) {
  const int bits = family == AF_INET ? 32 : 128;
  std::vector<Range> ranges;
  for (const auto& entry : allow) {
    if (entry.kind != EgressEntry::Kind::kAddress && entry.kind != EgressEntry::Kind::kNetwork)
      continue;
    const std::size_t slash = entry.value.find('/');
    int f = 0;
    std::array<unsigned char, 16> bytes{};
    if (!parse_address(entry.value.substr(0, slash), f, bytes) || f != family) continue;
    const int prefix = slash == std::string::npos ? bits : std::stoi(entry.value.substr(slash + 1));
    const Number first = to_number(family, bytes);
    const Number host =
        prefix == 0 ? (family == AF_INET ? kTop4 : kTop6) : (Number{1} << (bits - prefix)) - 1;
    ranges.push_back({first, first | host});
  }
  return merged(std::move(ranges));
}

// The allowed addresses and every other address, as disjoint CIDRs for two `dst` acls. IPv6
// entries never reach into ::/96 and ::ffff:0:0/96, where Squid keeps (and misreads) IPv4: an
// IPv4 address is allowed by an IPv4 entry only.
void address_acls(const std::vector<EgressEntry>& allow, std::vector<std::string>& allowed,
                  std::vector<std::string>& outside) {
  const auto v4 = entry_ranges(AF_INET, allow);
  for (const auto& r : v4) cover(AF_INET, r, allowed);
  for (const auto& r : complement(v4, kTop4)) cover(AF_INET, r, outside);

  const std::vector<Range> mapped = {{0, kTop4},
                                     {Number{0xffff} << 32, (Number{0xffff} << 32) | kTop4}};
  const auto v6 = entry_ranges(AF_INET6, allow);
  std::vector<Range> not_v6 = complement(v6, kTop6);
  not_v6.insert(not_v6.end(), mapped.begin(), mapped.end());
  for (const auto& r : complement(merged(not_v6), kTop6)) cover(AF_INET6, r, allowed);
  std::vector<Range> v6_and_mapped = v6;
  v6_and_mapped.insert(v6_and_mapped.end(), mapped.begin(), mapped.end());
  for (const auto& r : complement(merged(v6_and_mapped), kTop6)) cover(AF_INET6, r, outside);
}

std::string regex_escaped(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c == '.') out += '\\';
    out += c;
  }
  return out;
}

std::string log_label(const std::string& agent_label) {
  std::string out = agent_label.empty() ? "agent" : agent_label;
  for (char& c : out)
    if (!is_label_char(c) && c != '.') c = '_';
  return out;
}

void parse_allow(const nlohmann::json& value, const std::string& at, EgressPolicy& policy,
                 std::vector<sdk::SettingsProblem>& problems) {
  if (!value.is_array()) {
    problems.push_back({at, std::string("expected a list of ") + kEntryForms});
    return;
  }
  if (value.empty()) {
    problems.push_back({at,
                        "an empty allow list refuses everything; use `network: none` for no "
                        "network, or list the hosts the agent may reach"});
    return;
  }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string item_at = at + "/" + std::to_string(i);
    if (!value[i].is_string()) {
      problems.push_back({item_at, std::string("expected a string: ") + kEntryForms});
      continue;
    }
    const std::string text = value[i].get<std::string>();
    std::string why;
    auto entry = parse_egress_entry(text, why);
    if (!entry) {
      problems.push_back({item_at, "'" + text + "' is not " + kEntryForms + ": " + why});
      continue;
    }
    const std::string key = std::to_string(static_cast<int>(entry->kind)) + entry->value;
    if (seen.insert(key).second) policy.allow.push_back(std::move(*entry));
  }
}

void parse_ports(const nlohmann::json& value, const std::string& at, EgressPolicy& policy,
                 std::vector<sdk::SettingsProblem>& problems) {
  constexpr const char* kPorts = "expected a non-empty list of TCP ports (1-65535), e.g. [80, 443]";
  if (!value.is_array() || value.empty()) {
    problems.push_back({at, kPorts});
    return;
  }
  policy.ports.clear();
  for (std::size_t i = 0; i < value.size(); ++i) {
    const auto& port = value[i];
    if (!port.is_number_integer() || port.get<std::int64_t>() < 1 ||
        port.get<std::int64_t>() > 65535) {
      problems.push_back({at + "/" + std::to_string(i),
                          "expected a TCP port from 1 to 65535, got " + port.dump()});
      continue;
    }
    const auto p = static_cast<std::uint16_t>(port.get<std::int64_t>());
    if (std::find(policy.ports.begin(), policy.ports.end(), p) == policy.ports.end())
      policy.ports.push_back(p);
  }
}

// A Docker network name: [A-Za-z0-9][A-Za-z0-9_.-]*; `host` and `none` cannot be joined with the
// agent's internal network.
void parse_upstream(const nlohmann::json& value, const std::string& at, EgressPolicy& policy,
                    std::vector<sdk::SettingsProblem>& problems) {
  const std::string name = value.is_string() ? value.get<std::string>() : "";
  const bool valid =
      !name.empty() && name.size() <= 128 &&
      std::isalnum(static_cast<unsigned char>(name[0])) != 0 &&
      std::all_of(name.begin(), name.end(), [](char c) { return is_label_char(c) || c == '.'; });
  if (!valid) {
    problems.push_back({at,
                        "expected the name of a Docker network ([A-Za-z0-9][A-Za-z0-9_.-]*), "
                        "e.g. bridge; got " +
                            value.dump()});
  } else if (name == "host" || name == "none") {
    problems.push_back(
        {at, "the proxy cannot reach upstreams through network '" + name +
                 "': name a bridge network (bridge, or one of `docker network ls`)"});
  } else {
    policy.upstream_network = name;
  }
}

// RFC 9110's tchar: a header's name and a method are tokens of these.
bool is_token(std::string_view text) {
  constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  return !text.empty() && std::all_of(text.begin(), text.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || kSpecials.find(c) != kSpecials.npos;
  });
}

// Absolute, without "." or ".." components, "//" or a trailing '/'.
bool is_normal_path(std::string_view path) {
  if (path.size() < 2 || path.front() != '/' || path.back() == '/') return false;
  for (std::size_t start = 1; start <= path.size();) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return path.find('\0') == std::string_view::npos;
}

// A path prefix the injector can match a canonical request path against: '/' first, visible ASCII,
// no query or fragment, no "//" and no "." or ".." segment (such a request is never injected into).
std::string path_prefix_problem(std::string_view path) {
  if (path.empty() || path.front() != '/') return "a path prefix starts with '/'";
  for (char c : path)
    if (c <= ' ' || c > '~' || c == '?' || c == '#' || c == '\\')
      return "a path prefix holds no white space, control character, '\\', '?' or '#' (it is "
             "matched against the request's path without its query)";
  if (path.find("//") != std::string_view::npos)
    return "'//' in a path prefix: requests with it are never injected into";
  for (std::size_t start = 1; start <= path.size();) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part == "." || part == "..")
      return "a '.' or '..' segment in a path prefix: requests with one are never injected into";
    start = end + 1;
  }
  return {};
}

// A list of strings at `at` (an empty one refused with `empty_why`), each checked by `check`
// ("" or why not), duplicates dropped.
template <typename Check>
std::vector<std::string> string_list(const nlohmann::json& value, const std::string& at,
                                     const char* what, const char* empty_why, Check check,
                                     std::vector<sdk::SettingsProblem>& problems) {
  std::vector<std::string> out;
  if (!value.is_array()) {
    problems.push_back({at, std::string("expected a list of ") + what});
    return out;
  }
  if (value.empty()) problems.push_back({at, empty_why});
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string item_at = at + "/" + std::to_string(i);
    if (!value[i].is_string()) {
      problems.push_back({item_at, std::string("expected a string: ") + what});
      continue;
    }
    std::string item = value[i].get<std::string>();
    if (auto why = check(item); !why.empty()) {
      problems.push_back({item_at, std::move(why)});
      continue;
    }
    if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(std::move(item));
  }
  return out;
}

// "env:NAME" or "file:/absolute/path".
void parse_secret_source(const nlohmann::json& value, const std::string& at,
                         EgressSecretSetting& secret, std::vector<sdk::SettingsProblem>& problems) {
  constexpr const char* kForms =
      "expected env:NAME (a variable of the server's environment) or file:/absolute/path";
  const std::string text = value.is_string() ? value.get<std::string>() : "";
  if (text.starts_with("env:") && is_env_name(text.substr(4))) {
    secret.from = {EgressSecretSource::Kind::kEnv, text.substr(4)};
  } else if (text.starts_with("file:") && is_normal_path(text.substr(5))) {
    secret.from = {EgressSecretSource::Kind::kFile, text.substr(5)};
  } else if (text.starts_with("file:")) {
    problems.push_back({at, std::string(kForms) + ": a file is an absolute path without '.', "
                                                  "'..', '//' or a trailing '/'"});
  } else {
    problems.push_back(
        {at, std::string(kForms) + (value.is_string() ? "" : ", got " + value.dump())});
  }
}

// A secret's host: an exact name that `allow` lists by name (the proxy intercepts it and mints
// a certificate for exactly that name). `allow_ok`: the allow list parsed without a problem.
std::string secret_host_problem(std::string& host, const EgressPolicy& policy, bool allow_ok) {
  std::string why;
  auto entry = parse_egress_entry(host, why);
  if (!entry) return "'" + host + "' is not a host name: " + why;
  if (entry->kind == EgressEntry::Kind::kWildcard)
    return "'" + host +
           "': a secret names exact hosts, never a wildcard (its certificate is "
           "made for exactly those names)";
  if (entry->kind != EgressEntry::Kind::kHost)
    return "'" + host +
           "': a secret names hosts by name, never an address or a network (the "
           "proxy intercepts TLS for a name)";
  host = entry->value;
  if (!allow_ok) return {};
  for (const auto& allowed : policy.allow)
    if (allowed.kind == EgressEntry::Kind::kHost && allowed.value == host) return {};
  for (const auto& allowed : policy.allow)
    if (allowed.kind == EgressEntry::Kind::kWildcard && host.ends_with("." + allowed.value))
      return "'" + host + "' is allowed only by '" + allowed.text +
             "': list it by name in egress.allow too (a secret's host is always named there)";
  return "'" + host +
         "' is not in egress.allow: add it there (a secret's host must be allowed "
         "by name)";
}

void parse_secret(const nlohmann::json& value, const std::string& at, EgressPolicy& policy,
                  bool allow_ok, std::vector<sdk::SettingsProblem>& problems) {
  constexpr const char* kKnown = "name, from, hosts, header, methods, paths, plain_http";
  if (!value.is_object()) {
    problems.push_back({at, std::string("expected an object {") + kKnown + "}"});
    return;
  }
  EgressSecretSetting secret;
  for (const auto& [key, v] : value.items()) {
    const std::string key_at = at + "/" + sdk::pointer_token(key);
    if (key == "name") {
      secret.name = v.is_string() ? v.get<std::string>() : "";
      if (!is_env_name(secret.name)) {
        problems.push_back({key_at,
                            "expected the name of an environment variable "
                            "([A-Za-z_][A-Za-z0-9_]*), e.g. GITHUB_TOKEN"});
      } else if (is_reserved_secret_name(secret.name)) {
        problems.push_back({key_at, "'" + secret.name +
                                        "' is a variable execmcp or the shell sets for every "
                                        "command: name the secret otherwise"});
      } else {
        for (std::size_t i = 0; i < policy.secrets.size(); ++i)
          if (policy.secrets[i].name == secret.name)
            problems.push_back({key_at, "a second secret named '" + secret.name +
                                            "' (names are unique: each is one variable)"});
      }
    } else if (key == "from") {
      parse_secret_source(v, key_at, secret, problems);
    } else if (key == "hosts") {
      secret.hosts = string_list(
          v, key_at, "exact host names, each also in egress.allow",
          "a secret needs at least one host it may be sent to",
          [&](std::string& h) { return secret_host_problem(h, policy, allow_ok); }, problems);
      if (secret.hosts.size() > kMaxSecretHosts)
        problems.push_back(
            {key_at, "at most " + std::to_string(kMaxSecretHosts) + " hosts per secret"});
    } else if (key == "header") {
      secret.header = v.is_string() ? v.get<std::string>() : "";
      if (!is_token(secret.header))
        problems.push_back({key_at, "expected a request header's name, e.g. Authorization"});
    } else if (key == "methods") {
      secret.methods = string_list(
          v, key_at, "upper-case HTTP methods, e.g. GET", "leave 'methods' out for any method",
          [](const std::string& m) {
            const bool lower = std::any_of(m.begin(), m.end(), [](char c) {
              return std::islower(static_cast<unsigned char>(c)) != 0;
            });
            return is_token(m) && !lower ? std::string()
                                         : "'" + m + "' is not an upper-case HTTP method";
          },
          problems);
    } else if (key == "paths") {
      secret.paths = string_list(
          v, key_at, "path prefixes starting with '/'", "leave 'paths' out for any path",
          [](const std::string& p) { return path_prefix_problem(p); }, problems);
    } else if (key == "plain_http") {
      if (!v.is_boolean()) {
        problems.push_back({key_at, "expected true or false"});
      } else if (v.get<bool>() &&
                 std::find(policy.ports.begin(), policy.ports.end(), 80) == policy.ports.end()) {
        problems.push_back({key_at, "plain HTTP needs port 80 in egress.ports"});
      } else {
        secret.plain_http = v.get<bool>();
      }
    } else {
      problems.push_back({key_at, "unknown setting '" + key + "' (known: " + kKnown + ")"});
    }
  }
  for (const char* required : {"name", "from", "hosts"})
    if (!value.contains(required))
      problems.push_back({at, std::string("a secret needs '") + required + "'"});
  policy.secrets.push_back(std::move(secret));
}

void parse_secrets(const nlohmann::json& value, const std::string& at, EgressPolicy& policy,
                   bool allow_ok, std::vector<sdk::SettingsProblem>& problems) {
  if (!value.is_array()) {
    problems.push_back({at,
                        "expected a list of {name, from, hosts, header, methods, paths, "
                        "plain_http}"});
    return;
  }
  if (value.size() > kMaxEgressSecrets)
    problems.push_back({at, "at most " + std::to_string(kMaxEgressSecrets) + " secrets"});
  for (std::size_t i = 0; i < value.size(); ++i)
    parse_secret(value[i], at + "/" + std::to_string(i), policy, allow_ok, problems);
}

}  // namespace

bool is_reserved_secret_name(std::string_view name) {
  for (const char* exact : {"PATH",
                            "HOME",
                            "USER",
                            "LOGNAME",
                            "SHELL",
                            "PWD",
                            "OLDPWD",
                            "TERM",
                            "TMPDIR",
                            "HOSTNAME",
                            "IFS",
                            "ENV",
                            "BASH_ENV",
                            "HTTP_PROXY",
                            "HTTPS_PROXY",
                            "http_proxy",
                            "https_proxy",
                            "NO_PROXY",
                            "no_proxy",
                            "ALL_PROXY",
                            "all_proxy",
                            "SSL_CERT_FILE",
                            "SSL_CERT_DIR",
                            "REQUESTS_CA_BUNDLE",
                            "CURL_CA_BUNDLE",
                            "NODE_EXTRA_CA_CERTS",
                            "GIT_SSL_CAINFO",
                            "PIP_CERT",
                            "CARGO_HTTP_CAINFO"})
    if (name == exact) return true;
  for (const char* prefix : {"LD_", "EXECMCP_"})
    if (name.starts_with(prefix)) return true;
  return false;
}

std::optional<EgressEntry> parse_egress_entry(const std::string& text, std::string& why) {
  if (text.empty()) {
    why = "it is empty";
    return std::nullopt;
  }
  if (text.find_first_of(" \t\r\n") != std::string::npos) {
    why = "it contains white space (one entry per list item)";
    return std::nullopt;
  }
  if (text.find("://") != std::string::npos) {
    why = "a URL; write the host alone (the ports go in egress.ports)";
    return std::nullopt;
  }
  if (text.find('/') != std::string::npos) return parse_network(text, why);
  int family = 0;
  std::array<unsigned char, 16> bytes{};
  if (parse_address(text, family, bytes)) {
    if (in_ipv4_forms(family, bytes, 128, why)) return std::nullopt;
    return EgressEntry{EgressEntry::Kind::kAddress, address_text(family, bytes), text};
  }
  if (text.find(':') != std::string::npos) {
    why = "a ':' that is neither an IPv6 address nor allowed in a name (ports go in egress.ports)";
    return std::nullopt;
  }
  if (text.starts_with("*.")) {
    const std::string suffix = text.substr(2);
    if (suffix.find('*') != std::string::npos) {
      why = "only one leading '*.' is allowed";
      return std::nullopt;
    }
    if (suffix.empty()) {
      why = "'*.' needs a domain after it";
      return std::nullopt;
    }
    if (!is_host_name(suffix, why)) return std::nullopt;
    return EgressEntry{EgressEntry::Kind::kWildcard, lower(suffix), text};
  }
  if (text.find('*') != std::string::npos) {
    why = "'*' may only stand as a whole first label ('*.example.com')";
    return std::nullopt;
  }
  if (!is_host_name(text, why)) return std::nullopt;
  return EgressEntry{EgressEntry::Kind::kHost, lower(text), text};
}

EgressPolicy parse_egress(const nlohmann::json& egress, std::vector<sdk::SettingsProblem>& problems,
                          const std::string& pointer) {
  EgressPolicy policy;
  if (!egress.is_object()) {
    problems.push_back({pointer,
                        "expected an object {allow: [...], ports: [80, 443], "
                        "upstream_network: bridge}"});
    return policy;
  }
  bool has_allow = false;
  bool allow_ok = false;
  for (const auto& [key, value] : egress.items()) {
    const std::string at = pointer + "/" + sdk::pointer_token(key);
    if (key == "allow") {
      has_allow = true;
      const std::size_t before = problems.size();
      parse_allow(value, at, policy, problems);
      allow_ok = problems.size() == before;
    } else if (key == "ports") {
      parse_ports(value, at, policy, problems);
    } else if (key == "upstream_network") {
      parse_upstream(value, at, policy, problems);
    } else if (key == "upstream_ca") {
      policy.upstream_ca = value.is_string() ? value.get<std::string>() : "";
      if (!is_normal_path(policy.upstream_ca))
        problems.push_back({at,
                            "expected the absolute path of a PEM file of CA certificates "
                            "(without '.', '..', '//' or a trailing '/')"});
    } else if (key != "secrets") {
      problems.push_back({at, "unknown setting '" + key +
                                  "' (known: allow, ports, upstream_network, secrets, "
                                  "upstream_ca)"});
    }
  }
  if (!has_allow)
    problems.push_back({pointer, std::string("needs 'allow', the list of what the agent may "
                                             "reach: ") +
                                     kEntryForms});
  // After the allow list and the ports, which a secret's hosts and plain_http are checked against.
  if (const auto it = egress.find("secrets"); it != egress.end())
    parse_secrets(*it, pointer + "/secrets", policy, allow_ok, problems);
  return policy;
}

std::string render_squid_conf(const EgressPolicy& policy, const std::string& agent_label,
                              const std::vector<std::string>& client_networks,
                              const std::string& http_port) {
  std::ostringstream conf;
  conf << "# execmcp egress proxy of agent " << log_label(agent_label)
       << " (rendered by execmcp; do not edit)\n"
       << "http_port " << (http_port.empty() ? std::to_string(kEgressProxyPort) : http_port) << "\n"
       << "visible_hostname execmcp-egress\n"
       // A forward proxy only: no cache, no PID file, no helpers, no ICMP pinger (it needs a
       // capability), logs on the container's stdout/stderr, nothing written to disk.
       << "cache deny all\ncache_mem 0 MB\nmemory_pools off\npid_filename none\n"
       << "coredump_dir none\npinger_enable off\ndigest_generation off\nlogfile_rotate 0\n"
       << "cache_log stdio:/dev/stderr\nshutdown_lifetime 1 seconds\nmax_filedescriptors 4096\n"
       // The upstream learns nothing of the agent's address, nor anyone Squid's version. (Via
       // stays: HTTP requires it, and Squid warns without it.)
       << "forwarded_for delete\nhttpd_suppress_version_string on\n"
       << "logformat execmcp " << kLogTag << " " << log_label(agent_label)
       << " %ts.%03tu %>a %rm %>rd %>rP %Ss %03>Hs %err_code %<a\n";
  // The hosts secrets name go through the injector; its block must precede the access log and
  // every http_access line (egress_secret_squid.hpp).
  std::vector<std::string> secret_hosts;
  for (const auto& secret : policy.secrets)
    for (const auto& host : secret.hosts)
      if (std::find(secret_hosts.begin(), secret_hosts.end(), host) == secret_hosts.end())
        secret_hosts.push_back(host);
  conf << render_secret_squid_lines(secret_hosts)
       << "access_log stdio:/dev/stdout logformat=execmcp\n";

  // Link-local addresses hold cloud metadata services; Squid 5.7 predefines to_localhost only.
  conf << "acl egress_linklocal dst 169.254.0.0/16 fe80::/10\n";
  conf << "acl egress_ports port";
  for (const auto port : policy.ports) conf << ' ' << port;
  conf << '\n';
  std::vector<std::string> hosts, wildcards;
  bool by_address = false;
  for (const auto& entry : policy.allow) {
    switch (entry.kind) {
      case EgressEntry::Kind::kHost:
        hosts.push_back(entry.value);
        break;
      case EgressEntry::Kind::kWildcard:
        wildcards.push_back("\\." + regex_escaped(entry.value) + "$");
        break;
      case EgressEntry::Kind::kAddress:
      case EgressEntry::Kind::kNetwork:
        by_address = true;
        break;
    }
  }
  // One acl line per entry: Squid ORs the values of an acl's lines. -n: an IP host is never
  // looked up backwards to match a name.
  for (const auto& h : hosts) conf << "acl egress_hosts dstdomain -n " << h << '\n';
  for (const auto& w : wildcards) conf << "acl egress_wildcards dstdom_regex -n -i " << w << '\n';
  // `dst` matches a request for an address, and a name when ANY of its resolved addresses is in
  // the acl, after which Squid may connect to any of them: a name answering with one allowed and
  // one foreign address would get through. So a name is allowed by address only when none of its
  // addresses is outside the list (egress_outside, the list's exact complement).
  std::vector<std::string> addresses, outside_list;
  if (by_address) address_acls(policy.allow, addresses, outside_list);
  for (const auto& a : addresses) conf << "acl egress_addresses dst " << a << '\n';
  for (const auto& o : outside_list) conf << "acl egress_outside dst " << o << '\n';
  for (const auto& c : client_networks) conf << "acl egress_clients src " << c << '\n';

  // Refusals that need no name lookup first (the cache manager, other sources, other ports),
  // then the list, then nothing. A `dst` acl (to_localhost, ...) makes Squid resolve the name,
  // so it never comes before the name acls: a refused name is never looked up, and a name sent to
  // the proxy cannot carry data out through its resolver. An allowed name is still refused when
  // it resolves to the proxy's loopback or to a link-local address (cloud metadata).
  conf << "http_access deny manager\n";
  if (!client_networks.empty()) conf << "http_access deny !egress_clients\n";
  conf << "http_access deny !egress_ports\n";
  constexpr const char* kNotLocal = " !to_localhost !egress_linklocal\n";
  if (!hosts.empty()) conf << "http_access allow egress_hosts" << kNotLocal;
  if (!wildcards.empty()) conf << "http_access allow egress_wildcards" << kNotLocal;
  // Address entries need every name looked up to compare its addresses (see docker-backend.md).
  if (!addresses.empty())
    conf << "http_access allow egress_addresses" << (outside_list.empty() ? "" : " !egress_outside")
         << kNotLocal;
  conf << "http_access deny all\n";
  // Squid picks the page of the last acl on the refusing line.
  for (const char* acl : {"manager", "egress_clients", "egress_ports", "all"}) {
    if (std::string(acl) == "egress_clients" && client_networks.empty()) continue;
    conf << "deny_info 403:" << kPageName << ' ' << acl << '\n';
  }
  return conf.str();
}

std::string render_egress_error_page(const EgressPolicy& policy, const std::string& agent_label) {
  std::string allowed;
  for (const auto& entry : policy.allow) allowed += (allowed.empty() ? "" : ", ") + entry.text;
  std::string ports;
  for (const auto port : policy.ports) ports += (ports.empty() ? "" : ", ") + std::to_string(port);
  // The entries cannot hold '%' (the parser refuses it), so nothing here is a Squid code by
  // accident; the label is reduced to [A-Za-z0-9._-].
  return "execmcp egress proxy: refused %M to %H port %p: not in the egress allow list of agent " +
         log_label(agent_label) + ".\nAllowed hosts: " + allowed + "\nAllowed ports: " + ports +
         "\nAsk for the host to be added to egress.allow in the agent's settings if it is "
         "needed.\n";
}

std::vector<std::string> egress_proxy_env(const EgressPolicy& policy,
                                          const std::string& agent_label,
                                          const std::vector<std::string>& client_networks) {
  return {
      std::string(kEgressConfVariable) + "=" +
          render_squid_conf(policy, agent_label, client_networks),
      std::string(kEgressErrorPageVariable) + "=" + render_egress_error_page(policy, agent_label)};
}

std::vector<std::string> egress_client_env(const std::string& proxy_host) {
  const std::string url = "http://" + proxy_host + ":" + std::to_string(kEgressProxyPort);
  const std::string local = "localhost,127.0.0.1,::1";
  return {"HTTP_PROXY=" + url,  "HTTPS_PROXY=" + url, "http_proxy=" + url,
          "https_proxy=" + url, "NO_PROXY=" + local,  "no_proxy=" + local};
}

std::optional<EgressLogRecord> parse_egress_log_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  std::vector<std::string> fields;
  std::istringstream in{std::string(line)};
  for (std::string field; in >> field;) fields.push_back(field);
  // tag label time client method host port squid-status http-status err-code upstream
  if (fields.size() != 11 || fields[0] != kLogTag) return std::nullopt;
  EgressLogRecord record;
  record.agent = fields[1];
  record.client = fields[3];
  record.method = fields[4];
  record.host = fields[5];
  unsigned port = 0;
  const auto& port_text = fields[6];
  if (port_text != "-") {
    const auto [ptr, ec] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port > 65535)
      return std::nullopt;
  }
  record.port = static_cast<std::uint16_t>(port);
  record.squid_status = fields[7];
  const auto& status_text = fields[8];
  const auto [ptr, ec] = std::from_chars(
      status_text.data(), status_text.data() + status_text.size(), record.http_status);
  if (ec != std::errc()) return std::nullopt;
  // Squid logs a deny_info page with its status: "403:ERR_EXECMCP_EGRESS_DENIED".
  record.refused = std::string_view(fields[9]).ends_with(kPageName);
  record.upstream = fields[10] == "-" ? "" : fields[10];
  return record;
}

}  // namespace execmcp::plugins::docker_common
