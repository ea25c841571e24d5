// Loading a source unit: parsing it and pairing its blocks; expansion frames.
#include "asm/sources.h"

#include <fmt/format.h>

#include <algorithm>

#include "asm/assembler_util.h"
#include "asm/reporter.h"

namespace nisa::nasm {
using namespace detail;

uint32_t Sources::load(const std::string& display, std::string text) {
  const Stopwatch watch(parse_time);
  const uint32_t id = static_cast<uint32_t>(units_.size());
  mod_.files.push_back(display);
  units_.emplace_back();
  Unit& unit = units_.back();
  unit.parsed = parse_source(display, std::move(text));
  for (const auto& e : unit.parsed.errors) {
    rep_.report(Loc{id, e.line, e.col, cur_frame_}, e.message);
    unit.ok = false;
  }
  if (!unit.ok) return id;
  match_blocks(unit, id);
  // What expanding each statement lexes again: its bytes from its first token to the end of
  // its last one (AsmOptions::max_lexed_bytes).
  const ParsedFile& f = unit.parsed;
  unit.bytes.resize(f.stmts.size());
  for (size_t i = 0; i < f.stmts.size(); ++i) {
    const Stmt& s = f.stmts[i];
    unit.bytes[i] = std::max(s.end, s.first + 1) - s.first;
  }
  return id;
}

// Pairs every block opener with its closer once per file, so that expansion can jump over
// bodies and unterminated or stray blocks are reported even when never executed.
void Sources::match_blocks(Unit& u, uint32_t id) {
  const std::vector<Stmt>& lines = u.parsed.stmts;
  const size_t n = lines.size();
  u.close.assign(n, 0);
  u.branches.assign(n, {});
  struct Open {
    size_t line;
    const char* what;
    const char* closer;
    bool seen_else = false;
  };
  std::vector<Open> stack;
  auto tok_loc = [&](uint32_t t) {
    const auto [line, col] = u.parsed.position(t);
    return Loc{id, line, col, cur_frame_};
  };
  auto line_of = [&](size_t i) { return u.parsed.line_of(lines[i].first); };
  auto here = [&](size_t i) { return tok_loc(lines[i].tok); };
  for (size_t i = 0; i < n; ++i) {
    const StmtKind k = lines[i].kind;
    if (k == StmtKind::If)
      stack.push_back({i, ".if", ".endif"});
    else if (k == StmtKind::For)
      stack.push_back({i, ".for", ".endfor"});
    else if (k == StmtKind::Macro)
      stack.push_back({i, ".macro", ".endm"});
    else {
      const bool is_elif = k == StmtKind::Elif, is_else = k == StmtKind::Else;
      const char* closer = k == StmtKind::Endif    ? ".endif"
                           : k == StmtKind::Endfor ? ".endfor"
                           : k == StmtKind::Endm   ? ".endm"
                                                   : nullptr;
      if (!is_elif && !is_else && !closer) continue;
      const char* word = is_elif ? ".elif" : is_else ? ".else" : closer;
      if (stack.empty()) {
        rep_.report(here(i), fmt::format("'{}' without a matching opening directive", word));
        u.ok = false;
        continue;
      }
      Open& top = stack.back();
      if (is_elif || is_else) {
        if (std::string_view(top.what) != ".if") {
          rep_.report(here(i), fmt::format("'{}' inside '{}' (opened at line {}), not inside .if",
                                           word, top.what, line_of(top.line)));
          u.ok = false;
        } else if (top.seen_else) {
          rep_.report(here(i), fmt::format("'{}' after '.else'", word));
          u.ok = false;
        } else {
          top.seen_else = is_else;
          u.branches[top.line].push_back(i);
        }
        continue;
      }
      if (std::string_view(top.closer) != closer) {
        rep_.report(here(i), fmt::format("'{}' closes '{}' opened at line {}; expected '{}'",
                                         closer, top.what, line_of(top.line), top.closer));
        u.ok = false;
        stack.pop_back();
        continue;
      }
      u.close[top.line] = i;
      stack.pop_back();
    }
  }
  for (const auto& o : stack) {
    // A misspelt closer inside the block (`.endfro`) is why it is unterminated: say so first.
    const size_t end = n;
    for (size_t i = o.line + 1; i < end; ++i)
      if (lines[i].kind == StmtKind::UnknownDirective) {
        const std::string_view d = u.parsed.text(lines[i].tok);
        if (!did_you_mean(d, {o.closer}).empty())
          rep_.report(here(i),
                      fmt::format("unknown directive '{}'; did you mean '{}' (closing '{}' at "
                                  "line {})?",
                                  d, o.closer, o.what, line_of(o.line)));
      }
    rep_.report(here(o.line), fmt::format("unterminated '{}': no '{}' before the end of the file",
                                          o.what, o.closer));
    u.ok = false;
  }
}

int32_t Sources::push_frame(ExpansionFrame::Kind k, std::string what, Loc at) {
  ExpansionFrame f;
  f.kind = k;
  f.what = std::move(what);
  f.file = at.file;
  f.line = at.line;
  f.col = at.col;
  f.parent = at.frame;
  // 4x at a time: a loop iteration or macro call is a frame, each growth moves them all.
  if (mod_.frames.size() == mod_.frames.capacity())
    mod_.frames.reserve(std::max<size_t>(64, mod_.frames.size() * 4));
  mod_.frames.push_back(std::move(f));
  return static_cast<int32_t>(mod_.frames.size() - 1);
}

} // namespace nisa::nasm
