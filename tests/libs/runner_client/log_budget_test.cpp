// LogBudget: what reaches a log from one runner's stderr is bounded, line by line, and escaped.
#include "runner_client/log_budget.hpp"

#include <gtest/gtest.h>

#include <string>

namespace execmcp::plugins::runner_client {
namespace {

TEST(LogBudget, PassesLinesUntilSpentThenOnlyCounts) {
  LogBudget budget(3, 1000, 10);
  EXPECT_EQ(budget.take("one"), "one");
  EXPECT_EQ(budget.take("a line that is long", 5), "a line tha ... (14 more bytes not logged)");
  EXPECT_FALSE(budget.just_spent());
  EXPECT_EQ(budget.take("\x1b"), "\\x1b");
  EXPECT_EQ(budget.take("four"), std::nullopt);
  EXPECT_TRUE(budget.just_spent());
  EXPECT_FALSE(budget.just_spent());
  EXPECT_EQ(budget.take("five!", 3), std::nullopt);
  EXPECT_EQ(budget.dropped(), 4u + 5u + 3u);
  budget.count(1);  // a refused line's newline
  EXPECT_EQ(budget.dropped(), 4u + 5u + 3u + 1u);
  // The byte bound counts what is logged (escaped), not what came.
  LogBudget bytes(100, 8, 100);
  bytes.count(1);  // before it is spent, nothing is refused
  EXPECT_EQ(bytes.dropped(), 0u);
  EXPECT_EQ(bytes.take("\x01"), "\\x01");
  EXPECT_EQ(bytes.take("\x01\x01"), std::nullopt);
  EXPECT_TRUE(bytes.just_spent());
}

}  // namespace
}  // namespace execmcp::plugins::runner_client
