// See event_line.hpp. format_event_line returns the line without its '\n'; parse_event_line takes
// one with or without it (and a '\r' before it). A field that is "-" itself is written "%2D", so
// every field parses back to what was formatted. Each field is cut before escaping so that the
// whole line stays under 4 KiB (pipe writes of that size are atomic).
#include "execmcp/egress_secrets/event_line.hpp"

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace execmcp::egress_secrets {
namespace {

constexpr std::string_view kTag = "execmcp-secret";
// Raw bytes kept per field; escaped (3 bytes each at worst) they sum to 3,594 + the tag and spaces.
constexpr std::size_t kMaxLabelBytes = 128;
constexpr std::size_t kMaxSecretBytes = 128;
constexpr std::size_t kMaxMethodBytes = 32;
constexpr std::size_t kMaxHostBytes = 253;
constexpr std::size_t kMaxPathBytes = 256;
constexpr std::size_t kMaxDetailBytes = 400;

constexpr std::array<std::string_view, 4> kKinds = {"injected", "withheld", "scrubbed", "refused"};

std::string escaped(std::string_view field, std::size_t limit) {
  field = field.substr(0, limit);
  if (field.empty()) return "-";
  if (field == "-") return "%2D";
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : field) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < '!' || byte > '~' || c == '%') {
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    } else {
      out += c;
    }
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::optional<std::string> unescaped(std::string_view field) {
  if (field == "-") return std::string();
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    const auto byte = static_cast<unsigned char>(field[i]);
    if (byte < '!' || byte > '~') return std::nullopt;
    if (field[i] != '%') {
      out += field[i];
      continue;
    }
    if (i + 2 >= field.size()) return std::nullopt;
    const int high = hex_value(field[i + 1]);
    const int low = hex_value(field[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

}  // namespace

std::string format_event_line(const SecretEvent& event) {
  std::string_view path = event.path;
  path = path.substr(0, path.find('?'));
  std::string line(kTag);
  for (const auto& field :
       {escaped(event.label, kMaxLabelBytes), std::string(kKinds[static_cast<int>(event.kind)]),
        escaped(event.secret, kMaxSecretBytes), escaped(event.method, kMaxMethodBytes),
        escaped(event.host, kMaxHostBytes), escaped(path, kMaxPathBytes),
        escaped(event.detail, kMaxDetailBytes)}) {
    line += ' ';
    line += field;
  }
  return line;
}

std::optional<SecretEvent> parse_event_line(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::vector<std::string_view> fields;
  for (std::size_t start = 0;;) {
    const std::size_t end = line.find(' ', start);
    fields.push_back(line.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  if (fields.size() != 8 || fields[0] != kTag) return std::nullopt;
  SecretEvent event;
  std::size_t kind = 0;
  while (kind < kKinds.size() && kKinds[kind] != fields[2]) ++kind;
  if (kind == kKinds.size()) return std::nullopt;
  event.kind = static_cast<SecretEvent::Kind>(kind);
  std::string* const targets[] = {&event.label, nullptr,     &event.secret, &event.method,
                                  &event.host,  &event.path, &event.detail};
  for (std::size_t i = 0; i < 7; ++i) {
    if (targets[i] == nullptr) continue;
    if (fields[i + 1].empty()) return std::nullopt;
    auto value = unescaped(fields[i + 1]);
    if (!value) return std::nullopt;
    *targets[i] = std::move(*value);
  }
  return event;
}

}  // namespace execmcp::egress_secrets
