// Tests of an agent's background shells: the line ring, cursors, the table's ids, limit, statuses,
// retention, kill and close, and ConfiguredAgent's filters, capability and shutdown order.
#include "agent/background_shells.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "agent/configured_agent.hpp"
#include "agent/fake_background_backend.hpp"
#include "agent/lazy_agent.hpp"

namespace execmcp::host {
namespace {

using ::testing::ElementsAre;
using testing::FakeBackgroundBackend;
using ::testing::HasSubstr;

std::vector<std::string> kept(const LineRing& ring) {
  std::vector<std::string> lines;
  for (auto seq = ring.first_seq(); seq < ring.next_seq(); ++seq) lines.push_back(ring.line(seq));
  return lines;
}

TEST(LineRing, SplitsLinesAnywhereAndHoldsTheTailApart) {
  const std::string input = "one\ntwo\n\nthree";
  for (std::size_t split = 0; split <= input.size(); ++split) {
    LineRing ring(100, 1 << 20);
    ring.append(std::string_view(input).substr(0, split));
    ring.append(std::string_view(input).substr(split));
    EXPECT_THAT(kept(ring), ElementsAre("one", "two", "")) << split;
    EXPECT_EQ(ring.tail(), "three");
    ring.finish();
    EXPECT_THAT(kept(ring), ElementsAre("one", "two", "", "three"));
    EXPECT_EQ(ring.tail(), "");
  }
}

TEST(LineRing, KeepsTheNewestLinesWithinBothBounds) {
  LineRing by_lines(3, 1 << 20);
  for (int i = 0; i < 10; ++i) by_lines.append("line " + std::to_string(i) + "\n");
  EXPECT_THAT(kept(by_lines), ElementsAre("line 7", "line 8", "line 9"));
  EXPECT_EQ(by_lines.first_seq(), 7u);
  EXPECT_EQ(by_lines.next_seq(), 10u);

  LineRing by_bytes(1000, 10);
  for (int i = 0; i < 10; ++i) by_bytes.append("abcd\n");  // 4 bytes a line
  EXPECT_EQ(kept(by_bytes).size(), 2u);
  EXPECT_LE(by_bytes.kept_bytes(), 10u);
}

TEST(LineRing, CutsALineAt64KiBAndDropsItsRest) {
  LineRing ring(10, 1 << 20);
  const std::string huge(200 * 1024, 'x');
  for (std::size_t at = 0; at < huge.size(); at += 7000)
    ring.append(std::string_view(huge).substr(at, 7000));
  EXPECT_LE(ring.kept_bytes(), kBackgroundMaxLineBytes);  // memory stays bounded mid-line
  ring.append("\nnext\n");
  ASSERT_EQ(kept(ring).size(), 2u);
  EXPECT_EQ(kept(ring)[0].size(), kBackgroundMaxLineBytes);
  EXPECT_EQ(kept(ring)[1], "next");
  EXPECT_EQ(ring.truncated_lines(), 1u);
}

TEST(OutputCursor, RoundTripsAndRefusesAnythingElse) {
  const auto cursor = parse_cursor(format_cursor({12, 3}));
  ASSERT_TRUE(cursor);
  EXPECT_EQ(cursor->stdout_seq, 12u);
  EXPECT_EQ(cursor->stderr_seq, 3u);
  for (const char* bad : {"", "o1", "o1.e", "x1.e2", "o-1.e2", "o1.e2x", "o1e2", "o+1.e2",
                          "o99999999999999999999999.e1", " o1.e2"})
    EXPECT_FALSE(parse_cursor(bad)) << bad;
}

struct TableHarness {
  FakeBackgroundBackend backend;
  BackgroundConfig config;
  std::vector<AuditRecord> audits;
  std::mutex audit_mutex;
  std::unique_ptr<BackgroundShells> table;

  BackgroundShells& make() {
    table = std::make_unique<BackgroundShells>(backend, config, "/ws", [this](AuditRecord r) {
      std::lock_guard lock(audit_mutex);
      audits.push_back(std::move(r));
    });
    return *table;
  }
  std::string start(const std::string& command = "loop", const std::string& work_dir = "") {
    const auto result = table->start(command, work_dir, "tester");
    EXPECT_EQ(result.error, "");
    return result.status.shell_id;
  }
};

TEST(BackgroundShells, IdsAreShellAnd8HexAndUnique) {
  TableHarness h;
  h.config.max_running = 50;
  h.make();
  std::set<std::string> ids;
  for (int i = 0; i < 50; ++i) {
    const std::string id = h.start();
    EXPECT_TRUE(std::regex_match(id, std::regex("shell_[0-9a-f]{8}"))) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 50u);
}

TEST(BackgroundShells, StartReportsPidAndDirectory) {
  TableHarness h;
  h.make();
  auto result = h.table->start("loop", "sub/../src", "tester");
  EXPECT_EQ(result.status.status, "running");
  EXPECT_EQ(result.status.pid, 1001);
  EXPECT_EQ(result.status.cwd, "/ws/src");  // the backend did not say: the lexical join
  EXPECT_FALSE(result.status.exit_code);
  EXPECT_EQ(h.backend.processes.at(1).request.work_dir, "sub/../src");
  h.backend.resolved_dir = "/real/src";
  result = h.table->start("loop", "src", "tester");
  EXPECT_EQ(result.status.cwd, "/real/src");
  h.backend.start_error = "no such directory";
  result = h.table->start("loop", "nope", "tester");
  EXPECT_EQ(result.error, "Failed to start background shell: no such directory");
  EXPECT_EQ(h.table->list("t").size(), 2u);
}

TEST(BackgroundShells, TheRunningLimitHoldsWithMassGensText) {
  TableHarness h;
  h.config.max_running = 2;
  h.make();
  h.start();
  h.start();
  const auto refused = h.table->start("third", "", "tester");
  EXPECT_EQ(refused.error,
            "Failed to start background shell: Maximum concurrent shells (2) reached");
  h.backend.finish(1, {0, 0, false, {}});
  EXPECT_EQ(h.table->start("third", "", "tester").error, "");  // a finished one frees its slot
}

TEST(BackgroundShells, StatusesFollowHowTheProcessEnded) {
  TableHarness h;
  h.config.max_running = 10;
  h.make();
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(h.start());
  h.backend.finish(1, {0, 0, false, {}});
  h.backend.finish(2, {3, 0, false, {}});
  h.backend.finish(3, {-1, 9, false, {}});
  h.backend.finish(4, {-1, 9, false, "the container's agent ended"});
  auto status = [&](int i) { return *h.table->status(ids[static_cast<std::size_t>(i)], "t"); };
  EXPECT_EQ(status(0).status, "stopped");
  EXPECT_EQ(status(0).exit_code, 0);
  EXPECT_EQ(status(1).status, "failed");
  EXPECT_EQ(status(1).exit_code, 3);
  EXPECT_EQ(status(2).status, "killed");
  EXPECT_EQ(status(2).exit_code, -9);
  EXPECT_EQ(status(3).status, "failed");
  EXPECT_EQ(status(3).error, "the container's agent ended");
  EXPECT_FALSE(h.table->status("shell_00000000", "t"));
}

TEST(BackgroundShells, OutputWithoutCursorIsEverythingKeptAndWithCursorOnlyNewLines) {
  TableHarness h;
  h.config.max_output_lines = 5;
  h.make();
  const std::string id = h.start();
  h.backend.output(1, sdk::StreamKind::Stdout, "a\nb\n");
  h.backend.output(1, sdk::StreamKind::Stderr, "warn\npart");

  auto all = h.table->output(id, std::nullopt, std::nullopt, "t");
  ASSERT_EQ(all.error, "");
  EXPECT_THAT(all.stdout_slice.lines, ElementsAre("a", "b"));
  EXPECT_TRUE(all.stdout_slice.from_newest);
  EXPECT_THAT(all.stderr_slice.lines, ElementsAre("warn"));
  EXPECT_EQ(all.stderr_slice.tail, "part");

  // A reader at o2.e1 sees only what came after.
  h.backend.output(1, sdk::StreamKind::Stdout, "c\n");
  auto next = h.table->output(id, format_cursor({2, 1}), std::nullopt, "t");
  EXPECT_THAT(next.stdout_slice.lines, ElementsAre("c"));
  EXPECT_EQ(next.stdout_slice.start_seq, 2u);
  EXPECT_TRUE(next.stderr_slice.lines.empty());
  EXPECT_EQ(next.stderr_slice.tail, "part");  // shown, not consumed

  // Lines evicted before the reader saw them are counted.
  for (int i = 0; i < 10; ++i) h.backend.output(1, sdk::StreamKind::Stdout, "x\n");
  auto late = h.table->output(id, format_cursor({3, 1}), std::nullopt, "t");
  EXPECT_EQ(late.stdout_slice.dropped_lines, 5u);  // 13 lines, 5 kept: seqs 8..12
  EXPECT_EQ(late.stdout_slice.start_seq, 8u);
  EXPECT_EQ(late.stdout_slice.lines.size(), 5u);

  auto limited = h.table->output(id, format_cursor({8, 1}), 2, "t");
  EXPECT_EQ(limited.stdout_slice.lines.size(), 2u);
  EXPECT_EQ(limited.stdout_slice.start_seq, 8u);

  auto ahead = h.table->output(id, format_cursor({99, 1}), std::nullopt, "t");
  EXPECT_TRUE(ahead.stdout_slice.lines.empty());
  EXPECT_EQ(ahead.stdout_slice.start_seq, 99u);

  EXPECT_THAT(h.table->output(id, std::string("garbage"), std::nullopt, "t").error,
              HasSubstr("invalid cursor"));
  EXPECT_EQ(h.table->output("shell_nope", std::nullopt, std::nullopt, "t").error,
            "Shell not found: shell_nope");
}

TEST(BackgroundShells, KillEndsTheTreeWithTheGraceAndSaysSoOnce) {
  TableHarness h;
  h.config.kill_grace = std::chrono::milliseconds(1500);
  h.make();
  const std::string id = h.start();
  const auto killed = h.table->kill(id, "t");
  EXPECT_EQ(killed.error, "");
  EXPECT_TRUE(killed.was_running);
  EXPECT_EQ(killed.status.status, "killed");
  ASSERT_EQ(h.backend.terminations.size(), 1u);
  EXPECT_EQ(h.backend.terminations[0].second, std::chrono::milliseconds(1500));
  const auto again = h.table->kill(id, "t");
  EXPECT_FALSE(again.was_running);
  EXPECT_EQ(again.status.status, "killed");
  EXPECT_EQ(h.backend.terminations.size(), 1u);
  EXPECT_EQ(h.table->kill("shell_gone", "t").error, "Shell not found: shell_gone");
}

TEST(BackgroundShells, FinishedShellsPastTheRetentionAreEvictedOldestFirst) {
  TableHarness h;
  h.config.max_retained = 1;
  h.make();
  const std::string first = h.start();
  const std::string second = h.start();
  h.backend.finish(1, {0, 0, false, {}});
  h.backend.finish(2, {0, 0, false, {}});
  EXPECT_FALSE(h.table->status(first, "t"));
  EXPECT_TRUE(h.table->status(second, "t"));
}

TEST(BackgroundShells, AProcessThatEndsWhileStartingIsReportedEnded) {
  TableHarness h;
  h.backend.exit_during_start = true;
  h.make();
  const std::string id = h.start();
  EXPECT_EQ(h.table->status(id, "t")->status, "stopped");
  EXPECT_EQ(h.table->list("t").size(), 1u);
}

TEST(BackgroundShells, CloseEndsEveryRunningShellAtOnceAndRefusesNewOnes) {
  TableHarness h;
  h.make();
  h.start();
  h.start();
  h.backend.finish(2, {0, 0, false, {}});
  h.start();
  h.table->close();
  ASSERT_EQ(h.backend.terminations.size(), 2u);
  for (const auto& [id, grace] : h.backend.terminations) {
    EXPECT_NE(id, 2u);
    EXPECT_EQ(grace, std::chrono::milliseconds(0));
  }
  EXPECT_THAT(h.table->start("x", "", "t").error, HasSubstr("shutting down"));
}

TEST(BackgroundShells, EveryCallWritesOneAuditRecord) {
  TableHarness h;
  h.make();
  const std::string id = h.start("make build");
  (void)h.table->output(id, std::nullopt, std::nullopt, "t");
  (void)h.table->status(id, "t");
  (void)h.table->list("t");
  (void)h.table->kill(id, "t");
  ASSERT_EQ(h.audits.size(), 5u);
  EXPECT_EQ(h.audits[0].tool, "start_background_shell");
  EXPECT_EQ(h.audits[0].command, "make build");
  EXPECT_EQ(h.audits[0].shell_id, id);
  EXPECT_EQ(h.audits[0].principal, "tester");
  EXPECT_EQ(h.audits[1].tool, "get_background_shell_output");
  EXPECT_EQ(h.audits[2].tool, "get_background_shell_status");
  EXPECT_EQ(h.audits[3].tool, "list_background_shells");
  EXPECT_EQ(h.audits[4].tool, "kill_background_shell");
}

// Issue 17: a 150-byte status read made the table copy the shell's whole stored command (up to
// 128 KiB) into its answer and its audit record; with 10 shells a list answered 1.3 MB.
TEST(BackgroundShells, AReadShowsAtMost1KiBOfTheCommandAndSaysItWasCut) {
  TableHarness h;
  h.config.max_running = 10;
  h.make();
  const std::string command = "echo " + std::string(128 * 1024 - 5, 'x');
  std::vector<std::string> ids;
  for (int i = 0; i < 10; ++i) ids.push_back(h.start(command));
  h.audits.clear();

  const auto status = h.table->status(ids[0], "t");
  ASSERT_TRUE(status);
  EXPECT_LE(status->command.size(), 1024u + 32u);
  EXPECT_EQ(status->command.rfind("echo xxx", 0), 0u);
  EXPECT_THAT(status->command, ::testing::EndsWith("\xE2\x80\xA6 (131072 bytes, cut)"));
  ASSERT_EQ(h.audits.size(), 1u);
  EXPECT_LE(h.audits[0].command.size(), 1024u + 32u);

  std::size_t listed = 0;
  for (const auto& s : h.table->list("t")) listed += s.command.size();
  EXPECT_LE(listed, 10 * (1024u + 32u));
  const auto output = h.table->output(ids[1], std::nullopt, std::nullopt, "t");
  EXPECT_LE(output.status.command.size(), 1024u + 32u);
  const auto killed = h.table->kill(ids[2], "t");
  EXPECT_LE(killed.status.command.size(), 1024u + 32u);
  for (const auto& record : h.audits) EXPECT_LE(record.command.size(), 1024u + 32u) << record.tool;

  // A short command is shown whole.
  h.backend.finish(4, {0, 0, false, {}});
  const std::string short_id = h.start("make build");
  EXPECT_EQ(h.table->status(short_id, "t")->command, "make build");
}

// The cut falls between two characters, never inside one.
TEST(BackgroundShells, TheShownCommandIsCutBetweenCharacters) {
  TableHarness h;
  h.make();
  std::string command = "x";  // shifts the 3-byte characters off the cut
  for (int i = 0; i < 1000; ++i) command += "\xE2\x82\xAC";  // U+20AC
  const std::string id = h.start(command);
  const std::string shown = h.table->status(id, "t")->command;
  const std::string kept = shown.substr(0, shown.find(" (3001 bytes, cut)"));
  ASSERT_NE(kept.size(), shown.size()) << shown;
  EXPECT_EQ((kept.size() - 1 - 3) % 3, 0u) << kept.size();  // 'x', whole euros, then the ellipsis
  EXPECT_EQ(kept.substr(kept.size() - 3), "\xE2\x80\xA6");
}

// ---- ConfiguredAgent ----

class DenyWord final : public sdk::CommandFilter {
 public:
  [[nodiscard]] sdk::FilterVerdict check(
      const sdk::FilterRequest& request) const noexcept override {
    if (request.command.find("sudo") != std::string_view::npos)
      return sdk::FilterVerdict::deny("no-sudo", "sudo is not allowed");
    return sdk::FilterVerdict::allow();
  }
};

struct AgentHarness {
  FakeBackgroundBackend* backend = nullptr;  // owned by the agent

  std::unique_ptr<ConfiguredAgent> make(bool offer = true, bool enabled = true) {
    ConfiguredAgent::Parts parts;
    parts.id = "alpha";
    parts.cwd = "/ws";
    parts.backend_name = "fake";
    auto owned = std::make_unique<FakeBackgroundBackend>();
    owned->offer = offer;
    backend = owned.get();
    parts.backend = adopt_plugin_object<sdk::ExecutorBackend>(std::move(owned));
    parts.filters.push_back(
        {"words", adopt_plugin_object<sdk::CommandFilter>(std::make_unique<DenyWord>())});
    parts.background.enabled = enabled;
    return std::make_unique<ConfiguredAgent>(std::move(parts));
  }
};

TEST(ConfiguredAgentBackground, OfferedOnlyWhenTheBackendOffersItAndItIsEnabled) {
  AgentHarness h;
  EXPECT_TRUE(h.make()->capabilities().background);
  EXPECT_FALSE(h.make(false)->capabilities().background);
  EXPECT_FALSE(h.make(true, false)->capabilities().background);
  auto without = h.make(false);
  without->start();
  EXPECT_EQ(without->background_shells(), nullptr);
  EXPECT_THAT(UnavailableBackgroundShells().start({"sleep 1", "", "t"}).error,
              HasSubstr("not available"));
}

TEST(ConfiguredAgentBackground, TheFiltersRefuseACommandBeforeItStarts) {
  AgentHarness h;
  auto agent = h.make();
  agent->start();
  const auto refused = agent->background_shells()->start({"sudo rm -rf /", "", "t"});
  EXPECT_EQ(refused.error, "Command validation error: sudo is not allowed");
  EXPECT_EQ(refused.blocked_by, "words");
  EXPECT_EQ(refused.rule, "no-sudo");
  EXPECT_TRUE(h.backend->processes.empty());
  EXPECT_EQ(agent->background_shells()->start({"sleep 100", "", "t"}).error, "");
  EXPECT_EQ(agent->background_shells()->list("t").size(), 1u);
}

TEST(ConfiguredAgentBackground, ShutdownEndsEveryShellBeforeTheBackendStops) {
  AgentHarness h;
  auto agent = h.make();
  agent->start();
  ASSERT_EQ(agent->background_shells()->start({"sleep 100", "", "t"}).error, "");
  ASSERT_EQ(agent->background_shells()->start({"sleep 200", "", "t"}).error, "");
  agent->shutdown();
  EXPECT_THAT(h.backend->calls, ElementsAre("terminate", "terminate", "stop", "cleanup"));
  EXPECT_THAT(agent->background_shells()->start({"sleep 1", "", "t"}).error,
              HasSubstr("shutting down"));
}

TEST(LazyAgentBackground, AnswersTheCapabilityWithoutStartingAndStartsForAShell) {
  AgentHarness h;
  auto agent = h.make();
  LazyAgent lazy(*agent);
  EXPECT_TRUE(lazy.capabilities().background);
  EXPECT_FALSE(lazy.started());
  EXPECT_TRUE(lazy.background_shells()->list("t").empty());
  EXPECT_FALSE(lazy.started());
  EXPECT_EQ(lazy.background_shells()->start({"sleep 1", "", "t"}).error, "");
  EXPECT_TRUE(lazy.started());
}

}  // namespace
}  // namespace execmcp::host
