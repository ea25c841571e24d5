// Envelope limits of the cross-entropy and conv1d kernels: each limit stops assembly with
// its `.error`.
#include <gtest/gtest.h>

#include <cctype>
#include <ostream>
#include <string>
#include <vector>

#include "tests/support/kernel_harness.h"

namespace nisa::kt {
namespace {

struct Neg {
  const char* file;
  Defines defs;
  const char* message;
};

// Printed in test listings (and so in ctest names) as the kernel and its -D values.
void PrintTo(const Neg& n, std::ostream* os) {
  *os << n.file;
  for (const auto& [k, v] : n.defs) *os << " -D " << k << "=" << v;
}

class KernelEnvelope : public testing::TestWithParam<Neg> {};

TEST_P(KernelEnvelope, ErrorNamesTheLimit) {
  const Neg& n = GetParam();
  Assembled a = assemble_kernel(n.file, n.defs, Target::trn2);
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.diagnostics.find(n.message), std::string::npos) << a.diagnostics;
}

// A stable test name from the kernel and its -D values (e.g. conv1d_K_129_3).
std::string neg_name(const testing::TestParamInfo<Neg>& info) {
  std::string n(info.param.file);
  n = n.substr(0, n.find('.'));
  for (const auto& [k, v] : info.param.defs) n += "_" + k + "_" + v;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n + "_" + std::to_string(info.index);
}

std::vector<Neg> ce_cases() {
  std::vector<Neg> v;
  for (const char* f : {"cross_entropy_fwd.nasm", "cross_entropy_bwd.nasm"}) {
    v.push_back({f, {{"DT", "fp16"}}, "DT must be fp32 or bf16"});
    v.push_back({f, {{"NPOS", "0"}}, "NPOS and V must be positive"});
    v.push_back({f, {{"PB", "129"}}, "PB (positions per batch) must be in [1, 128]"});
    v.push_back({f, {{"PB", "0"}}, "PB (positions per batch) must be in [1, 128]"});
    v.push_back({f, {{"CS", "65536"}, {"V", "70000"}}, "must be in [1, 65535] (F_MAX)"});
    v.push_back({f, {{"IGNORE_INDEX", "-16777216"}}, "|IGNORE_INDEX| must be < 2^24"});
  }
  v.push_back(
      {"cross_entropy_fwd.nasm", {{"NPOS", "20000"}, {"V", "202408"}}, "NPOS * V must be < 2^31"});
  v.push_back({"cross_entropy_bwd.nasm", {{"V", "16777216"}}, "V must be < 2^24"});
  v.push_back({"cross_entropy_bwd.nasm", {{"REDUCTION", "none"}}, "REDUCTION must be mean or sum"});
  v.push_back({"cross_entropy_bwd.nasm", {{"INPLACE", "2"}}, "INPLACE must be 0 or 1"});
  return v;
}
std::vector<Neg> conv_cases() {
  const char* c = "conv1d.nasm";
  const char* d = "depthwise_conv1d.nasm";
  return {
      {c, {{"DT", "fp16"}}, "DT must be fp32 or bf16"},
      {c, {{"ACT", "softplus"}}, "ACT must be none, relu"},
      {c, {{"BIAS", "2"}}, "BIAS must be 0 or 1"},
      {c, {{"LNC_SHARD", "2"}}, "LNC_SHARD must be 0 or 1"},
      {c, {{"K", "129"}, {"L", "200"}}, "K must be in [1, 128]"},
      {c, {{"K", "0"}}, "K must be in [1, 128]"},
      {c, {{"CIN", "4097"}}, "CIN must be in [1, 4096]"},
      {c, {{"COUT", "4097"}}, "COUT must be in [1, 4096]"},
      {c, {{"L", "4097"}}, "L must be in [1, 4096]"},
      {c, {{"B", "0"}}, "B must be positive"},
      {c, {{"STRIDE", "0"}}, "STRIDE and DIL must be positive"},
      {c, {{"DIL", "0"}}, "STRIDE and DIL must be positive"},
      {c, {{"PAD_L", "-1"}}, "PAD_L and PAD_R must be in [0, 4096]"},
      {c, {{"PAD_R", "4097"}}, "PAD_L and PAD_R must be in [0, 4096]"},
      {c, {{"K", "10"}, {"L", "5"}}, "LOUT < 1"},
      {d, {{"DT", "int8"}}, "DT must be fp32 or bf16"},
      {d, {{"C", "0"}}, "N, C and W must be positive"},
      {d, {{"S", "1025"}, {"W", "2000"}}, "S must be in [1, 1024]"},
      {d, {{"STRIDE", "0"}}, "STRIDE must be positive"},
      {d, {{"PAD_L", "5000"}}, "PAD_L and PAD_R must be in [0, 4096]"},
      {d, {{"S", "100"}, {"W", "10"}}, "Q < 1"},
  };
}
INSTANTIATE_TEST_SUITE_P(CrossEntropy, KernelEnvelope, testing::ValuesIn(ce_cases()), neg_name);
INSTANTIATE_TEST_SUITE_P(Conv, KernelEnvelope, testing::ValuesIn(conv_cases()), neg_name);

} // namespace
} // namespace nisa::kt
