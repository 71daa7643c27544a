// The egress-secrets tests' upstream (egress/secret_upstream.py, egress/secret_upstream.hpp) on the
// real engine, without a proxy: from a second container on its network, trusting the test CA,
// curl's /echo (gzip, chunked), /need-auth, git clone and push, and pip install from its index all
// work, and each request is in the record with the credentials it carried. Offline: the network
// is --internal.
#include <gtest/gtest.h>

#include <string>

#include "docker_test_support.hpp"
#include "egress/secret_upstream.hpp"

namespace execmcp::docker_test {
namespace {

constexpr const char* kValue = "upstream-test-value-0123456789";

class SecretUpstreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_ENGINE();
    network_ = "execmcp-secretup-" + std::to_string(::getpid()) + "-net";
    sh(outside_cli() + " network create --internal --label execmcp.test=secret-upstream " +
       network_);
  }
  void TearDown() override { sh(outside_cli() + " network rm " + network_); }

  // Runs `script` (sh) in a throwaway container on the network: the CA at /ca.pem, the value the
  // upstream wants in $V. Its output, both streams.
  std::string client(const SecretUpstream& up, const std::string& script, int* status) const {
    TempDir dir("upstream-client");
    write_test_file(dir.path() + "/client.sh", script);
    return sh(outside_cli() + " run --rm --network " + network_ + " -e V=" + kValue + " -v " +
                  up.ca_path() + ":/ca.pem:ro -v " + dir.path() +
                  "/client.sh:/client.sh:ro --read-only --tmpfs /tmp:rw,mode=1777"
                  " --tmpfs /home/execmcp:rw,mode=1777 --cap-drop ALL " +
                  kImage + " sh /client.sh 2>&1",
              status);
  }

  std::string network_;
};

TEST_F(SecretUpstreamTest, CurlGitAndPipWorkAgainstItAndItRecordsEachRequest) {
  SecretUpstream up(network_, {"api.test", "git.test", "pypi.test"}, kValue);
  ASSERT_EQ(up.error(), "");
  const std::string v = kValue;
  int status = -1;
  // One answer a line: the echo gzipped and chunked (curl unpacks it), its headers and the raw
  // gzip magic; the auth check without and with the value; plain HTTP; git; pip.
  const std::string out = client(up, R"(set -e
c="curl -sS --cacert /ca.pem"
$c --compressed -H "X-Probe: p1" -d body1 "https://api.test/echo?gzip=1&chunked=1" > /tmp/e.json
python3 -c 'import json; d = json.load(open("/tmp/e.json")); print(d["request_line"]); print(d["body"])'
$c -D - -o /tmp/raw "https://api.test/echo?gzip=1&chunked=1" | tr -d '\r' |
  grep -i -e ^transfer-encoding -e ^content-encoding
head -c 2 /tmp/raw | od -An -tx1 | tr -d ' '
$c -o /dev/null -w '%{http_code}\n' https://api.test/need-auth
$c -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $V" https://api.test/need-auth
curl -sS http://api.test/echo | grep -c request_line
cd /tmp
export GIT_SSL_CAINFO=/ca.pem
git clone -q "https://x:$V@git.test/git/r.git"
cd r
cat README
git -c user.name=t -c user.email=t@t commit -q --allow-empty -m pushed
git push -q origin main
echo pushed
cd /tmp
PIP_CERT=/ca.pem pip install -q --no-cache-dir --disable-pip-version-check --target /tmp/t \
  --index-url "https://__token__:$V@pypi.test/simple/" probe
PYTHONPATH=/tmp/t python3 -c 'import probe; print(probe.VALUE)'
)",
                                 &status);
  ASSERT_EQ(status, 0) << out;
  const std::string expected =
      "POST /echo?gzip=1&chunked=1 HTTP/1.1\nbody1\n"
      "Content-Encoding: gzip\nTransfer-Encoding: chunked\n1f8b\n401\n200\n1\n"
      "seeded by secret_upstream.py\npushed\nprobe 1.0\n";
  EXPECT_EQ(out, expected);

  // The push reached the repository.
  EXPECT_EQ(trim(sh(outside_cli() + " exec " + up.name() +
                    " git --git-dir=/tmp/upstream/git/r.git log -1 --format=%s main")),
            "pushed");

  // Each request is recorded with what it carried.
  const auto requests = up.requests();
  ASSERT_FALSE(requests.empty());
  const std::string basic_git = "Basic " + sh("printf 'x:" + v + "' | base64 -w0");
  const std::string basic_pip = "Basic " + sh("printf '__token__:" + v + "' | base64 -w0");
  bool echo = false, bearer = false, pushed = false, wheel = false;
  for (const auto& r : requests) {
    const std::string path = r.value("path", "");
    const std::string auth = SecretUpstream::header(r, "Authorization");
    if (path == "/echo?gzip=1&chunked=1" && SecretUpstream::header(r, "X-Probe") == "p1")
      echo = r.value("body", "") == "Ym9keTE=";  // body1
    if (path == "/need-auth" && auth == "Bearer " + v) bearer = true;
    if (path == "/git/r.git/git-receive-pack" && auth == basic_git) pushed = true;
    if (path == "/packages/probe-1.0-py3-none-any.whl" && auth == basic_pip) wheel = true;
  }
  EXPECT_TRUE(echo);
  EXPECT_TRUE(bearer);
  EXPECT_TRUE(pushed);
  EXPECT_TRUE(wheel);
  // The value is in no argv and no environment of the upstream container.
  EXPECT_EQ(sh(outside_cli() + " inspect " + up.name()).find(v), std::string::npos);
}

// A value given for one host only: git's wrong value, pip's none and the value sent to another
// host are refused; the value sent to its host is not.
TEST_F(SecretUpstreamTest, WithoutTheValueForTheHostGitAndPipAreRefused) {
  SecretUpstream up(network_, {"git.test", "pypi.test"}, std::string("pypi.test ") + kValue);
  ASSERT_EQ(up.error(), "");
  int status = -1;
  const std::string out = client(up, R"(cd /tmp
export GIT_SSL_CAINFO=/ca.pem GIT_TERMINAL_PROMPT=0
git clone -q https://x:wrong@git.test/git/r.git && echo cloned
c="curl -sS --cacert /ca.pem -o /dev/null -w %{http_code}\n"
$c https://pypi.test/simple/probe/
$c -H "Authorization: Bearer $V" https://git.test/need-auth
$c -H "Authorization: Bearer $V" https://pypi.test/need-auth
)",
                                 &status);
  EXPECT_EQ(out.find("cloned"), std::string::npos) << out;
  EXPECT_TRUE(out.ends_with("401\n401\n200\n")) << out;
}

}  // namespace
}  // namespace execmcp::docker_test
