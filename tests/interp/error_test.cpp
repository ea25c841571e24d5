// The library's error convention (isa/error.h, docs/decisions.md "Errors").
#include <gtest/gtest.h>

#include <type_traits>

#include "interp/core/exec.h"
#include "interp/run/npy.h"
#include "isa/error.h"
#include "isa/output_file.h"

namespace nisa {
namespace {

TEST(Errors, LocationPrefixesTheMessage) {
  const Error e(SourceLoc{"k.nasm", 12, 7}, "unknown operand 'x'");
  EXPECT_STREQ(e.what(), "k.nasm:12:7: unknown operand 'x'");
  EXPECT_EQ(e.message(), "unknown operand 'x'");
  EXPECT_EQ(e.where().file, "k.nasm");
  EXPECT_EQ(e.where().line, 12u);
  EXPECT_EQ(e.where().col, 7u);
  const Error plain("no location");
  EXPECT_STREQ(plain.what(), "no location");
  EXPECT_FALSE(plain.where().known());
  // A location without a line is not printed.
  const Error noline(SourceLoc{"k.nasm", 0, 0}, "m");
  EXPECT_STREQ(noline.what(), "m");
}

TEST(Errors, EveryFamilyIsANisaError) {
  static_assert(std::is_base_of_v<Error, InputError>);
  static_assert(std::is_base_of_v<Error, HostError>);
  static_assert(std::is_base_of_v<InputError, interp::NpyError>);
  static_assert(std::is_base_of_v<HostError, OutputError>);
  static_assert(std::is_base_of_v<Error, interp::Fault>);
  static_assert(!std::is_base_of_v<InputError, interp::Fault>);
  // Caught by the boundaries as nisa::Error, and still as std::exception by older callers.
  try {
    throw interp::NpyError("x.npy: not a .npy file");
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "x.npy: not a .npy file");
  }
  try {
    throw OutputError("out.npy: cannot create");
  } catch (const std::exception& e) {
    EXPECT_STREQ(e.what(), "out.npy: cannot create");
  }
}

} // namespace
} // namespace nisa
