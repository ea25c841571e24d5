// Instructions: the mnemonic looked up in the instruction table (isa/insts.def), operands bound
// and lowered to the table's operand kinds, sync clauses, the target and shape checks, and the
// instruction added to its engine's stream.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "asm/ast.h"
#include "asm/sources.h"

namespace nisa::nasm {

class Evaluator;
class Labels;
class Slices;
class Symbols;
class SyncLowering;

// One operand's value -> the Operand of its table kind (with the legality of its memory space).
class Operands {
public:
  Operands(const Module& mod, const Sources& src, const Symbols& sym, Evaluator& ev,
           const Slices& sl, Labels& labels)
      : mod_(mod), src_(src), sym_(sym), ev_(ev), sl_(sl), labels_(labels) {}
  // Operand k of an instruction of `d` (the inst_index-th of `eng`'s stream) from expression
  // `e`; a label operand queues a fixup. `raw`: the operand was written as ap(...).
  Operand convert(const InstDesc& d, size_t k, uint32_t e, Engine eng, uint32_t inst_index,
                  bool& raw);
  // The static rules of isa/legality.h; `where` holds each operand's expression (or kNone),
  // bit k of `raw` is set when operand k was written as ap(...).
  void check_shapes(const Inst& in, uint64_t raw, const uint32_t* where, Loc inst_loc) const;

private:
  // A Name operand that eval() would give as that name (no variable of it visible, not inf,
  // nan, true or false): its text; else empty.
  std::string_view plain_name(uint32_t e) const;
  // An enumerator, queue or register named `n`, as convert() reads that name's Value; false
  // when `n` is none (convert then reports it).
  bool convert_name(const OperandDesc& od, std::string_view n, Operand& o) const;
  const Module& mod_;
  const Sources& src_;
  const Symbols& sym_;
  Evaluator& ev_;
  const Slices& sl_;
  Labels& labels_;
};

class Instructions {
public:
  Instructions(const AsmOptions& opts, Module& mod, const Sources& src, const Symbols& sym,
               Labels& labels, Operands& ops, SyncLowering& sync, Reporter& rep)
      : opts_(opts), mod_(mod), src_(src), sym_(sym), labels_(labels), ops_(ops), sync_(sync),
        rep_(rep) {}
  void assemble(const Stmt& s); // an instruction line of the current unit

private:
  void bind(const Stmt& s, const InstDesc& row, std::string_view dotted, uint32_t* bound) const;
  const AsmOptions& opts_;
  Module& mod_;
  const Sources& src_;
  const Symbols& sym_;
  Labels& labels_;
  Operands& ops_;
  SyncLowering& sync_;
  Reporter& rep_;
  int64_t total_insts_ = 0;
  // Per unit, per line: an instruction line's engine and table row (once resolved), and once
  // its operands were bound: their expressions by table operand (kNone: not given) at
  // bound_[bound_at], and the row's defaults.
  struct LineInst {
    uint8_t eng = 0;
    const InstDesc* d = nullptr;
    uint32_t bound_at = UINT32_MAX;
    const std::vector<Operand>* defaults = nullptr;
  };
  UnitTable<LineInst> inst_cache_;
  std::vector<uint32_t> bound_;
  std::unordered_map<const InstDesc*, std::vector<Operand>> defaults_; // per table row
};

} // namespace nisa::nasm
