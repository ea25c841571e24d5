// Input files mapped into HBM (issue 16): the whole pages of an input's data whose HBM address
// and file offset agree modulo the page size are mapped from the file (private copy-on-write),
// the rest is read. The bytes must be the file's exactly, writes to HBM must never reach the
// file, a run must give the same outputs as with --copy-inputs, and a file truncated under a
// mapping must end the process with a message (not a crash).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>

#include "builders.h"
#include "interp/run/npy.h"
#include "interp/run/run.h"

namespace nisa::test {
namespace {

using interp::InputData;
using interp::InputFill;
using interp::Machine;

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// Bytes of [lo, hi) that /proc/self/maps shows as a mapping of `path`.
uint64_t mapped_from(const std::string& path, const uint8_t* lo, const uint8_t* hi) {
  std::ifstream maps("/proc/self/maps");
  const std::string want = std::filesystem::canonical(path).string();
  uint64_t n = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.size() < want.size() || line.compare(line.size() - want.size(), want.size(), want))
      continue;
    uintptr_t a = 0, b = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &a, &b) != 2) continue;
    const uintptr_t l = std::max(a, uintptr_t(lo)), h = std::min(b, uintptr_t(hi));
    if (h > l) n += h - l;
  }
  return n;
}

// What `nisa run` does: shifts from the headers, allocate, map or read.
std::unique_ptr<Machine> bind_mapped(const Module& mod, interp::MachineOptions mo,
                                     const std::vector<interp::IoSpec>& in) {
  std::vector<InputData> files = interp::read_inputs(mod, mo.ranks, in);
  mo.hbm_shift = interp::input_hbm_shifts(mo.ranks, files);
  auto m = std::make_unique<Machine>(mod, mo, InputFill::caller_writes);
  interp::bind_inputs(*m, files, true);
  return m;
}

TEST(MappedInputs, WholePagesComeFromTheFileAndWritesNeverReachIt) {
  TmpDir d;
  KB k;
  // a puts x at HBM address 64, x's data starts at file offset 128: a shift of 64. x's size
  // ends off a page, so the tail is read; the head before the first page boundary too.
  const int a = k.hbm("a", DType::fp32, {3, 5}, Role::input);
  const int x = k.hbm("x", DType::fp32, {97, 1031}, Role::input);
  ASSERT_EQ(k.m.tensors[x].address, 64u);
  const std::vector<uint8_t> ab = random_bytes(3 * 5 * 4, 1), xb = random_bytes(97 * 1031 * 4, 2);
  interp::write_npy(d / "a.npy", DType::fp32, {3, 5}, ab.data());
  interp::write_npy(d / "x.npy", DType::fp32, {97, 1031}, xb.data());
  const std::vector<uint8_t> file_before = file_bytes(d / "x.npy");
  interp::MachineOptions mo;
  mo.check_uninit = true;
  auto m = bind_mapped(k.m, mo, {{"a", d / "a.npy"}, {"x", d / "x.npy"}});
  EXPECT_EQ(uintptr_t(m->ranks[0].hbm.data()) % 4096, 64u);
  EXPECT_EQ(hbm_bytes(*m, k.m.tensors[a]), ab);
  EXPECT_EQ(hbm_bytes(*m, k.m.tensors[x]), xb);
  const uint8_t* xp = m->hbm_tensor(0, k.m.tensors[x]);
  const uint64_t mapped = mapped_from(d / "x.npy", xp, xp + xb.size());
  EXPECT_GE(mapped, xb.size() - 2 * 4096) << "the whole pages of x are mapped";
  EXPECT_EQ(mapped % 4096, 0u);
  // The bytes around the input are still poison, and the input is marked written.
  EXPECT_EQ(m->hbm_tensor(0, k.m.tensors[x])[xb.size()], interp::kPoisonByte);
  EXPECT_EQ(*m->shadow_of(xp + xb.size() / 2), 1);
  // A kernel writing its input: copy-on-write, the file keeps its bytes.
  std::memset(m->hbm_tensor(0, k.m.tensors[x]), 0x5A, xb.size());
  EXPECT_EQ(hbm_bytes(*m, k.m.tensors[x]), std::vector<uint8_t>(xb.size(), 0x5A));
  m.reset();
  EXPECT_EQ(file_bytes(d / "x.npy"), file_before);
}

TEST(MappedInputs, EachRanksSliceGetsItsOwnShift) {
  TmpDir d;
  KB k;
  // [3, 70, 336] int32: a slice is 94080 bytes (a multiple of 64, not of the page), so slice
  // r starts at file offset 128 + r * 94080: 128, 0 and 3968 modulo 4096.
  const int x = k.hbm("x", DType::int32, {70, 336}, Role::input);
  const size_t slice = 70 * 336 * 4;
  const std::vector<uint8_t> xb = random_bytes(3 * slice, 3);
  interp::write_npy(d / "x.npy", DType::int32, {3, 70, 336}, xb.data());
  interp::MachineOptions mo;
  mo.ranks = 3;
  std::vector<InputData> files = interp::read_inputs(k.m, 3, {{"x", d / "x.npy"}});
  const std::vector<uint16_t> shifts = interp::input_hbm_shifts(3, files);
  ASSERT_EQ(shifts.size(), 3u);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(shifts[size_t(r)], (128 + r * slice) % 4096) << r;
  files.clear();
  auto m = bind_mapped(k.m, mo, {{"x", d / "x.npy"}});
  for (int r = 0; r < 3; ++r) {
    const std::vector<uint8_t> want(xb.begin() + long(r * slice),
                                    xb.begin() + long((r + 1) * slice));
    EXPECT_EQ(hbm_bytes(*m, k.m.tensors[x], r), want) << r;
    const uint8_t* p = m->hbm_tensor(r, k.m.tensors[x]);
    EXPECT_GT(mapped_from(d / "x.npy", p, p + slice), slice / 2) << r;
  }
}

TEST(MappedInputs, OffsetsThatDisagreeAndConvertedFilesAreRead) {
  TmpDir d;
  KB k;
  // x and y (both large) want different shifts: the larger (y) wins, x is read. A Fortran-order
  // z is converted on the way in, never mapped.
  const int x = k.hbm("x", DType::uint8, {1, 70000}, Role::input);
  const int y = k.hbm("y", DType::uint8, {1, 90000}, Role::input);
  const int z = k.hbm("z", DType::int32, {300, 200}, Role::input);
  const std::vector<uint8_t> xb = random_bytes(70000, 4), yb = random_bytes(90000, 5),
                             zb = random_bytes(300 * 200 * 4, 6);
  interp::write_npy(d / "x.npy", DType::uint8, {1, 70000}, xb.data());
  interp::write_npy(d / "y.npy", DType::uint8, {1, 90000}, yb.data());
  // z as Fortran order: element (i, j) at (j * 300 + i).
  std::vector<uint8_t> zf(zb.size());
  for (int i = 0; i < 300; ++i)
    for (int j = 0; j < 200; ++j) std::memcpy(&zf[(j * 300 + i) * 4], &zb[(i * 200 + j) * 4], 4);
  { std::ofstream(d / "z.npy", std::ios::binary) << handmade("<i4", true, "(300, 200)", zf); }
  ASSERT_NE((128 - k.m.tensors[x].address) % 4096, (128 - k.m.tensors[y].address) % 4096);
  auto m = bind_mapped(k.m, {}, {{"x", d / "x.npy"}, {"y", d / "y.npy"}, {"z", d / "z.npy"}});
  EXPECT_EQ(uintptr_t(m->ranks[0].hbm.data()) % 4096, (128 - k.m.tensors[y].address) % 4096);
  EXPECT_EQ(hbm_bytes(*m, k.m.tensors[x]), xb);
  EXPECT_EQ(hbm_bytes(*m, k.m.tensors[y]), yb);
  EXPECT_EQ(hbm_bytes(*m, k.m.tensors[z]), zb);
  auto at = [&](int t) { return m->hbm_tensor(0, k.m.tensors[t]); };
  EXPECT_EQ(mapped_from(d / "x.npy", at(x), at(x) + xb.size()), 0u);
  EXPECT_GT(mapped_from(d / "y.npy", at(y), at(y) + yb.size()), 0u);
  EXPECT_EQ(mapped_from(d / "z.npy", at(z), at(z) + zb.size()), 0u);
}

// x [128, 1100] fp32 through SBUF to y: the run's output is x, whether x was mapped or read.
KB copy_kernel() {
  KB k;
  k.hbm("a", DType::fp32, {4, 4}, Role::input);
  const int x = k.hbm("x", DType::fp32, {128, 1100}, Role::input);
  const int y = k.hbm("y", DType::fp32, {128, 1100}, Role::output);
  const uint16_t s = k.sem("loaded");
  k.add(Engine::sp,
        with_signal(
            dma(Engine::sp, 0, sbuf_ap(0, 128, 0, DType::fp32, 1100), hbm_ap(k.m.tensors[x])), s));
  k.add(Engine::act, with_wait(dma(Engine::act, 1, hbm_ap(k.m.tensors[y]),
                                   sbuf_ap(0, 128, 0, DType::fp32, 1100)),
                               s, 1));
  return k;
}

TEST(MappedInputs, ARunGivesTheSameOutputsMappedOrCopied) {
  TmpDir d;
  KB k = copy_kernel();
  const std::vector<float> a = random_floats(16, 7), x = random_floats(128 * 1100, 8);
  interp::write_npy(d / "a.npy", DType::fp32, {4, 4}, as_bytes(a).data());
  interp::write_npy(d / "x.npy", DType::fp32, {128, 1100}, as_bytes(x).data());
  for (bool copy : {false, true}) {
    interp::RunConfig cfg;
    cfg.copy_inputs = copy;
    cfg.inputs = {{"a", d / "a.npy"}, {"x", d / "x.npy"}};
    const std::string out = d / (copy ? "y_copy.npy" : "y_map.npy");
    cfg.outputs = {{"y", out}};
    std::ostringstream o, e;
    ASSERT_EQ(interp::run_module(k.m, cfg, o, e), 0) << e.str();
    const interp::NpyArray y = interp::read_npy(out);
    ASSERT_EQ(y.data.size(), x.size() * 4);
    EXPECT_EQ(std::memcmp(y.data.data(), x.data(), y.data.size()), 0) << "copy " << copy;
  }
}

TEST(MappedInputsDeathTest, ATruncatedMappedFileEndsTheProcessWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The threadsafe style re-runs this body in a new process, which dies: it works in the
  // parent's directory (named in the environment), which the parent's TmpDir then removes.
  constexpr const char* kDirVar = "NISA_TEST_DEATH_DIR";
  std::optional<TmpDir> own;
  std::filesystem::path dir;
  if (const char* inherited = std::getenv(kDirVar)) {
    dir = inherited;
  } else {
    own.emplace();
    dir = own->p;
    setenv(kDirVar, dir.c_str(), 1);
  }
  KB k;
  const int x = k.hbm("x", DType::fp32, {64, 4096}, Role::input);
  const std::vector<uint8_t> xb = random_bytes(64 * 4096 * 4, 9);
  const std::string path = dir / "x.npy";
  interp::write_npy(path, DType::fp32, {64, 4096}, xb.data());
  EXPECT_EXIT(
      {
        auto m = bind_mapped(k.m, {}, {{"x", path}});
        if (truncate(path.c_str(), 4096) != 0) std::_Exit(7);
        volatile uint8_t sum = 0;
        const uint8_t* p = m->hbm_tensor(0, k.m.tensors[x]);
        for (size_t i = 0; i < xb.size(); i += 4096) sum = uint8_t(sum + p[i]);
        std::_Exit(8); // not reached: the truncated pages raise SIGBUS
      },
      ::testing::ExitedWithCode(1), "x.npy: the input file was truncated while the run had it");
  unsetenv(kDirVar);
}

} // namespace
} // namespace nisa::test
