// The assembler: the public entry (asm/asm.h) to the parts that do the work.
//   Sources       the parsed units, the current file and expansion frame (sources.h)
//   Reporter      diagnostics and the limits that stop an assembly (reporter.h)
//   Symbols       variables, scopes, declared names, tensors, semaphores, groups (symbols.h)
//   Evaluator, Functions, Slices   compile-time expressions (eval.h)
//   Labels        labels and branch fixups (labels.h)
//   SyncLowering  sync clauses, AUTOSYNC, @after edges (sync.h)
//   Operands, Instructions         instruction lines (instructions.h)
//   Declarations  .param/.equ/.set, tensors, views, .sem, .group, .target (declarations.h)
//   Expander      the expansion pass: blocks, loops, macros, includes (expander.h)
#pragma once
#include <string>
#include <string_view>

#include "asm/asm.h"
#include "asm/declarations.h"
#include "asm/eval.h"
#include "asm/expander.h"
#include "asm/instructions.h"
#include "asm/labels.h"
#include "asm/reporter.h"
#include "asm/sources.h"
#include "asm/symbols.h"
#include "asm/sync.h"

namespace nisa::nasm {

class Assembler {
public:
  explicit Assembler(const AsmOptions& opts);
  AsmResult run_file(const std::string& path);
  AsmResult run_string(std::string_view text, const std::string& name);

private:
  AsmResult run(std::string text, const std::string& name);
  void expand(std::string text, const std::string& name); // the main unit's statements
  void add_defines();                                     // -D NAME=VALUE
  AsmResult finish();

  // Each part holds references to the parts it uses (some declared after it: they are only
  // used once all are constructed).
  const AsmOptions& opts_;
  Module mod_;
  Reporter rep_{opts_, mod_, src_};
  Sources src_{mod_, rep_};
  Symbols sym_{mod_, src_};
  Evaluator ev_{src_, sym_, fn_, sl_};
  Functions fn_{src_, sym_, ev_, sl_};
  Slices sl_{src_, sym_, ev_};
  Labels labels_{mod_, src_, rep_};
  SyncLowering sync_{mod_, src_, sym_, ev_, labels_, rep_};
  Operands ops_{mod_, src_, sym_, ev_, sl_, labels_};
  Instructions insts_{opts_, mod_, src_, sym_, labels_, ops_, sync_, rep_};
  Declarations decls_{opts_, mod_, src_, sym_, ev_};
  Expander expander_{opts_, mod_, rep_, src_, sym_, ev_, labels_, decls_, insts_};
};

} // namespace nisa::nasm
