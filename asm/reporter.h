// The assembler's diagnostics: errors with their expansion notes, repeats reported once, and
// the limits that stop the assembly (too many errors, too many steps).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "asm/asm.h"
#include "asm/sources.h"

namespace nisa::nasm {

class Reporter {
public:
  Reporter(const AsmOptions& opts, const Module& mod, const Sources& src)
      : opts_(opts), mod_(mod), src_(src) {}

  // An error at `l` (with the expansion chain of its frame as notes). Throws Abort past the
  // error limit.
  void report(const Loc& l, const std::string& msg);
  void report_global(const std::string& msg);   // about the command line
  [[noreturn]] void count_step(const Loc& at);  // the step limit was passed: report, Abort
  [[noreturn]] void count_lexed(const Loc& at); // the lexed-bytes limit was passed: the same
  int errors() const { return errors_; }
  std::vector<Diagnostic> take() { return std::move(diags_); }

private:
  const AsmOptions& opts_;
  const Module& mod_;
  const Sources& src_;
  std::vector<Diagnostic> diags_;
  int errors_ = 0;
  int64_t repeats_ = 0; // errors not reported again (duplicates)
  static constexpr int64_t kMaxRepeatedErrors = 1000;
};

} // namespace nisa::nasm
