// OriginPolicy: loopback origins always, listed ones case-insensitively, nothing that only looks
// like them.
#include "http/origin_policy.hpp"

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

}  // namespace
}  // namespace execmcp::host::http
