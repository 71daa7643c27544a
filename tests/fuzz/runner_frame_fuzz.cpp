// libFuzzer target: the frames execmcp-runner and the docker-api backend exchange (bytes from a
// container are untrusted). The stream is cut into frames whole and again fed in two pieces at a
// point the input chooses: both must give the same frames and the same verdict. Every payload is
// also decoded as a run request, a report, a file request, a file report and a list's entries,
// and what decodes must survive a re-encoding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "supervision/runner_protocol.hpp"

namespace rp = execmcp::plugins::supervision::runner;

namespace {

std::vector<rp::Frame> cut(const std::vector<std::string_view>& pieces, std::string& error) {
  rp::FrameReader reader;
  std::vector<rp::Frame> frames;
  for (auto piece : pieces) {
    reader.feed(piece);
    while (auto f = reader.next()) frames.push_back(std::move(*f));
  }
  error = reader.error();
  return frames;
}

void check_payload(const std::string& payload) {
  if (auto run = rp::decode_run(payload)) {
    auto again = rp::decode_run(rp::encode_run(*run));
    if (!again || again->command != run->command || again->env != run->env ||
        again->output_cap != run->output_cap || again->work_dir != run->work_dir ||
        again->retain_output != run->retain_output)
      std::abort();
  }
  if (auto grace = rp::decode_kill(payload)) {
    if (!payload.empty() && rp::decode_kill(rp::encode_kill(*grace)) != grace) std::abort();
  }
  if (auto pid = rp::decode_pid(payload)) {
    if (*pid == 0 || rp::encode_pid(*pid) != payload) std::abort();
  }
  if (auto done = rp::decode_done(payload)) {
    auto again = rp::decode_done(rp::encode_done(*done));
    if (!again || again->exit_code != done->exit_code || again->killed != done->killed ||
        again->error != done->error || again->notices != done->notices)
      std::abort();
  }
  if (auto file = rp::decode_file(payload)) {
    if (file->cwd.empty() || file->cwd.front() != '/' || file->path.empty()) std::abort();
    auto again = rp::decode_file(rp::encode_file(*file));
    if (!again || again->op != file->op || again->cwd != file->cwd || again->path != file->path ||
        again->offset != file->offset || again->max_bytes != file->max_bytes)
      std::abort();
  }
  if (auto report = rp::decode_file_done(payload)) {
    if (report->mode > 07777) std::abort();
    auto again = rp::decode_file_done(rp::encode_file_done(*report));
    if (!again || again->error != report->error || again->kind != report->kind ||
        again->truncated != report->truncated || again->size != report->size ||
        again->mode != report->mode || again->mtime != report->mtime)
      std::abort();
  }
  if (auto entries = rp::decode_entries(payload)) {
    std::string again;
    for (const auto& e : *entries) {
      if (e.name.empty() || e.name == "." || e.name == ".." ||
          e.name.find('/') != std::string::npos || e.name.find('\0') != std::string::npos)
        std::abort();
      again += rp::encode_entry(e.kind, e.name);
    }
    if (again != payload) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::size_t split = stream.empty() ? 0 : data[0] % (stream.size() + 1);
  std::string whole_error, split_error;
  const auto whole = cut({stream}, whole_error);
  const auto pieces = cut({stream.substr(0, split), stream.substr(split)}, split_error);
  if (whole.size() != pieces.size() || whole_error != split_error) std::abort();
  for (std::size_t i = 0; i < whole.size(); ++i) {
    if (whole[i].payload != pieces[i].payload || whole[i].call != pieces[i].call ||
        whole[i].type != pieces[i].type || whole[i].payload.size() > rp::kMaxPayload)
      std::abort();
    check_payload(whole[i].payload);
  }
  return 0;
}
