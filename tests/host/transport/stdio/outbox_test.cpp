// Tests for the Outbox over a transport whose client stops reading: progress is dropped, responses
// are kept in order, a client too far behind is dropped, and stop() never waits on the client.
#include "transport/stdio/outbox.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>

#include "transport/stdio/memory_transport.hpp"

namespace execmcp::host::mcp {
namespace {

using namespace std::chrono_literals;

constexpr auto kWait = 10s;

TEST(Outbox, WritesInOrderWithoutBlockingThePoster) {
  MemoryTransport transport;
  transport.stall_writes();
  Outbox outbox(transport, Outbox::Limits{1000, 100}, [] {});
  outbox.post_response("r1");
  EXPECT_TRUE(outbox.post_droppable("p1"));
  outbox.post_response("r2");
  EXPECT_TRUE(transport.written().empty());
  transport.resume_writes();
  outbox.stop(kWait);  // waits for the queue to drain
  EXPECT_EQ(transport.written(), (std::vector<std::string>{"r1", "p1", "r2"}));
}

TEST(Outbox, ProgressIsDroppedWhenTheClientLagsButResponsesAreNot) {
  MemoryTransport transport;
  transport.stall_writes();
  std::atomic<int> failures = 0;
  Outbox outbox(transport, Outbox::Limits{1000, 100}, [&] { ++failures; });
  const std::string progress(40, 'p');
  int kept = 0;
  for (int i = 0; i < 10; ++i) kept += outbox.post_droppable(progress) ? 1 : 0;
  EXPECT_EQ(kept, 2);  // 100 bytes of droppable room
  EXPECT_EQ(outbox.dropped(), 8u);
  const std::string response(300, 'r');
  outbox.post_response(response);  // past the droppable room, within max_bytes
  EXPECT_FALSE(outbox.post_droppable("p"));
  transport.resume_writes();
  outbox.stop(kWait);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(transport.written(), (std::vector<std::string>{progress, progress, response}));
}

TEST(Outbox, AClientTooFarBehindIsTreatedAsGone) {
  MemoryTransport transport;
  transport.stall_writes();
  std::atomic<int> failures = 0;
  Outbox outbox(transport, Outbox::Limits{1000, 100}, [&] { ++failures; });
  for (int i = 0; i < 20; ++i) outbox.post_response(std::string(100, 'r'));
  EXPECT_EQ(failures.load(), 1);
  outbox.post_response("late");  // discarded: nobody reads
  auto stopped = std::async(std::launch::async, [&] { outbox.stop(kWait); });
  ASSERT_EQ(stopped.wait_for(kWait), std::future_status::ready) << "stop waited on the client";
  EXPECT_EQ(failures.load(), 1);
  EXPECT_TRUE(transport.written().empty());
}

TEST(Outbox, OneResponseLargerThanTheBoundGoesOutWhenNothingElseWaits) {
  MemoryTransport transport;
  transport.stall_writes();
  std::atomic<int> failures = 0;
  Outbox outbox(transport, Outbox::Limits{1000, 100}, [&] { ++failures; });
  const std::string big(5000, 'b');
  outbox.post_response(big);
  EXPECT_EQ(failures.load(), 0);
  outbox.post_response("small");  // now 5005 bytes wait: too far behind
  EXPECT_EQ(failures.load(), 1);
  outbox.stop(0ms);
}

TEST(Outbox, StopGivesUpOnAClientThatDoesNotRead) {
  MemoryTransport transport;
  transport.stall_writes();
  Outbox outbox(transport, Outbox::Limits{}, [] {});
  outbox.post_response("never read");
  outbox.post_response("queued behind it");
  auto stopped = std::async(std::launch::async, [&] { outbox.stop(50ms); });
  ASSERT_EQ(stopped.wait_for(kWait), std::future_status::ready) << "stop waited on the client";
  EXPECT_TRUE(transport.written().empty());
}

TEST(Outbox, AFailedWriteRunsOnFailureOnce) {
  MemoryTransport transport;
  transport.fail_writes();
  std::promise<void> failed;
  std::atomic<int> failures = 0;
  Outbox outbox(transport, Outbox::Limits{}, [&] {
    if (failures++ == 0) failed.set_value();
  });
  outbox.post_response("a");
  ASSERT_EQ(failed.get_future().wait_for(kWait), std::future_status::ready);
  outbox.post_response("b");
  outbox.stop(kWait);
  EXPECT_EQ(failures.load(), 1);
}

}  // namespace
}  // namespace execmcp::host::mcp
