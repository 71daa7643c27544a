// Text from agents, commands and plugins on its way into a log line, an audit record or an answer
// that only names it: bounded, and for logs escaped, so a caller can neither fill a disk through
// the log nor forge or garble its lines.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace execmcp::host {

// The most one log record's message holds (before the time and level are added); the same bound
// the Docker plugins put on one message of their own.
inline constexpr std::size_t kLogRecordBytes = 16 * 1024;

// `text` as it is when it has at most `max_bytes` bytes; otherwise its start, cut between two
// UTF-8 characters, then "… (N bytes, cut)" with N the size of `text`: at most `max_bytes` bytes
// in all (`max_bytes` at least 64). The kept bytes are not otherwise changed.
[[nodiscard]] std::string cut_text(std::string_view text, std::size_t max_bytes);

// `text` made safe for one log line: valid UTF-8 is kept; every byte below 0x20, DEL, every C1
// control (U+0080 to U+009F, which some terminals obey) and every byte that is not part of valid
// UTF-8 is written as \xNN, so no newline, carriage return or terminal escape passes. At most
// `max_bytes` bytes in all (at least 64): past that, " ... (N more bytes not logged)". The rules
// of the Docker plugins' log_text(), so text they escaped passes unchanged ('\' itself is kept).
[[nodiscard]] std::string log_safe_text(std::string_view text,
                                        std::size_t max_bytes = kLogRecordBytes);

}  // namespace execmcp::host
