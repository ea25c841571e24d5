// `nisa asm`, `nisa disasm` and `nisa run` end to end through the binary: exit codes and messages.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

#include "builders.h"
#include "interp/run/npy.h"
#include "tests/support/test_files.h"

namespace nisa::test {
namespace {

namespace fs = std::filesystem;

struct Cli : ::testing::Test {
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("nisa_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::vector<float> x = random_floats(4 * 8, 31);
    interp::write_npy(p("x.npy"), DType::fp32, {4, 8}, as_bytes(x).data());
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string p(const std::string& f) const { return (dir / f).string(); }
  void write(const std::string& f, const std::string& text) { std::ofstream(p(f)) << text; }
  // Runs nisa with the arguments; returns the exit code, stderr in `err`.
  int nisa(const std::string& args, std::string& err) {
    std::string cmd =
        std::string(NISA_BINARY) + " " + args + " 2> " + p("err.txt") + " > " + p("out.txt");
    int rc = std::system(cmd.c_str());
    err = test::read_file(p("err.txt"));
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }
};

constexpr const char* kCopy = R"(.kernel copy
.hbm x : fp32[4, 8] input
.hbm y : fp32[4, 8] output
.sbuf t : fp32[4, 8]
.sem s
        sp.dma q0, t, x @signal(s)
        act.dma q1, y, t @wait(s >= 1)
)";

TEST_F(Cli, RunSucceedsAndWritesOutputs) {
  write("copy.nasm", kCopy);
  std::string err;
  ASSERT_EQ(nisa("run " + p("copy.nasm") + " --in x=" + p("x.npy") + " --out y=" + p("y.npy") +
                     " --stats --timeline " + p("t.json"),
                 err),
            0)
      << err;
  auto x = interp::read_npy(p("x.npy")), y = interp::read_npy(p("y.npy"));
  EXPECT_EQ(x.data, y.data);
  EXPECT_TRUE(fs::exists(p("t.json")));
}

// `nisa asm` and `nisa disasm` through the binary: an object comes back bit for bit through
// its disassembly, and a file with errors reports each one (file:line:col, caret) and exits 1.
TEST_F(Cli, AsmDisasmRoundTripAndErrorsExitOne) {
  write("copy.nasm", kCopy);
  std::string err;
  ASSERT_EQ(nisa("asm " + p("copy.nasm") + " -o " + p("a.nbin"), err), 0) << err;
  ASSERT_EQ(nisa("disasm " + p("a.nbin"), err), 0) << err;
  fs::copy_file(p("out.txt"), p("back.nasm"));
  ASSERT_EQ(nisa("asm " + p("back.nasm") + " -o " + p("b.nbin"), err), 0) << err;
  ASSERT_EQ(nisa("disasm " + p("b.nbin") + " --show-encoding --no-source", err), 0) << err;
  const std::string with_bytes = test::read_file(p("out.txt"));
  ASSERT_EQ(nisa("disasm " + p("a.nbin") + " --show-encoding --no-source", err), 0) << err;
  EXPECT_EQ(test::read_file(p("out.txt")), with_bytes); // same streams, same encodings

  write("bad.nasm", ".kernel bad\n  dve.nope\n  sp.nop @wait(nosem >= 1)\n");
  EXPECT_EQ(nisa("asm " + p("bad.nasm") + " -o " + p("bad.nbin"), err), 1);
  EXPECT_NE(err.find("bad.nasm:2:7: error: unknown mnemonic 'nope'"), std::string::npos) << err;
  EXPECT_NE(err.find("bad.nasm:3:16: error: unknown semaphore 'nosem'"), std::string::npos) << err;
  EXPECT_NE(err.find("\n  dve.nope\n      ^\n"), std::string::npos) << err; // the caret
  EXPECT_FALSE(fs::exists(p("bad.nbin")));
  write("syntax.nasm", ".equ X = 4 $ 2\n");
  EXPECT_EQ(nisa("asm " + p("syntax.nasm"), err), 1);
  EXPECT_NE(err.find("syntax.nasm:1:12: error: unexpected character '$'"), std::string::npos)
      << err;
  EXPECT_EQ(nisa("asm " + p("none.nasm"), err), 1);
  EXPECT_NE(err.find("cannot read file"), std::string::npos) << err;
  EXPECT_EQ(nisa("asm " + p("copy.nasm") + " -D NOPE=1 -o " + p("c.nbin"), err), 1);
  EXPECT_NE(err.find("unknown -D name 'NOPE'"), std::string::npos) << err;
}

TEST_F(Cli, InputErrorsExitOne) {
  write("copy.nasm", kCopy);
  std::string err;
  EXPECT_EQ(nisa("run " + p("copy.nasm") + " --out y=" + p("y.npy"), err), 1);
  EXPECT_NE(err.find("input 'x' is not bound"), std::string::npos) << err;
  EXPECT_EQ(nisa("run " + p("copy.nasm") + " --in q=" + p("x.npy"), err), 1);
  EXPECT_NE(err.find("the kernel has no tensor 'q'"), std::string::npos) << err;
  EXPECT_EQ(nisa("run " + p("copy.nasm") + " --in x=" + p("x.npy") + " --lnc 3", err), 1);
  EXPECT_NE(err.find("--lnc 3: expected 1 or 2"), std::string::npos) << err;
  EXPECT_EQ(nisa("run " + p("copy.nasm") + " --in x=" + p("x.npy") + " --schedule sometimes", err),
            1);
  EXPECT_EQ(nisa("run " + p("nope.nasm"), err), 1);
  EXPECT_EQ(nisa("debug", err), 1);
  EXPECT_NE(err.find("nisa debug: no kernel given"), std::string::npos) << err;
}

// Issue 17: a float64 input names the descriptor the declaration expects; `--out` of an SBUF
// tensor is an error before the run, without the unrelated warning about unsaved outputs.
TEST_F(Cli, InputDescriptorAndOutSpaceMessages) {
  write("copy.nasm", kCopy);
  std::vector<double> x64(4 * 8, 1.5);
  {
    std::string h = "{'descr': '<f8', 'fortran_order': False, 'shape': (4, 8), }";
    h += std::string(63 - (10 + h.size()) % 64, ' ') + "\n";
    std::ofstream f(p("x64.npy"), std::ios::binary);
    f.write("\x93NUMPY\x01\x00", 8);
    const uint16_t n = uint16_t(h.size());
    f.write(reinterpret_cast<const char*>(&n), 2);
    f << h;
    f.write(reinterpret_cast<const char*>(x64.data()), std::streamsize(x64.size() * 8));
  }
  std::string err;
  EXPECT_EQ(
      nisa("run " + p("copy.nasm") + " --in x=" + p("x64.npy") + " --out y=" + p("y.npy"), err), 1);
  EXPECT_NE(err.find("x64.npy: unsupported dtype descriptor '<f8'; tensor 'x' is fp32: expected "
                     "descriptor '<f4' (e.g. np.save(f, a.astype(np.float32)))"),
            std::string::npos)
      << err;
  EXPECT_EQ(nisa("run " + p("copy.nasm") + " --in x=" + p("x.npy") + " --out t=" + p("t.npy"), err),
            1);
  EXPECT_NE(err.find("--out t: tensor 't' is in sbuf, not hbm: only HBM tensors can be saved"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("warning"), std::string::npos) << err; // no unrelated "y is not saved"
  EXPECT_FALSE(fs::exists(p("t.npy")));
}

TEST_F(Cli, DeadlockExitsTwo) {
  write("dl.nasm", R"(.kernel dl
.sem a, b
        act.nop @wait(a >= 1) @signal(b)
        dve.nop @wait(b >= 1) @signal(a)
)");
  std::string err;
  EXPECT_EQ(nisa("run " + p("dl.nasm"), err), 2);
  EXPECT_NE(err.find("deadlock"), std::string::npos) << err;
  EXPECT_NE(err.find("dl.nasm:3:"), std::string::npos) << err;
  EXPECT_NE(err.find("wait-for cycle"), std::string::npos) << err;
}

TEST_F(Cli, FaultExitsThree) {
  write("f.nasm", ".kernel f\n.target trn2\n        pool.core_barrier\n");
  std::string err;
  EXPECT_EQ(nisa("run " + p("f.nasm"), err), 3);
  EXPECT_NE(err.find("f.nasm:3:"), std::string::npos) << err;
  EXPECT_NE(err.find("needs two cores (--lnc 2)"), std::string::npos) << err;
  EXPECT_EQ(nisa("run " + p("f.nasm") + " --lnc 2", err), 0) << err;
}

} // namespace
} // namespace nisa::test
