// The tree walk: expansion (.param/.equ/.set/.if/.for/.macro/.include), symbols, allocation,
// operand matching against the instruction table, and the Module it builds.
#pragma once
#include <array>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "asm/asm.h"
#include "asm/layout.h"
#include "asm/parse.h"
#include "asm/value.h"

namespace nisa::nasm {

using Parser = nisa_grammar::NeuronAsmParser;

struct Loc {
  uint32_t file = 0;
  uint32_t line = 0, col = 0;
  int32_t frame = -1;
};

// Thrown to abandon the current statement (the error is already recorded, or carried).
struct StmtError {
  Loc loc;
  std::string message;
};
// Thrown to stop the whole assembly (limit reached or too many errors).
struct Abort {};

class Assembler {
public:
  explicit Assembler(const AsmOptions& opts);
  AsmResult run_file(const std::string& path);
  AsmResult run_string(std::string_view text, const std::string& name);

private:
  // ---- files and blocks
  struct Unit {
    std::unique_ptr<ParsedFile> parsed;
    std::vector<Parser::LineContext*> lines;
    std::vector<size_t> close;                 // opener line -> its closing line
    std::vector<std::vector<size_t>> branches; // .if line -> .elif/.else lines
    bool ok = true;
  };
  struct Macro {
    std::string name;
    uint32_t unit = 0;
    size_t begin = 0, end = 0; // body lines [begin, end)
    std::vector<Parser::MacroParamContext*> params;
    Loc def;
  };
  struct Var {
    Value v;
    enum Kind { Param, Equ, Set, Loop, Arg, Predefined } kind = Set;
    Loc def;
  };
  struct LabelDef {
    std::array<uint32_t, kNumEngines> at{}; // stream sizes where the label was defined
    Loc def;
  };
  struct Fixup {
    Engine engine;
    uint32_t inst, op;
    std::string label;
    Loc loc;
  };

  AsmResult finish();
  uint32_t load_unit(const std::string& display, std::string text);
  void match_blocks(Unit& u, uint32_t id);
  void exec_range(uint32_t unit, size_t begin, size_t end);
  void exec_line(uint32_t unit, size_t& i);
  void exec_stmt(uint32_t unit, size_t& i, Parser::StmtContext* s);
  void exec_if(uint32_t unit, size_t& i);
  void exec_for(uint32_t unit, size_t& i, Parser::ForStmtContext* s);
  void exec_macro_call(Parser::MacroCallContext* s);
  void exec_include(Parser::IncludeStmtContext* s);
  void exec_assign(Parser::AssignStmtContext* s);
  void exec_tensor(Parser::TensorStmtContext* s);
  void exec_view(Parser::ViewStmtContext* s);
  void exec_sem(Parser::SemStmtContext* s);
  void exec_group(Parser::GroupStmtContext* s);
  void exec_target(Parser::TargetStmtContext* s);
  void exec_inst(Parser::InstStmtContext* s);
  void define_label(antlr4::Token* t);
  void set_target_symbols();
  const LabelDef* find_label(const Fixup& fx, std::string& module_name) const;

  // ---- instructions
  Operand convert_operand(const InstDesc& d, size_t k, Parser::ExprContext* e, Engine eng,
                          uint32_t inst_index, bool& raw);
  void parse_sync(Parser::SyncContext* s, Inst& in);
  void check_shapes(const InstDesc& d, const Inst& in, const std::vector<bool>& raw,
                    const std::vector<Parser::ExprContext*>& where, Loc inst_loc);
  AccessPattern to_ap(const Value& v, Parser::ExprContext* e, bool& raw);
  uint16_t sem_index(const std::string& name, Loc loc);

  // `name=value` operands: the name token (nullptr when positional) and the value.
  antlr4::Token* operand_name(Parser::OperandContext* op) const;
  static Parser::ExprContext* operand_value(Parser::OperandContext* op) {
    return op->rhs ? op->rhs : op->lhs;
  }

  // ---- expressions
  Value eval(Parser::ExprContext* e);
  Value eval_primary(Parser::PrimaryContext* p);
  Value eval_binary(Parser::BinaryExprContext* b);
  Value eval_call(Parser::CallPrimContext* c);
  Value eval_index(Parser::IndexExprContext* x);
  Value eval_raw_ap(Parser::CallPrimContext* c);
  int64_t eval_int(Parser::ExprContext* e, const char* what);
  double eval_num(Parser::ExprContext* e, const char* what);
  void need_num(const Value& v, antlr4::ParserRuleContext* at);
  DType eval_dtype(antlr4::Token* t);
  const Var* lookup(const std::string& name) const;
  std::vector<std::string> visible_names() const;
  const TensorDecl* find_tensor(const std::string& name) const;

  // ---- diagnostics
  Loc loc(antlr4::Token* t) const;
  Loc loc(antlr4::ParserRuleContext* c) const { return loc(c->getStart()); }
  [[noreturn]] void fail(Loc l, std::string msg) const { throw StmtError{l, std::move(msg)}; }
  [[noreturn]] void fail(antlr4::ParserRuleContext* c, std::string msg) const {
    fail(loc(c), std::move(msg));
  }
  void report(const Loc& l, const std::string& msg);
  void report_global(const std::string& msg);
  void declare(const std::string& name, Loc l, const char* what);
  int32_t push_frame(ExpansionFrame::Kind k, std::string what, Loc at);

  const AsmOptions& opts_;
  Module mod_;
  std::vector<Unit> units_;
  std::vector<std::string> include_stack_; // canonical paths, for cycle detection
  std::map<std::string, uint32_t> unit_by_path_;
  uint32_t cur_unit_ = 0;
  int32_t cur_frame_ = -1;
  int depth_ = 0;
  int64_t total_insts_ = 0;
  bool target_locked_ = false;
  bool target_set_by_option_ = false;
  std::unique_ptr<Allocator> alloc_;

  std::unordered_map<std::string, Var> globals_;
  std::vector<std::unordered_map<std::string, Var>> locals_;
  std::vector<size_t> macro_base_{0};
  std::unordered_map<std::string, Loc> symbols_; // every declared name, for duplicates
  std::unordered_map<std::string, Macro> macros_;
  std::unordered_map<std::string, TensorDecl> tensors_; // includes views
  std::unordered_map<std::string, uint16_t> sems_, groups_;
  std::unordered_map<std::string, LabelDef> labels_;
  std::vector<Fixup> fixups_;
  std::map<std::string, std::pair<Value, bool>> defines_; // -D values, used?
  std::vector<Diagnostic> diags_;
  int errors_ = 0;
};

} // namespace nisa::nasm
