// The injector's log line: a round trip of every kind, escaping, the path cut, and lines that are
// not ours.
#include "execmcp/egress_secrets/event_line.hpp"

#include <gtest/gtest.h>

#include <string>

namespace es = execmcp::egress_secrets;

namespace {

void expect_round_trip(const es::SecretEvent& event) {
  const auto line = es::format_event_line(event);
  EXPECT_LT(line.size(), 4096u);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const auto back = es::parse_event_line(line);
  ASSERT_TRUE(back) << line;
  EXPECT_EQ(back->kind, event.kind);
  EXPECT_EQ(back->label, event.label);
  EXPECT_EQ(back->secret, event.secret);
  EXPECT_EQ(back->method, event.method);
  EXPECT_EQ(back->host, event.host);
  EXPECT_EQ(back->path, event.path);
  EXPECT_EQ(back->detail, event.detail);
}

}  // namespace

TEST(EventLine, FormatsTheDocumentedFields) {
  es::SecretEvent e{es::SecretEvent::Kind::kWithheld,
                    "agent-1",
                    "GITHUB_TOKEN",
                    "POST",
                    "api.test",
                    "/repos/x",
                    "method"};
  EXPECT_EQ(es::format_event_line(e),
            "execmcp-secret agent-1 withheld GITHUB_TOKEN POST api.test /repos/x method");
}

TEST(EventLine, RoundTripsEveryKind) {
  for (auto kind : {es::SecretEvent::Kind::kInjected, es::SecretEvent::Kind::kWithheld,
                    es::SecretEvent::Kind::kScrubbed, es::SecretEvent::Kind::kRefused}) {
    expect_round_trip({kind, "a", "S", "GET", "h.test", "/p", "3"});
  }
}

TEST(EventLine, EscapesSpacesNewlinesPercentAndNonAscii) {
  es::SecretEvent e{
      es::SecretEvent::Kind::kRefused,      "agent one", "", "", "h.test", "/a b%20c\xc3\xa9",
      "Content-Encoding br\nis refused\r\t"};
  const auto line = es::format_event_line(e);
  EXPECT_EQ(line,
            "execmcp-secret agent%20one refused - - h.test /a%20b%2520c%C3%A9 "
            "Content-Encoding%20br%0Ais%20refused%0D%09");
  expect_round_trip(e);
}

TEST(EventLine, KeepsADashAndEmptyFieldsApart) {
  expect_round_trip({es::SecretEvent::Kind::kScrubbed, "-", "", "-", "", "-", "--"});
}

TEST(EventLine, CutsThePathBeforeItsQueryAndAt256Bytes) {
  es::SecretEvent e{
      es::SecretEvent::Kind::kInjected, "a", "S", "GET", "h.test", "/p?token=xyz", ""};
  EXPECT_EQ(es::parse_event_line(es::format_event_line(e))->path, "/p");
  e.path = "/" + std::string(1000, 'x') + "?q";
  EXPECT_EQ(es::parse_event_line(es::format_event_line(e))->path, e.path.substr(0, 256));
}

TEST(EventLine, StaysUnder4KiBWithHugeFields) {
  const std::string huge(10000, '\n');
  es::SecretEvent e{es::SecretEvent::Kind::kRefused, huge, huge, huge, huge, huge, huge};
  const auto line = es::format_event_line(e);
  EXPECT_LT(line.size(), 4096u);
  EXPECT_TRUE(es::parse_event_line(line + "\n"));
  EXPECT_TRUE(es::parse_event_line(line + "\r\n"));
}

TEST(EventLine, IgnoresLinesThatAreNotOurs) {
  for (const char* line : {
           "", "1700000000.000 5 10.0.0.2 TCP_TUNNEL/200 0 CONNECT api.test:443 - HIER_DIRECT/x -",
           "execmcp-secret a injected S GET h /p",           // a field short
           "execmcp-secret a injected S GET h /p d extra",   // a field too many
           "execmcp-secret a exploded S GET h /p d",         // not a kind
           "execmcp-secret a injected S GET h /p%2",         // a cut escape
           "execmcp-secret a injected S GET h /p%zz d",      // not hex
           "execmcp-secret a injected S  GET h /p d",        // an empty field
           "execmcp-secret a injected S GET h /p\xc3\xa9 d"  // a raw non-ASCII byte
       }) {
    EXPECT_FALSE(es::parse_event_line(line)) << line;
  }
}
