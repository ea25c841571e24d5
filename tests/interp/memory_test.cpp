// Issue 16, memory: inputs read straight into HBM (bit-exact, per-rank files, Fortran order and
// big-endian converted on the way), outputs streamed straight from it, poison only where no
// input overwrites, HBM sized by the declarations, and the peak RSS of a run in a subprocess.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "builders.h"
#include "interp/run/run.h"

namespace nisa::test {
namespace {

using interp::InputData;
using interp::InputFill;
using interp::Machine;
using interp::RunStatus;

void put(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// What `nisa run` does before running: check every header, allocate, read into HBM.
std::unique_ptr<Machine> bind(const Module& mod, interp::MachineOptions mo,
                              const std::vector<interp::IoSpec>& in) {
  std::vector<InputData> files = interp::read_inputs(mod, mo.ranks, in);
  auto m = std::make_unique<Machine>(mod, mo, InputFill::caller_writes);
  interp::bind_inputs(*m, files);
  return m;
}

TEST(Memory, InputsLandBitExactlyInHbm) {
  TmpDir d;
  KB k;
  // Odd sizes: tensors end off any page or element-group boundary.
  const int f = k.hbm("f", DType::fp32, {3, 37}, Role::input);
  const int b = k.hbm("b", DType::bf16, {5, 13}, Role::input);
  const int i = k.hbm("i", DType::int32, {7, 11}, Role::input);
  const std::vector<uint8_t> fb = random_bytes(3 * 37 * 4, 1), bb = random_bytes(5 * 13 * 2, 2),
                             ib = random_bytes(7 * 11 * 4, 3);
  interp::write_npy(d / "f.npy", DType::fp32, {3, 37}, fb.data());
  interp::write_npy(d / "b.npy", DType::bf16, {5, 13}, bb.data());
  interp::write_npy(d / "i.npy", DType::int32, {7, 11}, ib.data());
  interp::MachineOptions mo;
  mo.check_uninit = true; // the bytes read are marked written
  auto m = bind(k.m, mo, {{"f", d / "f.npy"}, {"b", d / "b.npy"}, {"i", d / "i.npy"}});
  EXPECT_EQ(hbm_bytes(*m, k.m.tensors[f]), fb);
  EXPECT_EQ(hbm_bytes(*m, k.m.tensors[b]), bb);
  EXPECT_EQ(hbm_bytes(*m, k.m.tensors[i]), ib);
  for (int t : {f, b, i}) {
    const TensorDecl& td = k.m.tensors[t];
    const uint8_t* s = m->ranks[0].hbm_written.data() + td.address;
    EXPECT_EQ(std::count(s, s + Machine::tensor_bytes(td), 1), int64_t(Machine::tensor_bytes(td)));
  }
}

TEST(Memory, PerRankFileSliceRGoesToRankR) {
  TmpDir d;
  KB k;
  const int x = k.hbm("x", DType::int32, {5, 7}, Role::input);
  const int w = k.hbm("w", DType::fp32, {2, 9}, Role::input);
  const int R = 3;
  const std::vector<uint8_t> xb = random_bytes(R * 5 * 7 * 4, 4), wb = random_bytes(2 * 9 * 4, 5);
  interp::write_npy(d / "x.npy", DType::int32, {R, 5, 7}, xb.data());
  interp::write_npy(d / "w.npy", DType::fp32, {2, 9}, wb.data()); // one array for every rank
  interp::MachineOptions mo;
  mo.ranks = R;
  auto m = bind(k.m, mo, {{"x", d / "x.npy"}, {"w", d / "w.npy"}});
  for (int r = 0; r < R; ++r) {
    EXPECT_EQ(hbm_bytes(*m, k.m.tensors[x], r),
              std::vector<uint8_t>(xb.begin() + r * 140, xb.begin() + (r + 1) * 140))
        << "rank " << r;
    EXPECT_EQ(hbm_bytes(*m, k.m.tensors[w], r), wb) << "rank " << r;
  }
}

TEST(Memory, FortranOrderAndBigEndianAreConvertedOnTheWayIn) {
  // A per-rank [R, rows, cols] file in Fortran order: the rank axis varies fastest in the file,
  // so every rank's slice is spread over all of it (converted through a small buffer).
  TmpDir d;
  KB k;
  const int x = k.hbm("x", DType::int32, {4, 6}, Role::input);
  const int y = k.hbm("y", DType::fp32, {300, 1000}, Role::input); // > the 1 MiB bounce buffer
  const int R = 2;
  std::vector<uint32_t> want(R * 4 * 6); // C order: want[(r * 4 + i) * 6 + j]
  std::mt19937 rng(6);
  for (auto& v : want) v = rng();
  std::vector<uint8_t> fort(want.size() * 4);
  size_t at = 0;
  for (int j = 0; j < 6; ++j)
    for (int i = 0; i < 4; ++i)
      for (int r = 0; r < R; ++r, at += 4) std::memcpy(&fort[at], &want[(r * 4 + i) * 6 + j], 4);
  put(d / "x.npy", handmade("<i4", true, "(2, 4, 6)", fort));
  // Big-endian fp32, C order, one array for both ranks.
  const std::vector<uint8_t> yb = random_bytes(300 * 1000 * 4, 7);
  std::vector<uint8_t> be(yb);
  for (size_t e = 0; e < be.size(); e += 4) std::reverse(&be[e], &be[e + 4]);
  put(d / "y.npy", handmade(">f4", false, "(300, 1000)", be));
  interp::MachineOptions mo;
  mo.ranks = R;
  auto m = bind(k.m, mo, {{"x", d / "x.npy"}, {"y", d / "y.npy"}});
  const auto* wb = reinterpret_cast<const uint8_t*>(want.data());
  for (int r = 0; r < R; ++r) {
    EXPECT_EQ(hbm_bytes(*m, k.m.tensors[x], r),
              std::vector<uint8_t>(wb + r * 96, wb + (r + 1) * 96));
    EXPECT_EQ(hbm_bytes(*m, k.m.tensors[y], r), yb);
  }
  // Big-endian and Fortran order together, larger than the bounce buffer.
  std::vector<uint8_t> fbe(yb.size());
  for (int i = 0; i < 300; ++i)
    for (int j = 0; j < 1000; ++j)
      for (int c = 0; c < 4; ++c)
        fbe[(size_t(j) * 300 + i) * 4 + c] = yb[(size_t(i) * 1000 + j) * 4 + 3 - c];
  put(d / "y.npy", handmade(">f4", true, "(300, 1000)", fbe));
  m = bind(k.m, mo, {{"x", d / "x.npy"}, {"y", d / "y.npy"}});
  EXPECT_EQ(hbm_bytes(*m, k.m.tensors[y], 1), yb);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Memory, TruncatedPayloadAndHeaderMismatchNameTheFile) {
  TmpDir d;
  KB k;
  k.hbm("x", DType::fp32, {8, 16}, Role::input);
  const std::vector<uint8_t> data = random_bytes(8 * 16 * 4, 8);
  const std::string full = handmade("<f4", false, "(8, 16)", data);
  put(d / "short.npy", full.substr(0, full.size() - 5));
  put(d / "long.npy", full + "xyz");
  put(d / "shape.npy", handmade("<f4", false, "(16, 8)", data));
  put(d / "dtype.npy", handmade("<i4", false, "(8, 16)", data));
  auto err = [&](const std::string& f) { return error_of([&] { bind(k.m, {}, {{"x", d / f}}); }); };
  EXPECT_NE(err("short.npy")
                .find(d / "short.npy" + ": truncated data: shape (8, 16) of '<f4' "
                                        "needs 512 bytes, the file has 507"),
            std::string::npos)
      << err("short.npy");
  EXPECT_NE(err("long.npy").find(d / "long.npy" + ": 3 bytes of trailing data"), std::string::npos)
      << err("long.npy");
  EXPECT_NE(err("shape.npy").find(d / "shape.npy" + ": shape (16, 8) does not match tensor 'x'"),
            std::string::npos)
      << err("shape.npy");
  EXPECT_NE(err("dtype.npy").find(d / "dtype.npy" + ": dtype '<i4' does not match tensor 'x'"),
            std::string::npos)
      << err("dtype.npy");
  // The checks come before any data is read: read_inputs alone reports the size.
  EXPECT_NE(error_of([&] {
              interp::read_inputs(k.m, 1, {{"x", d / "short.npy"}});
            }).find("truncated data"),
            std::string::npos);
}

TEST(Memory, TruncatedStreamFailsWhileReadingAndLeavesThePoison) {
  // A FIFO has no size to check first: the short read is found while reading into HBM; the
  // machine is then reset as a whole (no half-read input in unpoisoned memory).
  TmpDir d;
  KB k;
  const int x = k.hbm("x", DType::fp32, {8, 16}, Role::input);
  const std::string fifo = d / "pipe.npy";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string full = handmade("<f4", false, "(8, 16)", random_bytes(512, 9));
  std::thread w(
      [&] { std::ofstream(fifo, std::ios::binary) << full.substr(0, full.size() - 100); });
  Machine m(k.m, {});
  const std::string e = error_of([&] { interp::reset_with_inputs(m, {{"x", fifo}}); });
  w.join();
  EXPECT_NE(e.find(fifo + ": truncated data"), std::string::npos) << e;
  const std::vector<uint8_t> got = hbm_bytes(m, k.m.tensors[x]);
  EXPECT_EQ(std::count(got.begin(), got.end(), interp::kPoisonByte), int64_t(got.size()));
}

// Reads a rank's whole HBM.
std::vector<uint8_t> whole_hbm(const Machine& m, int rank = 0) {
  const auto& b = m.ranks[size_t(rank)].hbm;
  return {b.data(), b.data() + b.size()};
}

TEST(Memory, OnlyInputBytesEscapeThePoison) {
  // x (input, 100 bytes) is overlapped by the scratch z from byte 64: z's first 36 bytes are
  // input bytes, the rest of z, the gap and the page's tail must still be poison.
  TmpDir d;
  KB k;
  k.hbm("x", DType::uint8, {4, 25}, Role::input);
  const int z = k.hbm("z", DType::uint8, {2, 100}, Role::scratch);
  k.m.tensors[z].address = 64;
  const int v = k.hbm("v", DType::int32, {3, 3}, Role::input); // at 320: a gap before it
  const std::vector<uint8_t> xb = random_bytes(100, 10), vb = random_bytes(36, 11);
  interp::write_npy(d / "x.npy", DType::uint8, {4, 25}, xb.data());
  interp::write_npy(d / "v.npy", DType::int32, {3, 3}, vb.data());
  const std::vector<interp::IoSpec> in{{"x", d / "x.npy"}, {"v", d / "v.npy"}};
  auto m = bind(k.m, {}, in);
  std::vector<uint8_t> want(4096, interp::kPoisonByte); // what a poisoned machine + writes has
  std::copy(xb.begin(), xb.end(), want.begin());
  std::copy(vb.begin(), vb.end(), want.begin() + k.m.tensors[v].address);
  EXPECT_EQ(whole_hbm(*m), want);
  const auto ranges = m->input_ranges();
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0], std::make_pair(uint64_t(0), uint64_t(100)));
  // A machine used before (HBM scribbled over) and reset with the inputs read again: the same.
  std::memset(m->ranks[0].hbm.data(), 0x11, 4096);
  interp::reset_with_inputs(*m, in);
  EXPECT_EQ(whole_hbm(*m), want);
  // And the plain reset poisons all of it (the inputs too).
  m->reset();
  EXPECT_EQ(whole_hbm(*m), std::vector<uint8_t>(4096, interp::kPoisonByte));
}

// sp loads the scratch z into SBUF; act stores it to y and SBUF bytes nothing wrote to y2.
KB poison_kernel() {
  KB k;
  k.hbm("x", DType::fp32, {8, 32}, Role::input);
  const int z = k.hbm("z", DType::fp32, {8, 32}, Role::scratch);
  const int y = k.hbm("y", DType::fp32, {8, 32}, Role::output);
  const int y2 = k.hbm("y2", DType::fp32, {8, 32}, Role::output);
  const uint16_t s = k.sem("loaded");
  k.add(Engine::sp,
        with_signal(dma(Engine::sp, 0, sbuf_ap(0, 8, 0, DType::fp32, 32), hbm_ap(k.m.tensors[z])),
                    s));
  k.add(Engine::act,
        with_wait(dma(Engine::act, 1, hbm_ap(k.m.tensors[y]), sbuf_ap(0, 8, 0, DType::fp32, 32)), s,
                  1));
  k.add(Engine::act,
        dma(Engine::act, 1, hbm_ap(k.m.tensors[y2]), sbuf_ap(0, 8, 4096, DType::fp32, 32)));
  return k;
}

TEST(Memory, NonInputHbmAndSbufReadAsNanAfterResetAndASecondRun) {
  TmpDir d;
  KB k = poison_kernel();
  const std::vector<float> xv = random_floats(8 * 32, 12);
  interp::write_npy(d / "x.npy", DType::fp32, {8, 32}, as_bytes(xv).data());
  const std::vector<interp::IoSpec> in{{"x", d / "x.npy"}};
  auto m = bind(k.m, {}, in);
  auto all_poison = [&](const char* name) {
    const std::vector<float> v = read_f32(*m, *m->find_tensor(name));
    for (float f : v) {
      uint32_t u;
      std::memcpy(&u, &f, 4);
      if (u != 0xFFFFFFFFu) return false;
    }
    return std::isnan(v[0]);
  };
  for (int run = 0; run < 2; ++run) {
    auto r = interp::run(*m);
    ASSERT_EQ(r.status, RunStatus::ok) << r.report;
    EXPECT_TRUE(all_poison("y")) << "run " << run;  // z was never written: NaN
    EXPECT_TRUE(all_poison("y2")) << "run " << run; // nor that SBUF: NaN
    EXPECT_EQ(read_f32(*m, *m->find_tensor("x")), xv);
    // Scribble over every memory, then reset as the debugger does before its next run.
    for (auto& rk : m->ranks) std::memset(rk.hbm.data(), 0x22, rk.hbm.size());
    for (auto& c : m->cores) {
      std::memset(c.sbuf.data(), 0x33, c.sbuf.size());
      std::memset(c.psum.data(), 0x44, c.psum.size());
    }
    interp::reset_with_inputs(*m, in);
  }
}

// SBUF/PSUM are lazy poison mappings when the declarations span few of their pages, eager
// buffers when they span many: either way every byte reads as poison until written (also
// bytes no declaration covers) and after a reset, and written bytes keep their values.
TEST(Memory, OnChipBuffersReadAsPoisonWhetherLazyOrEager) {
  for (const int64_t cols : {int64_t(64), int64_t(40000)}) { // 256 B / 160000 B a partition
    KB k;
    k.hbm("x", DType::fp32, {8, 32}, Role::input);
    TensorDecl sb;
    sb.name = "t";
    sb.space = MemSpace::sbuf;
    sb.dtype = DType::fp32;
    sb.shape = {128, cols};
    k.m.tensors.push_back(sb);
    Machine m(k.m, {});
    const bool want_lazy = cols == 64;
    for (const auto& c : m.cores) {
      EXPECT_EQ(c.sbuf.lazy(), want_lazy) << cols;
      if (want_lazy) { // none declared, and the SBUF made the poison file
        EXPECT_TRUE(c.psum.lazy());
      }
    }
    auto& c = m.cores[0];
    const size_t n = c.sbuf.size(), step = 4093; // a prime: every page, odd offsets
    for (int round = 0; round < 2; ++round) {
      size_t bad = 0;
      for (size_t i = 0; i < n; i += step) bad += c.sbuf.data()[i] != interp::kPoisonByte;
      for (size_t i = 0; i < c.psum.size(); i += step)
        bad += c.psum.data()[i] != interp::kPoisonByte;
      EXPECT_EQ(bad, 0u) << cols << " round " << round;
      const std::vector<uint8_t> val = random_bytes(n / step + 1, 40 + round);
      for (size_t i = 0, j = 0; i < n; i += step, ++j) c.sbuf.data()[i] = val[j];
      for (size_t i = 0, j = 0; i < n; i += step, ++j) bad += c.sbuf.data()[i] != val[j];
      EXPECT_EQ(bad, 0u) << cols;
      m.reset();
    }
  }
}

// The anonymous (copied) bytes of the mapping that holds `at`, from /proc/self/smaps.
size_t anonymous_bytes_at(const void* at) {
  std::ifstream f("/proc/self/smaps");
  const auto a = reinterpret_cast<uintptr_t>(at);
  bool in = false;
  for (std::string line; std::getline(f, line);) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find('-') < 17) {
      in = a >= lo && a < hi;
      continue;
    }
    size_t kb = 0;
    if (in && std::sscanf(line.c_str(), "Anonymous: %zu kB", &kb) == 1) return kb * 1024;
  }
  return 0;
}

// A write into a lazy SBUF asks for the pages of its rows at once (interp/core/lazy_pages.h): they
// become private copies of the poison (still reading as poison), a second request copies
// nothing; a reset poisons them in place (a reused machine writes them again), and a page that
// a write's own fault copied as well (or drops it), so every byte reads as poison again.
TEST(Memory, LazyPagesCopyEachPageOnceAndRepoisonInPlace) {
  interp::HostBuffer b = interp::HostBuffer::lazy_poison(size_t(64) << 10);
  ASSERT_TRUE(b.lazy());
  const interp::LazyPages* lp = b.lazy_pages();
  ASSERT_NE(lp, nullptr);
  uint8_t* d = b.data();
  EXPECT_EQ(anonymous_bytes_at(d), 0u);
  lp->populate(d + 4096 + 100, d + 3 * 4096 + 1); // pages 1, 2 and 3
  const size_t once = anonymous_bytes_at(d);
  if (once == 0) GTEST_SKIP() << "the kernel has no MADV_POPULATE_WRITE (Linux < 5.14)";
  EXPECT_EQ(once, 3u * 4096);
  lp->populate(d + 2 * 4096, d + 5 * 4096); // 2 and 3 again, and 4
  EXPECT_EQ(anonymous_bytes_at(d), 4u * 4096);
  auto not_poison = [&] {
    size_t bad = 0;
    for (size_t i = 0; i < b.size(); ++i) bad += d[i] != interp::kPoisonByte;
    return bad;
  };
  EXPECT_EQ(not_poison(), 0u);
  d[4096 + 7] = 0x12; // a copied page keeps its write
  EXPECT_EQ(d[4096 + 7], 0x12);
  d[10 * 4096 + 5] = 0x34; // page 10: copied by the write's fault, not by a request
  EXPECT_EQ(anonymous_bytes_at(d), 5u * 4096);
  b.repoison();
  // The copies stay; page 10 too where /proc/self/pagemap tells it apart (else it is dropped).
  const size_t kept = anonymous_bytes_at(d);
  EXPECT_TRUE(kept == 5u * 4096 || kept == 4u * 4096) << kept;
  EXPECT_EQ(not_poison(), 0u);
  lp->populate(d + 4096, d + 2 * 4096); // copied already: nothing
  EXPECT_EQ(anonymous_bytes_at(d), kept);
  lp->populate(d, d);                                 // empty: nothing
  lp->populate(d + 60 * 1024, d + (size_t(1) << 20)); // clipped at the buffer's end: page 15
  EXPECT_EQ(anonymous_bytes_at(d), kept + 4096);
  EXPECT_EQ(not_poison(), 0u);
  d[10 * 4096 + 5] = 0x56;
  d[15 * 4096 + 9] = 0x78;
  b.repoison();
  EXPECT_EQ(not_poison(), 0u);
}

// A write view into a lazy SBUF asks for its rows' pages once: the same span again (a reused
// machine's next run, here after a repoison) skips the request (a memo per thread,
// interp/core/view.cpp), and the bytes written through the view read back, the rest poison.
TEST(Memory, RepeatedWriteSpansOfALazySbufStayPrivateAndHoldTheirWrites) {
  constexpr uint64_t kPart = 16384, kStride = interp::host_stride(kPart);
  interp::HostBuffer b = interp::HostBuffer::lazy_poison(4 * kStride);
  interp::CoreState st;
  st.sbuf = b.data();
  st.sbuf_part_bytes = kPart;
  st.sbuf_stride = kStride;
  st.sbuf_lazy = b.lazy_pages();
  interp::ExecCtx cx;
  cx.state = &st;
  AccessPattern ap = sbuf_ap(0, 4, 8192, DType::fp32, 512); // 2 KiB of each of 4 partitions
  const interp::View v = cx.view(ap, interp::Access::write);
  const size_t once = anonymous_bytes_at(b.data());
  if (once == 0) GTEST_SKIP() << "the kernel has no MADV_POPULATE_WRITE (Linux < 5.14)";
  EXPECT_EQ(once, 4u * 4096);
  for (int round = 0; round < 2; ++round) {
    const interp::View w = cx.view(ap, interp::Access::write);
    EXPECT_EQ(w.base, v.base);
    EXPECT_EQ(anonymous_bytes_at(b.data()), 4u * 4096) << round;
    for (uint32_t p = 0; p < 4; ++p)
      for (uint32_t j = 0; j < 512; ++j) {
        const float x = float(p * 1000 + j + round);
        std::memcpy(w.row(p) + 4 * j, &x, 4);
      }
    size_t bad = 0;
    for (uint32_t p = 0; p < 4; ++p)
      for (uint64_t i = 0; i < kPart; ++i) {
        const uint8_t* q = b.data() + p * kStride + i;
        if (i < 8192 || i >= 8192 + 2048) {
          bad += *q != interp::kPoisonByte;
        } else {
          float x;
          std::memcpy(&x, b.data() + p * kStride + (i & ~uint64_t(3)), 4);
          bad += x != float(p * 1000 + (i - 8192) / 4 + round);
        }
      }
    EXPECT_EQ(bad, 0u) << round;
    b.repoison();
  }
}

TEST(Memory, OutputsRoundTripStraightFromHbm) {
  TmpDir d;
  KB k;
  const int small = k.hbm("s", DType::bf16, {3, 5}, Role::output);
  const int big = k.hbm("b", DType::fp32, {512, 300}, Role::output); // > the 64 KiB buffer
  interp::MachineOptions mo;
  mo.ranks = 2;
  Machine m(k.m, mo);
  const std::vector<uint8_t> s0 = random_bytes(30, 13), s1 = random_bytes(30, 14),
                             b0 = random_bytes(512 * 300 * 4, 15),
                             b1 = random_bytes(512 * 300 * 4, 16);
  m.write_tensor(k.m.tensors[small], s0.data(), 0);
  m.write_tensor(k.m.tensors[small], s1.data(), 1);
  m.write_tensor(k.m.tensors[big], b0.data(), 0);
  m.write_tensor(k.m.tensors[big], b1.data(), 1);
  interp::write_outputs(m, {{"s", d / "s.npy"}, {"b", d / "b.npy"}});
  interp::NpyArray s = interp::read_npy(d / "s.npy"), b = interp::read_npy(d / "b.npy");
  EXPECT_EQ(s.shape, (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(b.shape, (std::vector<int64_t>{2, 512, 300}));
  std::vector<uint8_t> ws(s0), wb(b0);
  ws.insert(ws.end(), s1.begin(), s1.end());
  wb.insert(wb.end(), b1.begin(), b1.end());
  EXPECT_EQ(s.data, ws);
  EXPECT_EQ(b.data, wb);
  // No temporary left next to them.
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(d.p)) ++files;
  EXPECT_EQ(files, 2);
  // A failing large write is an error naming the file.
  const std::string e = error_of([&] { interp::write_outputs(m, {{"b", "/dev/full"}}); });
  EXPECT_NE(e.find("/dev/full"), std::string::npos) << e;
}

TEST(Memory, HbmIsWhatTheRankDeclaresRoundedToPages) {
  KB k;
  k.hbm("x", DType::fp32, {3, 1000}, Role::input); // 12000 bytes
  k.hbm("y", DType::uint8, {1, 97}, Role::output); // 12032 .. 12129
  EXPECT_EQ(Machine::hbm_size(k.m, {}), 12288u);   // the highest end, to a 4 KiB multiple
  interp::MachineOptions mo;
  mo.ranks = 3;
  mo.lnc = 2;
  Machine m(k.m, mo);
  ASSERT_EQ(m.ranks.size(), 3u);
  for (const auto& r : m.ranks) {
    EXPECT_EQ(r.hbm_bytes, 12288u);
    EXPECT_EQ(r.hbm.size(), 12288u);
  }
  KB none; // no HBM tensor: one page
  EXPECT_EQ(Machine::hbm_size(none.m, {}), 4096u);
  KB exact;
  exact.hbm("x", DType::uint8, {2, 4096}, Role::input);
  EXPECT_EQ(Machine::hbm_size(exact.m, {}), 8192u);
}

// A line of /proc/self/status in bytes ("VmHWM:  1234 kB").
long status_bytes(const std::string& key) {
  std::ifstream st("/proc/self/status");
  for (std::string line; std::getline(st, line);)
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1)) * 1024;
  return -1;
}

// Peak RSS of run_module over what the process had before it: the peak is reset first
// (clear_refs 5, Linux >= 4.0), so nothing the test did before counts.
TEST(Memory, PeakRssOfARunStaysNearTheMemoryItModels) {
  TmpDir d;
  KB k = poison_kernel();
  const int64_t R = 64, C = 196608; // x: 48 MiB of fp32, where a heap copy would show clearly
  k.m.tensors.clear();
  k.hbm_top = 0;
  k.hbm("x", DType::fp32, {R, C}, Role::input);
  k.hbm("z", DType::fp32, {8, 32}, Role::scratch);
  k.hbm("y", DType::fp32, {8, 32}, Role::output);
  k.hbm("y2", DType::fp32, {8, 32}, Role::output);
  {
    std::vector<float> x = random_floats(size_t(R * C), 17);
    interp::write_npy(d / "x.npy", DType::fp32, {R, C}, as_bytes(x).data());
  }
  {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    clear.flush();
    ASSERT_TRUE(clear) << "cannot reset the peak RSS (/proc/self/clear_refs)";
  }
  const long before = status_bytes("VmRSS");
  ASSERT_GT(before, 0);
  interp::RunConfig cfg;
  cfg.inputs = {{"x", d / "x.npy"}};
  cfg.outputs = {{"y", d / "y.npy"}};
  std::ostringstream out, err;
  ASSERT_EQ(interp::run_module(k.m, cfg, out, err), 0) << err.str();
  const long peak = status_bytes("VmHWM");
  const uint64_t hbm = Machine::hbm_size(k.m, {});
  const auto& tp = interp::target_params(Target::trn2);
  const uint64_t chip = tp.partitions * (tp.sbuf_stride + tp.psum_stride); // host bytes
  const double grown = double(peak - before), modelled = double(hbm + chip);
  // The memory modelled (HBM + one core's SBUF and PSUM) plus slack for the program and the
  // allocator; a full-size heap copy of x (48 MiB) on the way in would pass the bound.
  EXPECT_LT(grown, modelled + 24.0 * (1 << 20))
      << "grew " << grown / (1 << 20) << " MiB for " << modelled / (1 << 20) << " MiB modelled";
}

} // namespace
} // namespace nisa::test
