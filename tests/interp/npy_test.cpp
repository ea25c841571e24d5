// .npy reading and writing: every dtype, Fortran order, ml_dtypes descriptors, bad files.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "interp/npy.h"

namespace nisa::interp {
namespace {

// A .npy file written by hand (independent of format_npy): version 1.0 header.
std::string handmade(const std::string& descr, bool fortran, const std::string& shape,
                     const std::vector<uint8_t>& data) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                     ", 'shape': " + shape + ", }";
  while ((10 + dict.size() + 1) % 64) dict += ' ';
  dict += '\n';
  std::string f = "\x93NUMPY";
  f += '\x01';
  f += '\x00';
  f += char(dict.size() & 0xff);
  f += char(dict.size() >> 8);
  return f + dict + std::string(data.begin(), data.end());
}

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

TEST(Npy, MissingFile) { EXPECT_THROW(read_npy("/nonexistent/dir/x.npy"), NpyError); }

} // namespace
} // namespace nisa::interp
