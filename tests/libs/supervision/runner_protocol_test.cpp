// The runner's frames: round trips, bytes split anywhere, and every malformed input refused.
#include "supervision/runner_protocol.hpp"

#include <gtest/gtest.h>

#include <string>

namespace execmcp::plugins::supervision::runner {
namespace {

using namespace std::string_literals;

TEST(RunnerFrames, RoundTripEvenWhenFedOneByteAtATime) {
  std::string wire;
  append_frame(wire, FrameType::kHello, 0, kVersion);
  append_frame(wire, FrameType::kStdout, 7, std::string("a\0b", 3));
  append_frame(wire, FrameType::kStdinEnd, 0xfffffffe, {});
  FrameReader reader;
  std::vector<Frame> got;
  for (char c : wire) {
    reader.feed(std::string_view(&c, 1));
    while (auto f = reader.next()) got.push_back(std::move(*f));
  }
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].type, FrameType::kHello);
  EXPECT_EQ(got[0].payload, kVersion);
  EXPECT_EQ(got[1].call, 7u);
  EXPECT_EQ(got[1].payload, std::string("a\0b", 3));
  EXPECT_EQ(got[2].call, 0xfffffffeu);
  EXPECT_TRUE(got[2].payload.empty());
  EXPECT_TRUE(reader.error().empty());
  EXPECT_EQ(reader.buffered(), 0u);
}

TEST(RunnerFrames, AnOversizeFrameIsRefusedBeforeItsPayloadArrives) {
  FrameReader reader;
  std::string header;
  append_frame(header, FrameType::kStdout, 1, {});
  header[0] = '\x7f';  // length 0x7f000000
  reader.feed(header);
  EXPECT_FALSE(reader.next());
  EXPECT_NE(reader.error().find("limit"), std::string::npos) << reader.error();
  // Nothing after an error is read.
  std::string good;
  append_frame(good, FrameType::kStdout, 1, "x");
  reader.feed(good);
  EXPECT_FALSE(reader.next());
}

TEST(RunnerFrames, AnUnknownTypeIsRefused) {
  FrameReader reader;
  std::string frame;
  append_frame(frame, FrameType::kStdout, 1, "x");
  frame[8] = 42;
  reader.feed(frame);
  EXPECT_FALSE(reader.next());
  EXPECT_NE(reader.error().find("unknown type 42"), std::string::npos) << reader.error();
}

TEST(RunnerFrames, RunSpecRoundTripAndValidation) {
  RunSpec spec;
  spec.output_cap = 1234;
  spec.work_dir = "/work";
  spec.shell = "/bin/sh";
  spec.command = "echo 'a b'\nexit 3";
  spec.env = {"A=1", "EMPTY="};
  auto back = decode_run(encode_run(spec));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->output_cap, 1234u);
  EXPECT_EQ(back->command, spec.command);
  EXPECT_EQ(back->env, spec.env);
  EXPECT_TRUE(back->retain_output);
  EXPECT_FALSE(decode_run(""));
  EXPECT_FALSE(decode_run(std::string("12\0\0/w\0/bin/sh\0cmd", 18)));   // no final NUL
  EXPECT_FALSE(decode_run(std::string("x\0\0/w\0/bin/sh\0cmd\0", 19)));  // cap not a number
  EXPECT_FALSE(decode_run(std::string("1\0\0w\0/bin/sh\0cmd\0", 18)));   // relative work_dir
  EXPECT_FALSE(decode_run(std::string("1\0\0/w\0/bin/sh\0cmd\0NOEQUALS\0", 27)));
  EXPECT_FALSE(decode_run(std::string("1\0x\0/w\0/bin/sh\0cmd\0", 19)));  // unknown flag
  EXPECT_FALSE(decode_run(std::string("1\0/w\0/bin/sh\0cmd\0", 17)));     // v3's layout
  EXPECT_TRUE(decode_run(std::string("1\0\0/w\0/bin/sh\0cmd\0", 18)));
  // A background process's call keeps nothing.
  spec.retain_output = false;
  back = decode_run(encode_run(spec));
  ASSERT_TRUE(back);
  EXPECT_FALSE(back->retain_output);
  EXPECT_EQ(back->env, spec.env);
}

TEST(RunnerFrames, DoneReportRoundTripAndValidation) {
  DoneReport r;
  r.exit_code = 137;
  r.killed = true;
  r.stderr_truncated = true;
  r.error = "";
  r.notices = {"one", "two"};
  auto back = decode_done(encode_done(r));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->exit_code, 137);
  EXPECT_TRUE(back->killed);
  EXPECT_FALSE(back->stdout_truncated);
  EXPECT_TRUE(back->stderr_truncated);
  EXPECT_FALSE(back->signalled);
  EXPECT_EQ(back->notices, r.notices);
  r.signalled = true;
  EXPECT_TRUE(decode_done(encode_done(r))->signalled);
  EXPECT_FALSE(decode_done(std::string("300\0\0\0", 6)));  // not an exit code
  EXPECT_FALSE(decode_done(std::string("0\0z\0\0", 5)));   // unknown flag
  EXPECT_FALSE(decode_done(std::string("0\0\0", 3)));      // error field missing
}

TEST(RunnerFrames, KillGraceAndPidPayloads) {
  EXPECT_EQ(decode_kill(""), 0u);  // as before v4: kill at once
  EXPECT_EQ(decode_kill(encode_kill(5000)), 5000u);
  EXPECT_EQ(encode_kill(5000).size(), 4u);
  EXPECT_FALSE(decode_kill("abc"));
  EXPECT_FALSE(decode_kill("abcde"));
  EXPECT_EQ(decode_pid(encode_pid(4242)), 4242u);
  EXPECT_FALSE(decode_pid(""));
  EXPECT_FALSE(decode_pid(encode_pid(0)));
  EXPECT_FALSE(decode_pid(std::string("\xff\xff\xff\xff", 4)));
  EXPECT_FALSE(decode_pid("12345"));
  // kPid is a known frame type.
  std::string wire;
  append_frame(wire, FrameType::kPid, 3, encode_pid(77));
  FrameReader reader;
  reader.feed(wire);
  auto f = reader.next();
  ASSERT_TRUE(f) << reader.error();
  EXPECT_EQ(f->type, FrameType::kPid);
  EXPECT_EQ(decode_pid(f->payload), 77u);
}

TEST(RunnerFrames, FileRequestRoundTripAndValidation) {
  FileRequest r;
  r.op = FileOp::kWrite;
  r.cwd = "/workspace";
  r.path = std::string("sub/a b\n\xff.bin");
  r.offset = 7;
  r.max_bytes = 16u << 20;
  auto back = decode_file(encode_file(r));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->op, FileOp::kWrite);
  EXPECT_EQ(back->cwd, r.cwd);
  EXPECT_EQ(back->path, r.path);
  EXPECT_EQ(back->offset, 7u);
  EXPECT_EQ(back->max_bytes, 16u << 20);
  for (auto op : {FileOp::kRead, FileOp::kStat, FileOp::kList}) {
    r.op = op;
    EXPECT_EQ(decode_file(encode_file(r))->op, op);
  }
  EXPECT_TRUE(decode_file("r\0/w\0p\0\x30\0\x31\0"s));
  EXPECT_FALSE(decode_file(""));
  EXPECT_FALSE(decode_file("x\0/w\0p\0\x30\0\x31\0"s));     // unknown op
  EXPECT_FALSE(decode_file("rw\0/w\0p\0\x30\0\x31\0"s));    // two ops
  EXPECT_FALSE(decode_file("r\0w\0p\0\x30\0\x31\0"s));      // relative cwd
  EXPECT_FALSE(decode_file("r\0/w\0\0\x30\0\x31\0"s));      // no path
  EXPECT_FALSE(decode_file("r\0/w\0p\0-1\0\x31\0"s));       // offset
  EXPECT_FALSE(decode_file("r\0/w\0p\0\x30\0x\0"s));        // max_bytes
  EXPECT_FALSE(decode_file("r\0/w\0p\0\x30\0\x31"s));       // no final NUL
  EXPECT_FALSE(decode_file("r\0/w\0p\0\x30\0\x31\0x\0"s));  // a field more
  EXPECT_FALSE(decode_file("r\0/w\0p\0\x30\0"s));           // a field less
  // Both are known frame types.
  std::string wire;
  append_frame(wire, FrameType::kFile, 3, encode_file(r));
  append_frame(wire, FrameType::kFileDone, 3, encode_file_done({}));
  FrameReader reader;
  reader.feed(wire);
  auto f = reader.next();
  ASSERT_TRUE(f) << reader.error();
  EXPECT_EQ(f->type, FrameType::kFile);
  f = reader.next();
  ASSERT_TRUE(f) << reader.error();
  EXPECT_EQ(f->type, FrameType::kFileDone);
}

TEST(RunnerFrames, FileReportRoundTripAndValidation) {
  FileReport r;
  r.error = "'x' is a directory";
  r.kind = 'd';
  r.truncated = true;
  r.size = 1ull << 40;
  r.mode = 0755;
  r.mtime = -5;
  auto back = decode_file_done(encode_file_done(r));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->error, r.error);
  EXPECT_EQ(back->kind, 'd');
  EXPECT_TRUE(back->truncated);
  EXPECT_EQ(back->size, 1ull << 40);
  EXPECT_EQ(back->mode, 0755u);
  EXPECT_EQ(back->mtime, -5);
  for (char kind : std::string("fdlpscb-?")) {
    r.kind = kind;
    EXPECT_EQ(decode_file_done(encode_file_done(r))->kind, kind);
  }
  EXPECT_TRUE(decode_file_done("\0f\0\0\x31\0\x30\0\x30\0"s));
  EXPECT_FALSE(decode_file_done("\0z\0\0\x31\0\x30\0\x30\0"s));                  // kind
  EXPECT_FALSE(decode_file_done("\0f\0x\0\x31\0\x30\0\x30\0"s));                 // flag
  EXPECT_FALSE(decode_file_done("\0f\0\0-1\0\x30\0\x30\0"s));                    // size
  EXPECT_FALSE(decode_file_done("\0f\0\0\x31\0\x31\x30\x30\x30\x30\0\x30\0"s));  // mode
  EXPECT_FALSE(decode_file_done("\0f\0\0\x31\0\x30\0"s));                        // no mtime
  EXPECT_FALSE(decode_file_done(""));
}

TEST(RunnerFrames, ListEntriesRoundTripAndValidation) {
  const std::string bytes = encode_entry('f', "a.txt") + encode_entry('d', "sub") +
                            encode_entry('l', std::string("odd\nname\xff"));
  auto entries = decode_entries(bytes);
  ASSERT_TRUE(entries);
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].kind, 'f');
  EXPECT_EQ((*entries)[0].name, "a.txt");
  EXPECT_EQ((*entries)[1].kind, 'd');
  EXPECT_EQ((*entries)[2].name, std::string("odd\nname\xff"));
  EXPECT_TRUE(decode_entries("")->empty());
  EXPECT_FALSE(decode_entries(encode_entry('f', "")));     // no name
  EXPECT_FALSE(decode_entries(encode_entry('f', ".")));    // not an entry
  EXPECT_FALSE(decode_entries(encode_entry('f', "..")));   // not an entry
  EXPECT_FALSE(decode_entries(encode_entry('f', "a/b")));  // not a name
  EXPECT_FALSE(decode_entries(encode_entry('z', "a")));    // unknown kind
  EXPECT_FALSE(decode_entries("fa"s));                     // no final NUL
}

}  // namespace
}  // namespace execmcp::plugins::supervision::runner
