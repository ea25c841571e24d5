// The assembler's source limits through the binary (issue 33, docs/asm.md "Checks"): an
// include is read once however often it is expanded, the bytes lexed have a total budget, a
// source or include that is not a readable regular file of at most 64 MiB says what it is,
// and a file of blank lines assembles under an address-space limit. Each test runs the binary
// under the limit that exposed the finding (tests/support/limited_run.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "asm/asm.h"
#include "tests/support/limited_run.h"
#include "tests/support/test_files.h"

namespace nisa::test {
namespace {

namespace fs = std::filesystem;

struct AsmLimits : ::testing::Test {
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("nisa_asm_limits_" + std::to_string(::getpid()));
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string p(const std::string& f) const { return (dir / f).string(); }
  void write(const std::string& f, const std::string& text) {
    std::ofstream(p(f), std::ios::binary) << text;
  }
  Ran nisa(const std::vector<std::string>& args, uint64_t as_bytes = 0) {
    return run_limited(args, kSanitized ? 0 : as_bytes, dir.string());
  }
};

bool has(const std::string& out, const std::string& what) {
  return out.find(what) != std::string::npos;
}

// An .include inside a .for re-read the file at every iteration (100 x 60 MB: 41 s). 2000 x
// 16 MiB of comments: 32 GB of reads before, one read now (and comments are not lexed again).
TEST_F(AsmLimits, IncludeInALoopIsReadOnce) {
  std::string comments;
  const std::string line = "; " + std::string(62, 'c') + "\n";
  while (comments.size() < (size_t(16) << 20)) comments += line;
  write("big.inc", comments + ".set DONE = DONE + 1\n");
  write("loop.nasm", ".kernel loop\n.set DONE = 0\n.for i in 0..2000\n.include \"big.inc\"\n"
                     ".endfor\n.if DONE != 2000\n.error \"not 2000\"\n.endif\n  sp.nop\n");
  Ran r = nisa({"asm", "loop.nasm", "-o", "loop.nbin"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "");
  EXPECT_LT(r.seconds, 20) << "read once, not 2000 times";
}

// The bytes lexed have a total budget (256 MiB by default): a statement counts at every
// expansion, so a big include in a loop stops early, with where and why.
TEST_F(AsmLimits, BytesLexedHaveABudget) {
  const std::string stmt = ".set Q = 1" + std::string(1000, ' ') + " + 1\n"; // ~1 KiB
  std::string inc;
  for (int i = 0; i < 64; ++i) inc += stmt; // ~64 KiB of statements
  write("body.inc", inc);
  nasm::AsmOptions o;
  o.max_lexed_bytes = int64_t(1) << 20; // 1 MiB: the 16th iteration passes it
  nasm::AsmResult a = nasm::assemble_string(
      ".kernel k\n.for i in 0..1000\n.include \"" + p("body.inc") + "\"\n.endfor\n", "k.nasm", o);
  ASSERT_FALSE(a.ok());
  const std::string text = a.diagnostics_text();
  EXPECT_TRUE(has(text, "error: the assembly lexes more than 1048576 bytes (1 MiB) of source in "
                        "all (every file once, and each statement every time it is expanded"))
      << text;
  EXPECT_TRUE(has(text, "note: in iteration i=15 of .for at k.nasm:2:1")) << text;
  EXPECT_EQ(a.diags.size(), 1u) << text;
  // The default budget takes the same loop whole.
  nasm::AsmResult b = nasm::assemble_string(
      ".kernel k\n.for i in 0..100\n.include \"" + p("body.inc") + "\"\n.endfor\n", "k.nasm", {});
  EXPECT_TRUE(b.ok()) << b.diagnostics_text();
}

// `.include "/dev/zero"` or a directory said "cannot find include file".
TEST_F(AsmLimits, IncludeThatIsNotAFileSaysWhatItIs) {
  fs::create_directories(p("sub"));
  write("huge.inc", "");
  fs::resize_file(p("huge.inc"), (uint64_t(65) << 20)); // sparse: 65 MiB
  write("k.nasm", ".kernel k\n.include \"/dev/zero\"\n.include \"sub\"\n.include \"huge.inc\"\n"
                  ".include \"none.inc\"\n");
  Ran r = nisa({"asm", "k.nasm", "-o", "k.nbin"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "k.nasm:2:10: error: cannot include '/dev/zero': /dev/zero is not a "
                         "regular file (a device, a FIFO or a socket)"))
      << r.out;
  EXPECT_TRUE(has(r.out, "k.nasm:3:10: error: cannot include 'sub': sub is a directory, not a "
                         "file"))
      << r.out;
  EXPECT_TRUE(has(r.out, "k.nasm:4:10: error: cannot include 'huge.inc': huge.inc is 68157440 "
                         "bytes, more than the limit of 67108864 bytes (64 MiB) for a source file"))
      << r.out;
  EXPECT_TRUE(has(r.out, "k.nasm:5:10: error: cannot find include file 'none.inc' (searched: "))
      << r.out;
  EXPECT_FALSE(fs::exists(p("k.nbin")));
}

// A source over 64 MiB said only "cannot read file".
TEST_F(AsmLimits, SourceOverTheLimitSaysSoAndTheLimit) {
  write("huge.nasm", "");
  fs::resize_file(p("huge.nasm"), (uint64_t(65) << 20));
  fs::create_directories(p("dir.nasm"));
  // The address-space limit shows that the file is never read (65 MiB of it would fit; the
  // parse of it would not).
  Ran r = nisa({"asm", "huge.nasm", "-o", "h.nbin"}, 200'000'000);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "huge.nasm: error: cannot read file: it is 68157440 bytes, more than the "
                         "limit of 67108864 bytes (64 MiB) for a source file"))
      << r.out;
  r = nisa({"check", "dir.nasm"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "dir.nasm: error: cannot read file: it is a directory, not a file"))
      << r.out;
  r = nisa({"run", "none.nasm"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "none.nasm: error: cannot read file: it does not exist")) << r.out;
}

// asm/run/check/debug of 12M blank lines under a 2 GB address-space limit aborted (then: exit
// 1, out of memory): the parser reserved ~170 bytes per line up front. Reservations follow
// the lines that hold code. The same ratio, 4 times smaller: 3M lines under 500 MB.
TEST_F(AsmLimits, BlankLinesAssembleUnderAnAddressSpaceLimit) {
  write("blank.nasm", std::string(3'000'000, '\n'));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"asm", "blank.nasm", "-o", "b.nbin"},
        std::vector<std::string>{"run", "blank.nasm"},
        std::vector<std::string>{"check", "blank.nasm"},
        std::vector<std::string>{"debug", "blank.nasm", "--batch"}}) {
    Ran r = nisa(args, 500'000'000);
    EXPECT_EQ(r.signal, 0) << args[0] << ": " << r.out;
    EXPECT_EQ(r.code, 0) << args[0] << ": " << r.out;
  }
  EXPECT_TRUE(fs::exists(p("b.nbin")));
}

} // namespace
} // namespace nisa::test
