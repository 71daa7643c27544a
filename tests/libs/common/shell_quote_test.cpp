// Tests that shell_quote() gives a POSIX shell back exactly the bytes it was given, as one word.
#include "execmcp/common/shell_quote.hpp"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace execmcp::common {
namespace {

// What /bin/sh prints for `printf %s <quoted>` (one argument, its bytes as they arrived).
std::string echoed_by_sh(const std::string& word) {
  const std::string command = "printf %s " + shell_quote(word) + "; printf '|%s' \"$#\"";
  FILE* pipe = ::popen(("/bin/sh -c " + shell_quote(command) + " sh").c_str(), "r");
  if (pipe == nullptr) return "(popen failed)";
  std::string out;
  std::array<char, 4096> buf{};
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0;)
    out.append(buf.data(), n);
  ::pclose(pipe);
  return out;
}

TEST(ShellQuote, QuotesInSingleQuotesAndEscapesOnlyTheQuote) {
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

TEST(ShellQuote, TheShellReadsBackTheSameBytes) {
  for (const std::string& word :
       {std::string("plain"), std::string("$(rm -rf /) `id` $HOME ${X:-y}"), std::string("'\"'\"'"),
        std::string("a\nb\tc"), std::string("*?[a]~ ; & | < > # !"), std::string("\xff\x01 bytes")})
    EXPECT_EQ(echoed_by_sh(word), word + "|0") << word;
}

}  // namespace
}  // namespace execmcp::common
