// See runner_protocol.hpp. Payloads are NUL-separated fields; numbers are decimal.
#include "runner_protocol.hpp"

#include <charconv>

namespace execmcp::plugins::supervision::runner {

namespace {

void put_u32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((v >> shift) & 0xff));
}

std::uint32_t get_u32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

bool known_type(std::uint8_t t) {
  return t >= static_cast<std::uint8_t>(FrameType::kHello) &&
         t <= static_cast<std::uint8_t>(FrameType::kFileDone);
}

void put_field(std::string& out, std::string_view field) {
  out.append(field);
  out.push_back('\0');
}

// Splits a payload of NUL-terminated fields; nullopt unless it ends with a NUL.
std::optional<std::vector<std::string_view>> fields(std::string_view payload) {
  if (!payload.empty() && payload.back() != '\0') return std::nullopt;
  std::vector<std::string_view> out;
  while (!payload.empty()) {
    const auto end = payload.find('\0');
    out.push_back(payload.substr(0, end));
    payload.remove_prefix(end + 1);
  }
  return out;
}

template <class T>
bool parse_number(std::string_view s, T& value) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

void append_frame(std::string& out, FrameType type, std::uint32_t call, std::string_view payload) {
  put_u32(out, static_cast<std::uint32_t>(payload.size()));
  put_u32(out, call);
  out.push_back(static_cast<char>(type));
  out.append(payload);
}

std::optional<Frame> FrameReader::next() {
  if (!error_.empty()) return std::nullopt;
  const std::size_t have = buffer_.size() - offset_;
  if (have < kHeaderSize) {
    if (offset_ > 0 && offset_ == buffer_.size()) buffer_.clear(), offset_ = 0;
    return std::nullopt;
  }
  const char* p = buffer_.data() + offset_;
  const std::uint32_t length = get_u32(p);
  const auto type = static_cast<std::uint8_t>(p[8]);
  if (length > kMaxPayload) {
    error_ = "a frame of " + std::to_string(length) + " bytes (the limit is " +
             std::to_string(kMaxPayload) + ")";
    return std::nullopt;
  }
  if (!known_type(type)) {
    error_ = "a frame of unknown type " + std::to_string(type);
    return std::nullopt;
  }
  if (have < kHeaderSize + length) return std::nullopt;
  Frame f;
  f.type = static_cast<FrameType>(type);
  f.call = get_u32(p + 4);
  f.payload.assign(p + kHeaderSize, length);
  offset_ += kHeaderSize + length;
  // Compact once the consumed prefix dominates, so a long channel's buffer stays small.
  if (offset_ > 64 * 1024 && offset_ * 2 > buffer_.size()) {
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
  return f;
}

std::string encode_run(const RunSpec& spec) {
  std::string out;
  put_field(out, std::to_string(spec.output_cap));
  put_field(out, spec.retain_output ? "" : "s");  // flags: s = stream only, keep nothing
  put_field(out, spec.work_dir);
  put_field(out, spec.shell);
  put_field(out, spec.command);
  for (const auto& e : spec.env) put_field(out, e);
  return out;
}

std::optional<RunSpec> decode_run(std::string_view payload) {
  auto f = fields(payload);
  if (!f || f->size() < 5) return std::nullopt;
  RunSpec spec;
  if (!parse_number((*f)[0], spec.output_cap)) return std::nullopt;
  if ((*f)[1] == "s") {
    spec.retain_output = false;
  } else if (!(*f)[1].empty()) {
    return std::nullopt;
  }
  spec.work_dir = (*f)[2];
  spec.shell = (*f)[3];
  spec.command = (*f)[4];
  if (spec.work_dir.empty() || spec.work_dir.front() != '/' || spec.shell.empty() ||
      spec.shell.front() != '/')
    return std::nullopt;
  for (std::size_t i = 5; i < f->size(); ++i) {
    if ((*f)[i].find('=') == std::string_view::npos) return std::nullopt;
    spec.env.emplace_back((*f)[i]);
  }
  return spec;
}

std::string encode_done(const DoneReport& report) {
  std::string out;
  put_field(out, std::to_string(report.exit_code));
  std::string flags;
  if (report.killed) flags.push_back('k');
  if (report.not_run) flags.push_back('n');
  if (report.stdout_truncated) flags.push_back('o');
  if (report.stderr_truncated) flags.push_back('e');
  if (report.signalled) flags.push_back('s');
  put_field(out, flags);
  put_field(out, report.error);
  for (const auto& n : report.notices) put_field(out, n);
  return out;
}

std::optional<DoneReport> decode_done(std::string_view payload) {
  auto f = fields(payload);
  if (!f || f->size() < 3) return std::nullopt;
  DoneReport r;
  if (!parse_number((*f)[0], r.exit_code) || r.exit_code < -1 || r.exit_code > 255)
    return std::nullopt;
  for (char c : (*f)[1]) {
    if (c == 'k')
      r.killed = true;
    else if (c == 'n')
      r.not_run = true;
    else if (c == 'o')
      r.stdout_truncated = true;
    else if (c == 'e')
      r.stderr_truncated = true;
    else if (c == 's')
      r.signalled = true;
    else
      return std::nullopt;
  }
  r.error = (*f)[2];
  for (std::size_t i = 3; i < f->size(); ++i) r.notices.emplace_back((*f)[i]);
  return r;
}

std::string encode_kill(std::uint32_t grace_ms) {
  std::string out;
  put_u32(out, grace_ms);
  return out;
}

std::optional<std::uint32_t> decode_kill(std::string_view payload) {
  if (payload.empty()) return 0;
  if (payload.size() != 4) return std::nullopt;
  return get_u32(payload.data());
}

std::string encode_pid(std::uint32_t pid) {
  std::string out;
  put_u32(out, pid);
  return out;
}

std::optional<std::uint32_t> decode_pid(std::string_view payload) {
  if (payload.size() != 4) return std::nullopt;
  const std::uint32_t pid = get_u32(payload.data());
  if (pid == 0 || pid > 0x3fffffff) return std::nullopt;  // beyond any pid_max
  return pid;
}

namespace {

bool known_op(char op) {
  return op == 'r' || op == 'w' || op == 's' || op == 'l';
}

bool known_kind(char kind) {
  return std::string_view("fdlpscb-?").find(kind) != std::string_view::npos;
}

}  // namespace

std::string encode_file(const FileRequest& request) {
  std::string out;
  put_field(out, std::string(1, static_cast<char>(request.op)));
  put_field(out, request.cwd);
  put_field(out, request.path);
  put_field(out, std::to_string(request.offset));
  put_field(out, std::to_string(request.max_bytes));
  return out;
}

std::optional<FileRequest> decode_file(std::string_view payload) {
  auto f = fields(payload);
  if (!f || f->size() != 5) return std::nullopt;
  FileRequest r;
  if ((*f)[0].size() != 1 || !known_op((*f)[0][0])) return std::nullopt;
  r.op = static_cast<FileOp>((*f)[0][0]);
  r.cwd = (*f)[1];
  r.path = (*f)[2];
  if (r.cwd.empty() || r.cwd.front() != '/' || r.path.empty()) return std::nullopt;
  if (!parse_number((*f)[3], r.offset) || !parse_number((*f)[4], r.max_bytes)) return std::nullopt;
  return r;
}

std::string encode_file_done(const FileReport& report) {
  std::string out;
  put_field(out, report.error);
  put_field(out, std::string(1, report.kind));
  put_field(out, report.truncated ? "t" : "");
  put_field(out, std::to_string(report.size));
  put_field(out, std::to_string(report.mode));
  put_field(out, std::to_string(report.mtime));
  return out;
}

std::optional<FileReport> decode_file_done(std::string_view payload) {
  auto f = fields(payload);
  if (!f || f->size() != 6) return std::nullopt;
  FileReport r;
  r.error = (*f)[0];
  if ((*f)[1].size() != 1 || !known_kind((*f)[1][0])) return std::nullopt;
  r.kind = (*f)[1][0];
  if ((*f)[2] == "t") {
    r.truncated = true;
  } else if (!(*f)[2].empty()) {
    return std::nullopt;
  }
  if (!parse_number((*f)[3], r.size) || !parse_number((*f)[4], r.mode) || r.mode > 07777 ||
      !parse_number((*f)[5], r.mtime))
    return std::nullopt;
  return r;
}

std::string encode_entry(char kind, std::string_view name) {
  std::string out(1, kind);
  out.append(name);
  out.push_back('\0');
  return out;
}

std::optional<std::vector<Entry>> decode_entries(std::string_view bytes) {
  auto f = fields(bytes);
  if (!f) return std::nullopt;
  std::vector<Entry> out;
  out.reserve(f->size());
  for (auto field : *f) {
    // A kind and a name; a name is never empty, "." or "..", and holds no '/'.
    if (field.size() < 2 || !known_kind(field[0])) return std::nullopt;
    const auto name = field.substr(1);
    if (name == "." || name == ".." || name.find('/') != std::string_view::npos)
      return std::nullopt;
    out.push_back({field[0], std::string(name)});
  }
  return out;
}

}  // namespace execmcp::plugins::supervision::runner
