// The source units of one assembly and where the expansion is: the current unit (its parsed
// file) and expansion frame. Also the small types every part of the assembler shares.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "asm/asm.h"
#include "asm/ast.h"

namespace nisa::nasm {

// One T per element (statement, sync clause or expression node) of each unit's parsed file,
// made on first use, T{} meaning "not resolved yet": the caches of what a line or an expression
// resolves to, since a loop or macro body runs its lines over and over. A unit's row never
// moves once made (a new unit moves the rows, not their elements).
template <class T> class UnitTable {
public:
  // The unit's row, at least n long.
  T* row(uint32_t unit, size_t n) {
    if (rows_.size() <= unit) rows_.resize(unit + 1);
    auto& r = rows_[unit];
    if (r.size() < n) r.resize(n);
    return r.data();
  }

private:
  std::vector<std::vector<T>> rows_;
};

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
// Thrown to stop the whole assembly (limit reached or too many errors).
struct Abort {};

[[noreturn]] inline void fail(Loc l, std::string msg) { throw StmtError{l, std::move(msg)}; }

// A parsed file and its blocks.
struct Unit {
  ParsedFile parsed;                         // parsed.stmts are the unit's "lines"
  std::vector<size_t> close;                 // opener line -> its closing line
  std::vector<std::vector<size_t>> branches; // .if line -> .elif/.else lines
  std::vector<uint32_t> bytes;               // line -> the bytes of its statement's lines
  bool ok = true;
  // Token texts (begin, length) and positions (line, column) by byte offset, once asked for:
  // the statements of a loop or a macro ask for the same ones at every pass.
  mutable std::unordered_map<uint32_t, std::pair<uint32_t, uint32_t>> tok_text, tok_pos;
};

class Reporter;

class Sources {
public:
  Sources(Module& mod, Reporter& rep) : mod_(mod), rep_(rep) {}

  // Parses a file into a new unit (its syntax and block errors reported); returns its id.
  uint32_t load(const std::string& display, std::string text);
  double* parse_time = nullptr; // when set, load's time is added there (AsmTimes::parse)
  Unit& unit(uint32_t u) { return units_[u]; }
  const Unit& unit(uint32_t u) const { return units_[u]; }
  size_t units() const { return units_.size(); }

  // ---- the current file
  void enter(uint32_t unit) {
    cur_unit_ = unit;
    cur_ = &units_[unit];
    file_ = &cur_->parsed;
  }
  uint32_t cur_unit() const { return cur_unit_; }
  const ParsedFile& file() const { return *file_; }
  std::string_view text(uint32_t tok) const {
    auto [it, added] = cur_->tok_text.try_emplace(tok);
    if (added) {
      const Token t = lex_at(file_->src, tok);
      it->second = {t.begin, t.end - t.begin};
    }
    return std::string_view(file_->src).substr(it->second.first, it->second.second);
  }
  const Node& node(uint32_t e) const { return file_->nodes[e]; }

  // ---- the current expansion frame
  int32_t frame() const { return cur_frame_; }
  void set_frame(int32_t f) { cur_frame_ = f; }
  int32_t push_frame(ExpansionFrame::Kind k, std::string what, Loc at);

  // ---- locations
  Loc loc(uint32_t tok) const {
    auto [it, added] = cur_->tok_pos.try_emplace(tok);
    if (added) it->second = file_->position(tok);
    return Loc{cur_unit_, it->second.first, it->second.second, cur_frame_};
  }
  Loc loc_of(uint32_t e) const { return loc(node(e).tok); }
  [[noreturn]] void fail_at(uint32_t e, std::string msg) const { fail(loc_of(e), std::move(msg)); }

private:
  void match_blocks(Unit& u, uint32_t id);

  Module& mod_;
  Reporter& rep_;
  std::deque<Unit> units_; // a deque: references stay valid while includes load
  const Unit* cur_ = nullptr;
  const ParsedFile* file_ = nullptr;
  uint32_t cur_unit_ = 0;
  int32_t cur_frame_ = -1;
};

// `name=value` operands (of instructions and macro calls): the name's node (kNone when
// positional) and the value.
inline uint32_t operand_name(const Sources& src, const Item& op) {
  if (op.rhs == kNone) return kNone;
  if (src.node(op.lhs).kind != NodeKind::Name)
    src.fail_at(op.lhs, "expected an operand name before '='");
  return op.lhs;
}
inline uint32_t operand_value(const Item& op) { return op.rhs != kNone ? op.rhs : op.lhs; }

} // namespace nisa::nasm
