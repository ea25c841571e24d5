// .npy reading and writing: every dtype, Fortran order, ml_dtypes descriptors, bad files.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "builders.h"
#include "interp/run/npy.h"

namespace nisa::interp {
namespace {

using test::handmade;

TEST(Npy, RoundTripEveryDtype) {
  std::mt19937 rng(11);
  for (int d = 0; d < kNumDTypes; ++d) {
    DType t = static_cast<DType>(d);
    std::vector<int64_t> shape{3, 5, 2};
    std::vector<uint8_t> data(30 * dtype_bytes(t));
    for (auto& b : data) b = uint8_t(rng());
    std::string file = format_npy(t, shape, data.data());
    NpyArray a = parse_npy(file, "mem.npy");
    EXPECT_EQ(a.descr, npy_descr(t)) << dtype_name(t);
    EXPECT_EQ(a.shape, shape);
    EXPECT_EQ(a.data, data) << dtype_name(t);
    EXPECT_EQ((file.size() - data.size()) % 64, 0u);
    EXPECT_NO_THROW(check_npy(a, t, shape, "mem.npy", "x"));
  }
}

TEST(Npy, DescriptorsOfNumpyAndMlDtypes) {
  EXPECT_EQ(npy_descr(DType::bf16), "<u2");
  EXPECT_EQ(npy_descr(DType::fp8e4m3), "|u1");
  EXPECT_EQ(npy_descr(DType::fp16), "<f2");
  EXPECT_TRUE(npy_descr_matches("<V2", DType::bf16)); // ml_dtypes bfloat16 via np.save
  EXPECT_TRUE(npy_descr_matches("bfloat16", DType::bf16));
  EXPECT_TRUE(npy_descr_matches("|V1", DType::fp8e4m3)); // ml_dtypes float8_e4m3
  EXPECT_TRUE(npy_descr_matches("<f1", DType::fp8e5m2)); // older ml_dtypes float8_e5m2
  EXPECT_TRUE(npy_descr_matches("float8_e5m2", DType::fp8e5m2));
  EXPECT_FALSE(npy_descr_matches("float8_e4m3fn", DType::fp8e4m3)); // OCP variant: other format
  EXPECT_FALSE(npy_descr_matches("<f2", DType::bf16));
  EXPECT_FALSE(npy_descr_matches("<f4", DType::int32));
  // A bf16 array saved by ml_dtypes loads as its raw bits.
  std::vector<uint8_t> bits{0x80, 0x3f, 0x00, 0x40}; // 1.0, 2.0
  NpyArray a = parse_npy(handmade("<V2", false, "(2,)", bits), "ml.npy");
  EXPECT_EQ(a.data, bits);
  EXPECT_NO_THROW(check_npy(a, DType::bf16, {2}, "ml.npy", "x"));
}

TEST(Npy, FortranOrderIsConvertedToC) {
  // C-order matrix m[i][j] = 10 * i + j of shape (2, 3); Fortran order stores columns.
  std::vector<int32_t> f{0, 10, 1, 11, 2, 12};
  std::vector<uint8_t> bytes(24);
  std::memcpy(bytes.data(), f.data(), 24);
  NpyArray a = parse_npy(handmade("<i4", true, "(2, 3)", bytes), "f.npy");
  std::vector<int32_t> c(6);
  std::memcpy(c.data(), a.data.data(), 24);
  EXPECT_EQ(c, (std::vector<int32_t>{0, 1, 2, 10, 11, 12}));
  // 3-D: shape (2, 2, 2), element [i][j][k] = 4i + 2j + k; Fortran index = i + 2j + 4k.
  std::vector<uint8_t> f3(8);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 2; ++k) f3[i + 2 * j + 4 * k] = uint8_t(4 * i + 2 * j + k);
  NpyArray b = parse_npy(handmade("|u1", true, "(2, 2, 2)", f3), "f3.npy");
  EXPECT_EQ(b.data, (std::vector<uint8_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Npy, BigEndianIsSwapped) {
  std::vector<uint8_t> be{0x3f, 0x80, 0x00, 0x00}; // 1.0f big-endian
  NpyArray a = parse_npy(handmade(">f4", false, "(1,)", be), "be.npy");
  float v;
  std::memcpy(&v, a.data.data(), 4);
  EXPECT_EQ(v, 1.0f);
}

void expect_error(const std::string& bytes, const std::string& msg) {
  try {
    parse_npy(bytes, "bad.npy");
    FAIL() << "no error for " << msg;
  } catch (const NpyError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.npy: " + msg), std::string::npos) << e.what();
  }
}

TEST(Npy, CorruptFilesNameTheFileAndTheProblem) {
  std::vector<uint8_t> four(16, 0);
  std::string good = handmade("<f4", false, "(2, 2)", four);
  expect_error("hello world", "not a .npy file (bad magic");
  expect_error(good.substr(0, 40), "truncated header");
  expect_error(good.substr(0, good.size() - 3),
               "truncated data: shape (2, 2) of '<f4' needs 16 bytes, the file has 13");
  expect_error(good + "xx", "2 bytes of trailing data");
  expect_error(handmade("<c8", false, "(1,)", std::vector<uint8_t>(8)),
               "unsupported dtype descriptor '<c8'");
  expect_error(handmade("<f4", false, "(2, x)", four), "bad shape entry 'x'");
  std::string v9 = good;
  v9[6] = 9;
  expect_error(v9, "unsupported .npy format version 9.0");
  std::string nodescr = good;
  nodescr.replace(nodescr.find("descr"), 5, "dexcr");
  expect_error(nodescr, "header has an unknown key 'dexcr'"); // numpy rejects it too
}

TEST(Npy, MismatchWithDeclarationIsAClearError) {
  std::vector<uint8_t> d(24);
  NpyArray a = parse_npy(format_npy(DType::fp32, {2, 3}, d.data()), "in.npy");
  try {
    check_npy(a, DType::bf16, {2, 3}, "in.npy", "x");
    FAIL();
  } catch (const NpyError& e) {
    EXPECT_STREQ(e.what(),
                 "in.npy: dtype '<f4' does not match tensor 'x' of dtype bf16 (expected '<u2')");
  }
  try {
    check_npy(a, DType::fp32, {3, 2}, "in.npy", "x");
    FAIL();
  } catch (const NpyError& e) {
    EXPECT_STREQ(e.what(), "in.npy: shape (2, 3) does not match tensor 'x' of shape (3, 2)");
  }
}

// Issue 11: what used to crash or be read differently from numpy.
TEST(Npy, FortranShapeWhoseProductOverflowsIsAnError) {
  // Each entry is <= 2^40 (accepted alone); the product is 2^120 elements.
  expect_error(handmade("<f4", true, "(1099511627776, 1099511627776, 1099511627776)", {}),
               "shape (1099511627776, 1099511627776, 1099511627776) of '<f4' has more than 2^64 "
               "bytes");
  // 2^62 elements x 4 bytes = 2^64: the byte count alone overflows.
  expect_error(handmade("<f4", true, "(2147483648, 2147483648)", {}),
               "shape (2147483648, 2147483648) of '<f4' has more than 2^64 bytes");
}

TEST(Npy, DuplicateOrUnknownHeaderKeysAreErrors) {
  std::vector<uint8_t> four(16, 0);
  // numpy keeps the last 'descr' ('<i4'), an older nisa the first: neither may be guessed.
  std::string two = handmade("<f4", false, "(2, 2)", four);
  two.replace(two.find("'fortran_order'"), 0, "'descr': '<i4', ");
  two.erase(two.find("  \n"), 16); // keep the header length (the replacement added 16 bytes)
  expect_error(two, "header has the key 'descr' twice");
  std::string shape2 = handmade("<f4", false, "(2, 2)", four);
  shape2.replace(shape2.find("}"), 0, "'shape': (4,), ");
  shape2.erase(shape2.find("  \n"), 15);
  expect_error(shape2, "header has the key 'shape' twice");
  expect_error(handmade("<f4', 'extra': 'x", false, "(2, 2)", four),
               "header has an unknown key 'extra'");
}

TEST(Npy, HostileTextIsQuotedAtMostALineLong) {
  const std::string descr(30000, 'A'); // a 30 kB descriptor (a version 1.0 header holds 64 kB)
  try {
    parse_npy(handmade(descr, false, "(1,)", {0, 0, 0, 0}), "bad.npy");
    FAIL();
  } catch (const NpyError& e) {
    const std::string m = e.what();
    EXPECT_LT(m.size(), 300u) << m.size();
    EXPECT_NE(m.find("unsupported dtype descriptor 'AAAA"), std::string::npos);
    EXPECT_NE(m.find("AAA...'"), std::string::npos) << m;
  }
  // Binary bytes in a quoted key are escaped, not sent to the terminal.
  std::string bin = handmade("<f4", false, "(1,)", {0, 0, 0, 0});
  bin.replace(bin.find("descr"), 5, "\x1b[2J");
  try {
    parse_npy(bin, "bad.npy");
    FAIL();
  } catch (const NpyError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown key '\\x1b[2J'"), std::string::npos) << e.what();
  }
}

struct NpyFile : ::testing::Test {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("nisa_npyfile_" + std::to_string(::getpid()));
  void SetUp() override { std::filesystem::create_directories(dir); }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string put(const std::string& name, const std::string& bytes) {
    const std::string p = (dir / name).string();
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
};

TEST_F(NpyFile, TheHeaderIsCheckedBeforeTheDataIsRead) {
  // The header declares 1 GiB (2^28 fp32) that the file does not hold: the caller's check of
  // the header (here: a shape mismatch) is reported, not a truncation after reading.
  const std::string p = put("big.npy", handmade("<f4", false, "(16384, 16384)", {1, 2, 3, 4}));
  int calls = 0;
  try {
    read_npy(p, [&](const NpyArray& a) {
      ++calls;
      EXPECT_TRUE(a.data.empty()); // no data read yet
      throw NpyError("shape checked first");
    });
    FAIL();
  } catch (const NpyError& e) {
    EXPECT_STREQ(e.what(), "shape checked first");
  }
  EXPECT_EQ(calls, 1);
  // Without a check, the size is compared with the header from the file's size.
  try {
    read_npy(p);
    FAIL();
  } catch (const NpyError& e) {
    EXPECT_NE(std::string(e.what()).find("needs 1073741824 bytes, the file has 4"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(NpyFile, StreamsAreReadOnlyAsFarAsTheHeaderSays) {
  // /dev/zero never ends: the magic is wrong after 12 bytes.
  try {
    read_npy("/dev/zero");
    FAIL();
  } catch (const NpyError& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/zero: not a .npy file"), std::string::npos);
  }
  // A FIFO holding a valid file followed by more bytes than the header declares.
  const std::string fifo = (dir / "pipe.npy").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::vector<uint8_t> data(16);
  std::mt19937 rng(11);
  for (auto& b : data) b = uint8_t(rng());
  const std::string good = handmade("<f4", false, "(2, 2)", data);
  auto feed = [&](std::string bytes) {
    return std::thread([fifo, bytes] {
      std::ofstream f(fifo, std::ios::binary);
      f << bytes;
    });
  };
  std::thread w = feed(good);
  NpyArray a = read_npy(fifo);
  w.join();
  EXPECT_EQ(a.data, data);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 2}));
  w = feed(good + "extra");
  EXPECT_THROW(read_npy(fifo), NpyError); // trailing data after the array
  w.join();
}

TEST_F(NpyFile, NonRegularDestinationIsWrittenDirectlyAndErrorsAreReported) {
  std::vector<uint8_t> data(16, 7);
  EXPECT_NO_THROW(write_npy("/dev/null", DType::fp32, {4}, data.data()));
  try {
    write_npy("/dev/full", DType::fp32, {4}, data.data());
    FAIL();
  } catch (const NpyError& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/full: write failed"), std::string::npos) << e.what();
  }
  // A destination in a missing directory: an error, nothing created.
  EXPECT_THROW(write_npy((dir / "no/such/y.npy").string(), DType::fp32, {4}, data.data()),
               NpyError);
}

TEST(Npy, MissingFile) { EXPECT_THROW(read_npy("/nonexistent/dir/x.npy"), NpyError); }

} // namespace
} // namespace nisa::interp
