// Tests of SignalService: the first signal noted while agents start, a second fatal; each one
// handed to watch() while serving; instances nest.
#include "common/signal_service.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <thread>

namespace execmcp::host {
namespace {

TEST(SignalService, NotesTheFirstSignalWhileAgentsStart) {
  const SignalService signals(SignalService::Mode::kNoteFirst);
  EXPECT_EQ(signals.noted(), 0);
  std::raise(SIGTERM);
  EXPECT_EQ(signals.noted(), SIGTERM);
}

TEST(SignalServiceDeathTest, ASecondSignalWhileAgentsStartEndsTheProgram) {
  EXPECT_EXIT(
      {
        const SignalService signals(SignalService::Mode::kNoteFirst);
        std::raise(SIGINT);
        std::raise(SIGINT);
        std::exit(0);
      },
      ::testing::KilledBySignal(SIGINT), "");
}

TEST(SignalService, HandsEachSignalToTheWatcher) {
  const SignalService signals(SignalService::Mode::kForward);
  std::raise(SIGTERM);  // before watch(): kept for it
  int seen = 0;
  std::thread watcher([&] {
    signals.watch([&] {
      if (++seen == 2) signals.wake();
    });
  });
  std::raise(SIGINT);
  watcher.join();
  EXPECT_EQ(seen, 2);
}

TEST(SignalService, TheInnermostInstanceGetsTheSignals) {
  const SignalService outer(SignalService::Mode::kNoteFirst);
  {
    const SignalService inner(SignalService::Mode::kForward);
    std::raise(SIGTERM);
    int seen = 0;
    std::thread watcher([&] {
      inner.watch([&] {
        ++seen;
        inner.wake();
      });
    });
    watcher.join();
    EXPECT_EQ(seen, 1);
    EXPECT_EQ(outer.noted(), 0);
  }
  std::raise(SIGINT);
  EXPECT_EQ(outer.noted(), SIGINT);
}

}  // namespace
}  // namespace execmcp::host
