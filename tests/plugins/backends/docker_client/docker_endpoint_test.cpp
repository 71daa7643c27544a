// Tests for DOCKER_HOST parsing, engine error messages and API version negotiation.
#include "docker_client/docker_endpoint.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace execmcp::plugins::docker_client {
namespace {

TEST(DockerEndpoint, ParsesUnixForms) {
  auto ep = parse_docker_host("unix:///var/run/docker.sock");
  EXPECT_EQ(ep.kind, DockerEndpoint::Kind::Unix);
  EXPECT_EQ(ep.path, "/var/run/docker.sock");
  EXPECT_EQ(ep.uri, "unix:///var/run/docker.sock");
  auto bare = parse_docker_host("/tmp/d.sock");
  EXPECT_EQ(bare.path, "/tmp/d.sock");
  EXPECT_EQ(bare.uri, "unix:///tmp/d.sock");
}

TEST(DockerEndpoint, ParsesTcpForms) {
  auto ep = parse_docker_host("tcp://127.0.0.1:2375");
  EXPECT_EQ(ep.kind, DockerEndpoint::Kind::Tcp);
  EXPECT_EQ(ep.host, "127.0.0.1");
  EXPECT_EQ(ep.port, "2375");
  auto v6 = parse_docker_host("tcp://[::1]:2376");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, "2376");
  EXPECT_EQ(parse_docker_host("tcp://localhost").port, "2375");
}

TEST(DockerEndpoint, RejectsNonsense) {
  EXPECT_THROW(parse_docker_host("ssh://me@host"), std::invalid_argument);
  EXPECT_THROW(parse_docker_host("unix://relative"), std::invalid_argument);
  EXPECT_THROW(parse_docker_host("tcp://host:port"), std::invalid_argument);
  EXPECT_THROW(parse_docker_host(""), std::invalid_argument);
}

TEST(DockerEndpoint, SettingBeatsEnvironmentBeatsDefault) {
  EXPECT_EQ(select_docker_host("unix:///a", "tcp://b:1"), "unix:///a");
  EXPECT_EQ(select_docker_host("", "tcp://b:1"), "tcp://b:1");
  EXPECT_EQ(select_docker_host("", ""), kDefaultDockerHost);
  EXPECT_EQ(select_docker_host("", nullptr), kDefaultDockerHost);
}

TEST(EngineMessage, PrefersTheJsonMessage) {
  EXPECT_EQ(engine_message(404, R"({"message":"No such container: x"})"),
            "HTTP 404: No such container: x");
  EXPECT_EQ(engine_message(500, "plain text\n"), "HTTP 500: plain text");
  EXPECT_EQ(engine_message(502, ""), "HTTP 502: (no message)");
}

TEST(NegotiateApiVersion, CapsAtOursAndFollowsAnOlderServer) {
  EXPECT_EQ(negotiate_api_version("1.50"), "1.41");
  EXPECT_EQ(negotiate_api_version("1.41"), "1.41");
  EXPECT_EQ(negotiate_api_version("1.40"), "1.40");
  EXPECT_EQ(negotiate_api_version("2.0"), "1.41");
  EXPECT_EQ(negotiate_api_version("garbage"), "1.41");
}

}  // namespace
}  // namespace execmcp::plugins::docker_client
