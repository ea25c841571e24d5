// The tree walk: expansion (.param/.equ/.set/.if/.for/.macro/.include), symbols, allocation,
// operand matching against the instruction table, and the Module it builds.
#pragma once
#include <array>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "asm/asm.h"
#include "asm/ast.h"
#include "asm/layout.h"
#include "asm/value.h"

namespace nisa::nasm {

// Hash maps keyed by std::string that are searched with a string_view (no allocation).
struct NameHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename T> using NameMap = std::unordered_map<std::string, T, NameHash, std::equal_to<>>;

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
// The bytes an instruction operand may touch (AUTOSYNC): partitions x a byte hull.
struct SyncExtent {
  MemSpace space;
  uint32_t p0, p1;
  uint64_t b0, b1;
  bool write;
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
    ParsedFile parsed;                         // parsed.stmts are the unit's "lines"
    std::vector<size_t> close;                 // opener line -> its closing line
    std::vector<std::vector<size_t>> branches; // .if line -> .elif/.else lines
    bool ok = true;
  };
  struct Macro {
    std::string name;
    uint32_t unit = 0;
    size_t begin = 0, end = 0;        // body lines [begin, end)
    uint32_t params = 0, nparams = 0; // Items of the unit: name token, default value
    Loc def;
    std::vector<std::string> param_names; // their spellings
  };
  struct Var {
    Value v;
    enum Kind { Param, Equ, Set, Loop, Arg, Predefined } kind = Set;
    Loc def;
  };
  struct LabelDef {
    std::array<uint32_t, kNumEngines> at{}; // stream sizes where the label was defined
    Loc def;
    int first_engine = -1; // the first instruction assembled after the label (@after)
    uint32_t first_index = 0;
  };
  // @after(L): the instruction carrying it waits for the one at label L (docs/asm.md §2).
  struct AfterEdge {
    Engine consumer;
    uint32_t consumer_index;
    Engine producer;
    uint32_t producer_index;
    Loc loc;
  };
  struct Fixup {
    Engine engine;
    uint32_t inst, op;
    std::string label;
    Loc loc;
  };

  AsmResult run(std::string text, const std::string& name);
  AsmResult finish();
  uint32_t load_unit(const std::string& display, std::string text);
  void match_blocks(Unit& u, uint32_t id);
  void exec_range(uint32_t unit, size_t begin, size_t end);
  void exec_line(uint32_t unit, size_t& i);
  void exec_stmt(uint32_t unit, size_t& i, const Stmt& s);
  void exec_if(uint32_t unit, size_t& i);
  void exec_for(uint32_t unit, size_t& i, const Stmt& s);
  void exec_macro_def(uint32_t unit, size_t& i, const Stmt& s);
  void exec_macro_call(const Stmt& s);
  void exec_include(const Stmt& s);
  void exec_assign(const Stmt& s);
  void exec_tensor(const Stmt& s);
  void exec_view(const Stmt& s);
  void exec_sem(const Stmt& s);
  void exec_group(const Stmt& s);
  void exec_target(const Stmt& s);
  void exec_unknown_directive(const Stmt& s);
  void exec_inst(const Stmt& s);
  void define_label(uint32_t tok);
  void set_target_symbols();
  const LabelDef* find_label(const Fixup& fx, std::string& module_name) const;

  // ---- instructions
  Operand convert_operand(const InstDesc& d, size_t k, uint32_t e, Engine eng, uint32_t inst_index,
                          bool& raw);
  void parse_sync(const Sync& s, Inst& in);
  std::string_view sync_kind(uint32_t tok) const;
  void check_shapes(const InstDesc& d, const Inst& in, const bool* raw, const uint32_t* where,
                    Loc inst_loc);
  AccessPattern to_ap(const Value& v, uint32_t e, bool& raw);
  uint16_t sem_index(std::string_view name, uint32_t at); // `at`: the node, for messages

  // `name=value` operands: the name's node (kNone when positional) and the value.
  uint32_t operand_name(const Item& op) const;
  static uint32_t operand_value(const Item& op) { return op.rhs != kNone ? op.rhs : op.lhs; }

  // ---- expressions (node indices of the current unit's file)
  Value eval(uint32_t e);
  Value eval_call(uint32_t e);
  Value eval_binary(uint32_t e);
  Value eval_index(uint32_t e);
  Value eval_raw_ap(uint32_t e);
  int64_t eval_int(uint32_t e, const char* what);
  void need_num(const Value& v, uint32_t at);
  DType eval_dtype(uint32_t tok);
  const Var* lookup(std::string_view name) const;
  std::vector<std::string> visible_names() const;
  const TensorDecl* find_tensor(std::string_view name) const;

  // ---- the current file
  const ParsedFile& file() const { return *file_; }
  std::string_view text(uint32_t tok) const { return file_->text(tok); }
  const Node& node(uint32_t e) const { return file_->nodes[e]; }
  void enter_unit(uint32_t unit) {
    cur_unit_ = unit;
    file_ = &units_[unit].parsed;
  }

  // ---- diagnostics
  Loc loc(uint32_t tok) const {
    const auto [line, col] = file_->position(tok);
    return Loc{cur_unit_, line, col, cur_frame_};
  }
  Loc loc_of(uint32_t e) const { return loc(node(e).tok); }
  [[noreturn]] void fail(Loc l, std::string msg) const { throw StmtError{l, std::move(msg)}; }
  [[noreturn]] void fail_at(uint32_t e, std::string msg) const { fail(loc_of(e), std::move(msg)); }
  void report(const Loc& l, const std::string& msg);
  void count_step(const Loc& at); // Aborts past opts_.max_steps
  void report_global(const std::string& msg);
  void declare(std::string_view name, Loc l, const char* what);
  int32_t push_frame(ExpansionFrame::Kind k, std::string what, Loc at);

  const AsmOptions& opts_;
  Module mod_;
  std::deque<Unit> units_; // a deque: references stay valid while includes load
  const ParsedFile* file_ = nullptr;
  std::vector<std::string> include_stack_; // canonical paths, for cycle detection
  std::map<std::string, uint32_t> unit_by_path_;
  uint32_t cur_unit_ = 0;
  int32_t cur_frame_ = -1;
  int depth_ = 0;
  int64_t total_insts_ = 0;
  int64_t steps_ = 0; // statements executed and loop iterations begun (opts_.max_steps)
  bool target_locked_ = false;
  bool target_set_by_option_ = false;
  std::unique_ptr<Allocator> alloc_;

  NameMap<Var> globals_; // never erased: a Var* into it stays valid (global_cache_)
  // A local scope (a .for iteration's variable, a macro's arguments): a few names, searched
  // linearly (cheaper than hashing the name once per enclosing scope).
  struct Scope {
    std::vector<std::pair<std::string, Var>> vars;
    Var* find(std::string_view n) {
      for (auto& [k, v] : vars)
        if (k.size() == n.size() &&
            std::char_traits<char>::compare(k.data(), n.data(), n.size()) == 0)
          return &v;
      return nullptr;
    }
    const Var* find(std::string_view n) const { return const_cast<Scope*>(this)->find(n); }
  };
  // locals_[0, nlocals_) are live; the rest are kept (their vectors' storage is reused).
  std::vector<Scope> locals_;
  size_t nlocals_ = 0;
  Scope& push_scope() {
    if (nlocals_ == locals_.size()) locals_.emplace_back();
    Scope& sc = locals_[nlocals_++];
    sc.vars.clear();
    return sc;
  }
  void pop_scopes(size_t to) { nlocals_ = to; }
  std::vector<size_t> macro_base_{0};
  // Per unit and node: the global a Name node resolved to (once found, a global stays).
  std::vector<std::vector<const Var*>> global_cache_;
  const Var* lookup_node(uint32_t e, std::string_view name);
  const Var* autosync_ = nullptr; // the global AUTOSYNC, once defined
  // Per unit, per line: an instruction line's engine and table row (once resolved).
  std::vector<std::vector<std::pair<uint8_t, const InstDesc*>>> inst_cache_;
  NameMap<Loc> symbols_; // every declared name, for duplicates
  NameMap<Macro> macros_;
  NameMap<TensorDecl> tensors_; // includes views
  // Tensors and views whose declaration failed (and was reported): a use of one abandons its
  // statement silently instead of reporting "unknown tensor" at every use.
  std::set<std::string, std::less<>> failed_decls_;
  [[noreturn]] void fail_unknown_tensor(uint32_t e, std::string_view name,
                                        const std::string& msg) const {
    if (failed_decls_.count(name)) fail(loc_of(e), "");
    fail_at(e, msg);
  }
  NameMap<uint16_t> sems_, groups_;
  NameMap<LabelDef> labels_;
  std::vector<Fixup> fixups_;
  std::vector<std::string> labels_wanting_inst_;                 // defined, no instruction yet
  std::map<std::string, std::string, std::less<>> latest_local_; // .Lname -> latest key
  std::vector<AfterEdge> afters_, pending_afters_;
  void lower_afters(); // @after edges -> semaphores, @signal and @wait (at the end)
  // AUTOSYNC (docs/asm.md §2): with `.set AUTOSYNC = 1`, every instruction gets an @after
  // edge to the latest earlier instruction of each other stream whose bytes it conflicts with.
  struct AutoRec {
    Engine engine;
    uint32_t index;
    std::vector<SyncExtent> ext;
  };
  std::map<std::tuple<int, int, int>, std::vector<AutoRec>> auto_recs_;
  void autosync(Engine e, uint32_t index, Loc at);
  std::map<std::string, std::pair<Value, bool>> defines_; // -D values, used?
  std::vector<Diagnostic> diags_;
  int errors_ = 0;
  int64_t repeats_ = 0; // errors not reported again (duplicates)
  static constexpr int64_t kMaxRepeatedErrors = 1000;
};

} // namespace nisa::nasm
