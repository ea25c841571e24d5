// The directives that declare names: .param/.equ/.set, tensors (.hbm/.sbuf/.psum, allocated by
// asm/layout.h's Allocator), .view, .sem, .group, .ranks / .lnc, and .target (which must come
// first).
#pragma once
#include <memory>
#include <vector>

#include "asm/ast.h"
#include "asm/layout.h"
#include "asm/sources.h"

namespace nisa::nasm {

struct Value;
struct Var;

class Evaluator;
class Symbols;

class Declarations {
public:
  // A --target option fixes the target: .target is then ignored.
  Declarations(const AsmOptions& opts, Module& mod, const Sources& src, Symbols& sym,
               Evaluator& ev);
  void start(); // the allocator and the predefined symbols of the target

  void assign(const Stmt& s); // .param, .equ, .set
  void tensor(const Stmt& s);
  void view(const Stmt& s);
  void sem(const Stmt& s);
  void group(const Stmt& s);
  void launch(const Stmt& s); // .ranks, .lnc
  void target(const Stmt& s);
  // After a tensor or an instruction, .target is too late.
  void lock_target() { target_locked_ = true; }

private:
  DType eval_dtype(uint32_t tok); // a dtype name, or a variable holding one
  void set_value(Value& to, uint32_t e);

  // Per unit and line, of a .set: its name's interned id and the global it names (once found,
  // a global stays), so that a .set run at every expansion finds its variable without a search.
  struct SetLine {
    uint32_t id = UINT32_MAX;
    Var* global = nullptr;
  };
  UnitTable<SetLine> set_lines_;

  Module& mod_;
  const Sources& src_;
  Symbols& sym_;
  Evaluator& ev_;
  std::unique_ptr<Allocator> alloc_;
  bool target_locked_ = false;
  bool target_set_by_option_ = false;
};

} // namespace nisa::nasm
