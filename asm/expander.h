// The expansion pass: a unit's statements executed in order. Blocks (.if/.elif/.else, .for)
// choose and repeat lines, macros expand, .include runs another unit; declarations go to
// Declarations, instructions to Instructions, labels to Labels.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "asm/ast.h"
#include "asm/reporter.h"
#include "asm/sources.h"

namespace nisa::nasm {

class Declarations;
class Evaluator;
class Instructions;
class Labels;
class Symbols;

class Expander {
public:
  Expander(const AsmOptions& opts, Module& mod, Reporter& rep, Sources& src, Symbols& sym,
           Evaluator& ev, Labels& labels, Declarations& decls, Instructions& insts)
      : opts_(opts), mod_(mod), rep_(rep), src_(src), sym_(sym), ev_(ev), labels_(labels),
        decls_(decls), insts_(insts) {}
  // The file being assembled, by its canonical path (an include of it is a cycle).
  void set_main_path(std::string canonical) { include_stack_.push_back(std::move(canonical)); }
  void exec_range(uint32_t unit, size_t begin, size_t end);
  // `bytes` more lexed (AsmOptions::max_lexed_bytes); past the limit: reported at `at`, Abort.
  void count_lexed(uint64_t bytes, const Loc& at) {
    lexed_ += bytes;
    if (lexed_ > uint64_t(opts_.max_lexed_bytes)) rep_.count_lexed(at);
  }

  // What was read (AsmResult::read_files, absent_files).
  void note_read(const std::string& path, std::string_view text);
  std::vector<std::pair<std::string, uint64_t>>& read_files() { return read_files_; }
  std::vector<std::string>& absent_files() { return absent_files_; }

private:
  struct Macro {
    std::string name;
    uint32_t unit = 0;
    size_t begin = 0, end = 0;        // body lines [begin, end)
    uint32_t params = 0, nparams = 0; // Items of the unit: name token, default value
    Loc def;
    std::vector<std::string> param_names; // their spellings
    std::vector<uint32_t> param_ids;      // and their interned ids (Symbols::intern)
  };

  // What a .for or macro call line resolves to, once per unit and line (a loop or macro body
  // runs its lines over and over): the macro called (a macro is never redefined), the .for's
  // words checked and its variable interned.
  struct LineInfo {
    const Macro* macro = nullptr;
    uint32_t for_var = UINT32_MAX;
  };
  LineInfo& line_info(const Stmt& s);
  UnitTable<LineInfo> line_info_;

  void exec_line(uint32_t unit, size_t& i);
  void exec_stmt(uint32_t unit, size_t& i, const Stmt& s);
  void exec_if(uint32_t unit, size_t& i);
  void exec_for(uint32_t unit, size_t& i, const Stmt& s);
  void exec_macro_def(uint32_t unit, size_t& i, const Stmt& s);
  void exec_macro_call(const Stmt& s);
  const Macro* find_macro(std::string_view name, const Loc& at) const; // or StmtError
  void exec_include(const Stmt& s);
  void exec_unknown_directive(const Stmt& s);

  const AsmOptions& opts_;
  Module& mod_;
  Reporter& rep_;
  Sources& src_;
  Symbols& sym_;
  Evaluator& ev_;
  Labels& labels_;
  Declarations& decls_;
  Instructions& insts_;
  NameMap<Macro> macros_;
  std::vector<std::string> include_stack_; // canonical paths, for cycle detection
  std::map<std::string, uint32_t> unit_by_path_;
  std::vector<std::pair<std::string, uint64_t>> read_files_;
  std::vector<std::string> absent_files_;
  int depth_ = 0;      // nested macro expansions and includes
  int64_t steps_ = 0;  // statements executed and loop iterations begun (opts_.max_steps)
  uint64_t lexed_ = 0; // bytes lexed (opts_.max_lexed_bytes)
};

} // namespace nisa::nasm
