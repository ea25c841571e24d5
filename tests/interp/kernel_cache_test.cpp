// The cache of assembled kernels of `nisa run` (cli/kernel_cache.h): a run of a .nasm again
// takes its object from the cache and gives the same outputs; an entry is used only while every
// file the assembly read is unchanged and every include candidate that did not exist still does
// not; a damaged entry is a miss; other -D values are another entry; "off" caches nothing.
// Every output is checked against y = x + V computed here.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interp/run/npy.h"
#include "interp/run/precheck.h"
#include "tests/support/test_files.h"

using namespace nisa;
namespace fs = std::filesystem;

namespace {

constexpr int kRows = 128, kCols = 64;

struct KernelCache : ::testing::Test {
  fs::path dir;
  std::vector<float> x;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("nisa_kernel_cache_" + std::to_string(::getpid()));
    fs::create_directories(dir / "lib");
    x.resize(kRows * kCols);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 97) - 48) * 0.25f;
    interp::write_npy(p("x.npy"), DType::fp32, {kRows, kCols},
                      reinterpret_cast<const uint8_t*>(x.data()));
    // The kernel adds V, which an include defines; the include is found in lib/ (-I lib) after
    // its first candidate, next to the kernel, was not there.
    std::ofstream(p("k.nasm"))
        << ".kernel kc\n"
           ".param W = 0\n"
           ".include \"v.inc\"\n"
           ".hbm x : fp32[128, 64] input\n"
           ".hbm y : fp32[128, 64] output\n"
           ".sbuf t : fp32[128, 64]\n"
           ".sem s\n"
           "  sp.dma q0, t, x  @signal(s)\n"
           "  dve.tensor_scalar t, t, op0=add, operand0=V + W  @wait(s >= 1) "
           "@signal(s)\n"
           "  sp.dma q1, y, t  @wait(s >= 2)\n";
    write_include("lib/v.inc", 1);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string p(const std::string& f) const { return (dir / f).string(); }
  void write_include(const std::string& f, int v) {
    std::ofstream(p(f)) << ".equ V = " << v << "\n";
  }
  // nisa run in `dir` (relative paths, as a user types them); the exit code.
  int run(const std::string& extra = "", const std::string& cache = "cache",
          const std::string& env = "") {
    const std::string cmd = "cd " + dir.string() + " && " + env + " NISA_CACHE_DIR=" + cache + " " +
                            std::string(NISA_BINARY) + " run k.nasm -I lib --in x=x.npy " +
                            "--out y=y.npy " + extra + " 2> err.txt";
    const int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }
  // y holds x + v exactly (small integers and quarters: no rounding).
  void expect_y(float v) {
    interp::NpyArray y = interp::read_npy(p("y.npy"));
    ASSERT_EQ(y.data.size(), x.size() * 4);
    const float* f = reinterpret_cast<const float*>(y.data.data());
    size_t bad = 0;
    for (size_t i = 0; i < x.size(); ++i) bad += f[i] != x[i] + v;
    EXPECT_EQ(bad, 0u) << "y != x + " << v;
    fs::remove(p("y.npy"));
  }
  static ino_t inode(const fs::path& f) {
    struct stat st {};
    return ::stat(f.c_str(), &st) == 0 ? st.st_ino : 0;
  }
  std::vector<fs::path> entries() const {
    std::vector<fs::path> v;
    if (fs::exists(dir / "cache"))
      for (const auto& e : fs::directory_iterator(dir / "cache"))
        if (e.path().filename().string().starts_with("asm-")) v.push_back(e.path());
    return v;
  }
};

TEST_F(KernelCache, ASecondRunUsesTheEntryAndGivesTheSameOutput) {
  ASSERT_EQ(run(), 0) << test::read_file(p("err.txt"));
  expect_y(1);
  const auto first = entries();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(test::read_file(first[0].string()).rfind("nisa-asm/1\n", 0), 0u);
  const auto ino = inode(first[0]);
  ASSERT_EQ(run(), 0) << test::read_file(p("err.txt"));
  expect_y(1);
  EXPECT_EQ(entries(), first);
  EXPECT_EQ(inode(first[0]), ino); // read, not written again (a store renames a new file in)
}

TEST_F(KernelCache, AHitMarksTheEntryRecentlyUsed) {
  ASSERT_EQ(run(), 0) << test::read_file(p("err.txt"));
  const auto first = entries();
  ASSERT_EQ(first.size(), 1u);
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(5);
  fs::last_write_time(first[0], old);
  ASSERT_EQ(run(), 0) << test::read_file(p("err.txt"));
  expect_y(1);
  EXPECT_GT(fs::last_write_time(first[0]), old + std::chrono::hours(4));
}

// Past $NISA_CACHE_MAX_MB a store removes the least recently used entries (down to 3/4 of the
// bound), never a file that is not nisa's, and leaves a stamp so that the next stores within
// 10 minutes do not scan the directory again.
TEST_F(KernelCache, AStorePastTheBoundRemovesTheOldestEntriesOnly) {
  fs::create_directories(dir / "cache");
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(5);
  auto make = [&](const std::string& name, size_t bytes, int age_hours) {
    std::ofstream(dir / "cache" / name) << std::string(bytes, 'z');
    fs::last_write_time(dir / "cache" / name, old - std::chrono::hours(age_hours));
  };
  make("precheck-00000000000000a1.txt", 300 << 10, 3);
  make("asm-00000000000000a2.bin", 300 << 10, 2);
  make("precheck-00000000000000a3.txt", 500 << 10, 1);
  make("mine.dat", 2 << 20, 9); // not nisa's: never removed
  ASSERT_EQ(run("", "cache", "NISA_CACHE_MAX_MB=1"), 0) << test::read_file(p("err.txt"));
  expect_y(1);
  // 1.1 MiB of entries and the new ones > 1 MiB: the two oldest go (0.75 MiB is the goal).
  EXPECT_FALSE(fs::exists(dir / "cache" / "precheck-00000000000000a1.txt"));
  EXPECT_FALSE(fs::exists(dir / "cache" / "asm-00000000000000a2.bin"));
  EXPECT_TRUE(fs::exists(dir / "cache" / "precheck-00000000000000a3.txt"));
  EXPECT_TRUE(fs::exists(dir / "cache" / "mine.dat"));
  EXPECT_TRUE(fs::exists(dir / "cache" / "prune.stamp"));
  EXPECT_EQ(entries().size(), 1u); // this run's entry stays
  // Within 10 minutes of the stamp a store does not scan again.
  make("precheck-00000000000000b1.txt", 2 << 20, 3);
  write_include("lib/v.inc", 2); // a miss: a store
  ASSERT_EQ(run("", "cache", "NISA_CACHE_MAX_MB=1"), 0) << test::read_file(p("err.txt"));
  expect_y(2);
  EXPECT_TRUE(fs::exists(dir / "cache" / "precheck-00000000000000b1.txt"));
}

TEST(CachePrune, RemovesByAgeToThreeQuartersOfTheBound) {
  const fs::path d = fs::temp_directory_path() / ("nisa_cache_prune_" + std::to_string(::getpid()));
  fs::create_directories(d);
  const auto now = fs::file_time_type::clock::now();
  for (int i = 0; i < 10; ++i) { // entry i is i minutes old: 9 is the oldest
    const fs::path f = d / ("asm-" + std::to_string(i) + ".bin");
    std::ofstream(f) << std::string(100 << 10, 'e');
    fs::last_write_time(f, now - std::chrono::minutes(i));
  }
  std::ofstream(d / "notes.txt") << std::string(500 << 10, 'n');
  EXPECT_EQ(interp::prune_cache(d.string(), 2000 << 10), 0u); // under the bound: nothing
  // 1000 KiB of entries over 600 KiB: down to 450 KiB, the oldest first: 9, 8, ..., 4 go.
  EXPECT_EQ(interp::prune_cache(d.string(), 600 << 10), 6u);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(fs::exists(d / ("asm-" + std::to_string(i) + ".bin")), i < 4) << i;
  EXPECT_TRUE(fs::exists(d / "notes.txt"));
  fs::remove_all(d);
}

TEST_F(KernelCache, AChangedIncludeIsAssembledAgain) {
  ASSERT_EQ(run(), 0);
  expect_y(1);
  write_include("lib/v.inc", 2);
  ASSERT_EQ(run(), 0) << test::read_file(p("err.txt"));
  expect_y(2);
  EXPECT_EQ(entries().size(), 1u); // the same key: the entry is replaced
}

TEST_F(KernelCache, AnIncludeMadeWhereNoneWasIsFound) {
  ASSERT_EQ(run(), 0);
  expect_y(1);
  write_include("v.inc", 3); // the first candidate, next to the kernel, now exists
  ASSERT_EQ(run(), 0) << test::read_file(p("err.txt"));
  expect_y(3);
}

TEST_F(KernelCache, AChangedKernelIsAssembledAgain) {
  ASSERT_EQ(run(), 0);
  expect_y(1);
  std::string k = test::read_file(p("k.nasm"));
  k.replace(k.find("V + W"), 5, "V + W + 4");
  std::ofstream(p("k.nasm")) << k;
  ASSERT_EQ(run(), 0) << test::read_file(p("err.txt"));
  expect_y(5);
}

TEST_F(KernelCache, ADamagedEntryIsAMiss) {
  ASSERT_EQ(run(), 0);
  const auto e = entries();
  ASSERT_EQ(e.size(), 1u);
  for (const std::string damage : {"damaged", ""}) {
    std::string bytes = test::read_file(e[0].string());
    if (damage.empty())
      bytes[bytes.size() - 100] ^= 1; // a bit of the object
    else
      bytes = damage;
    std::ofstream(e[0], std::ios::binary) << bytes;
    ASSERT_EQ(run(), 0) << test::read_file(p("err.txt"));
    expect_y(1);
    EXPECT_EQ(test::read_file(e[0].string()).rfind("nisa-asm/1\n", 0), 0u); // written again
  }
}

TEST_F(KernelCache, OtherDefinesAreAnotherEntryAndOffCachesNothing) {
  ASSERT_EQ(run(), 0);
  expect_y(1);
  ASSERT_EQ(run("-D W=6"), 0) << test::read_file(p("err.txt"));
  expect_y(7);
  EXPECT_EQ(entries().size(), 2u);
  ASSERT_EQ(run(), 0);
  expect_y(1);
  fs::remove_all(dir / "cache");
  ASSERT_EQ(run("", "off"), 0) << test::read_file(p("err.txt"));
  expect_y(1);
  EXPECT_FALSE(fs::exists(dir / "cache"));
  EXPECT_FALSE(fs::exists(dir / "off"));
}

} // namespace
