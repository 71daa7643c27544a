// The placement record: written and read back, absent, not a record, a symlink refused.
#include "docker_swarm/placement_record.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace execmcp::plugins::docker_swarm {
namespace {

namespace fs = std::filesystem;

class PlacementRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("execmcp-placement-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

TEST_F(PlacementRecordTest, RoundTrip) {
  const Placement p{"node-id-1", "worker-2", "execmcp-a-alice-0123abcd", 1764384000};
  ASSERT_EQ(write_placement(dir.string(), p), "");
  EXPECT_EQ(fs::status(placement_path(dir.string())).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  std::string error;
  const auto back = read_placement(dir.string(), error);
  ASSERT_TRUE(back.has_value()) << error;
  EXPECT_EQ(back->node_id, p.node_id);
  EXPECT_EQ(back->hostname, p.hostname);
  EXPECT_EQ(back->volume, p.volume);
  EXPECT_EQ(back->created, p.created);
  // Written again (moved to another node): replaced whole, no temporary left.
  ASSERT_EQ(write_placement(dir.string(), {"node-id-3", "worker-3", "v2", 1}), "");
  EXPECT_EQ(read_placement(dir.string(), error)->node_id, "node-id-3");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

TEST_F(PlacementRecordTest, AbsentIsNoRecordAndNoError) {
  std::string error = "x";
  EXPECT_FALSE(read_placement(dir.string(), error).has_value());
  EXPECT_EQ(error, "");
}

TEST_F(PlacementRecordTest, NotARecordIsAnErrorNamingTheFile) {
  std::ofstream(placement_path(dir.string())) << R"({"node_id":"n"})";
  std::string error;
  EXPECT_FALSE(read_placement(dir.string(), error).has_value());
  EXPECT_NE(error.find(".execmcp-placement is not a placement record"), std::string::npos) << error;
  std::ofstream(placement_path(dir.string())) << std::string(5000, ' ');
  EXPECT_FALSE(read_placement(dir.string(), error).has_value());
  EXPECT_NE(error.find("longer than"), std::string::npos) << error;
}

TEST_F(PlacementRecordTest, SymlinkIsRefused) {
  std::ofstream(dir / "elsewhere") << R"({"node_id":"n","volume":"v"})";
  fs::create_symlink(dir / "elsewhere", placement_path(dir.string()));
  std::string error;
  EXPECT_FALSE(read_placement(dir.string(), error).has_value());
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
}

}  // namespace
}  // namespace execmcp::plugins::docker_swarm
