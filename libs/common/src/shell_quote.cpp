// See shell_quote.hpp.
#include "execmcp/common/shell_quote.hpp"

namespace execmcp::common {

std::string shell_quote(std::string_view word) {
  std::string quoted = "'";
  quoted.reserve(word.size() + 2);
  for (const char c : word) {
    if (c == '\'') {
      quoted += "'\\''";  // close, an escaped quote, reopen
    } else {
      quoted += c;
    }
  }
  quoted += '\'';
  return quoted;
}

}  // namespace execmcp::common
