// OriginPolicy and HostPolicy: loopback origins and hosts always, listed ones case-insensitively,
// nothing that only looks like them.
#include "transport/http/origin_policy.hpp"

#include <gtest/gtest.h>

namespace execmcp::host::http {
namespace {

TEST(OriginPolicy, LoopbackOriginsOnAnyPortAreAllowed) {
  const OriginPolicy policy({});
  for (const char* origin : {"http://localhost", "https://localhost:8443", "http://127.0.0.1:3000",
                             "http://[::1]", "https://[::1]:1", "HTTP://LOCALHOST:80"}) {
    EXPECT_TRUE(policy.allows(origin)) << origin;
  }
}

TEST(OriginPolicy, LookalikesOfLoopbackAreRefused) {
  const OriginPolicy policy({});
  for (const char* origin :
       {"http://localhost.evil.com", "http://127.0.0.1.nip.io", "http://localhost:80/path",
        "http://localhost:", "http://localhost:1234567", "ftp://localhost", "null", "",
        "http://user@localhost", "http://127.0.0.2", "http://[::2]"}) {
    EXPECT_FALSE(policy.allows(origin)) << origin;
  }
}

TEST(OriginPolicy, ListedOriginsAreAllowedIgnoringCaseAndATrailingSlash) {
  const OriginPolicy policy({"https://App.example.com/", "http://10.0.0.5:8080"});
  EXPECT_TRUE(policy.allows("https://app.example.com"));
  EXPECT_TRUE(policy.allows("http://10.0.0.5:8080"));
  EXPECT_FALSE(policy.allows("http://app.example.com"));
  EXPECT_FALSE(policy.allows("https://app.example.com:444"));
  EXPECT_FALSE(policy.allows("http://10.0.0.5"));
}

TEST(HostPolicy, LoopbackHostsOnAnyPortAreAllowed) {
  const HostPolicy policy({});
  for (const char* host : {"localhost", "LOCALHOST:8000", "127.0.0.1", "127.0.0.1:1",
                           "127.255.3.4:65535", "[::1]", "[::1]:8443", "localhost:"}) {
    EXPECT_TRUE(policy.allows(host)) << host;
  }
}

TEST(HostPolicy, LookalikesOfLoopbackAreRefused) {
  const HostPolicy policy({});
  for (const char* host :
       {"localhost.evil.com", "127.0.0.1.nip.io", "evil.localhost", "127.0.0.1:80x",
        "localhost:1234567", "[::1", "::1", "[::1]x", "127.256.0.1", "127.0.0", "127.0.0.1.",
        "128.0.0.1", "1270.0.0.1", "", ":80", "user@localhost", "localhost/x", "[::2]"}) {
    EXPECT_FALSE(policy.allows(host)) << host;
  }
}

TEST(HostPolicy, ListedHostsMatchIgnoringCaseAndAnyPortUnlessOneIsGiven) {
  const HostPolicy policy({"MCP.Example.com", "other.example:8443", "[2001:db8::1]"});
  EXPECT_TRUE(policy.allows("mcp.example.com"));
  EXPECT_TRUE(policy.allows("mcp.EXAMPLE.com:9"));
  EXPECT_TRUE(policy.allows("other.example:8443"));
  EXPECT_TRUE(policy.allows("[2001:DB8::1]:80"));
  EXPECT_FALSE(policy.allows("other.example"));
  EXPECT_FALSE(policy.allows("other.example:8444"));
  EXPECT_FALSE(policy.allows("sub.mcp.example.com"));
  EXPECT_FALSE(policy.allows("mcp.example.com.evil"));
}

}  // namespace
}  // namespace execmcp::host::http
