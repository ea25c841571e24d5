// The expansion pass: statements are executed in order; blocks choose and repeat lines, macros
// expand, .include reads another unit; declarations, instructions and labels go to their parts.
#include "asm/expander.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <boost/container/small_vector.hpp>
#include <charconv>
#include <filesystem>
#include <optional>

#include "asm/assembler_util.h"
#include "asm/declarations.h"
#include "asm/eval.h"
#include "asm/instructions.h"
#include "asm/labels.h"
#include "asm/reporter.h"
#include "asm/symbols.h"
#include "isa/object.h"

namespace nisa::nasm {
namespace fs = std::filesystem;
using namespace detail;

void Expander::note_read(const std::string& path, std::string_view text) {
  read_files_.emplace_back(path,
                           fnv1a64({reinterpret_cast<const uint8_t*>(text.data()), text.size()}));
}

void Expander::exec_range(uint32_t unit, size_t begin, size_t end) {
  const uint32_t saved = src_.cur_unit();
  src_.enter(unit);
  for (size_t i = begin; i < end; ++i) exec_line(unit, i);
  src_.enter(saved);
}

Expander::LineInfo& Expander::line_info(const Stmt& s) {
  const auto& stmts = src_.file().stmts;
  return line_info_.row(src_.cur_unit(), stmts.size())[&s - stmts.data()];
}

void Expander::exec_line(uint32_t unit, size_t& i) {
  const Stmt& s = src_.file().stmts[i];
  if (++steps_ > opts_.max_steps) rep_.count_step(src_.loc(s.first));
  // count_lexed, with the location only computed when it is reported (a line's position is a
  // search of the line table and a scan of the line, per statement executed).
  lexed_ += src_.unit(unit).bytes[i];
  if (lexed_ > uint64_t(opts_.max_lexed_bytes)) rep_.count_lexed(src_.loc(s.first));
  try {
    if (s.label != kNone) labels_.define(s.label);
    if (s.kind != StmtKind::None) exec_stmt(unit, i, s);
  } catch (const StmtError& e) {
    if (!e.message.empty()) rep_.report(e.loc, e.message); // empty: already reported
  }
}

void Expander::exec_stmt(uint32_t unit, size_t& i, const Stmt& s) {
  switch (s.kind) {
  case StmtKind::Inst: decls_.lock_target(); return insts_.assemble(s);
  case StmtKind::Assign: try { return decls_.assign(s);
    } catch (const StmtError&) {
      sym_.mark_failed(std::string(src_.text(s.name))); // its uses are not errors of their own
      throw;
    }
  case StmtKind::If: return exec_if(unit, i);
  case StmtKind::For: return exec_for(unit, i, s);
  case StmtKind::MacroCall: return exec_macro_call(s);
  case StmtKind::Tensor: try { return decls_.tensor(s);
    } catch (const StmtError&) {
      sym_.mark_failed(std::string(src_.text(s.name))); // later uses are not errors of their own
      throw;
    }
  case StmtKind::Macro: return exec_macro_def(unit, i, s);
  case StmtKind::Include: return exec_include(s);
  case StmtKind::Error: fail(src_.loc(s.tok), unquote(src_.text(s.word)));
  case StmtKind::Kernel: mod_.kernel = src_.text(s.name); return;
  case StmtKind::Target: return decls_.target(s);
  case StmtKind::View: try { return decls_.view(s);
    } catch (const StmtError&) {
      sym_.mark_failed(std::string(src_.text(s.name)));
      throw;
    }
  case StmtKind::Sem: return decls_.sem(s);
  case StmtKind::Group: return decls_.group(s);
  case StmtKind::Launch: return decls_.launch(s);
  case StmtKind::UnknownDirective: return exec_unknown_directive(s);
  default:
    // .elif/.else/.endif/.endfor/.endm reached directly: their blocks are handled by the opener.
    return;
  }
}

void Expander::exec_macro_def(uint32_t unit, size_t& i, const Stmt& s) {
  const std::string name(src_.text(s.name));
  sym_.declare(name, src_.loc(s.name), "macro");
  Macro m{name, unit, i + 1, src_.unit(unit).close[i], s.items, s.nitems, src_.loc(s.name), {}, {}};
  std::vector<std::string_view> seen;
  for (uint32_t k = 0; k < s.nitems; ++k) {
    const uint32_t t = src_.file().items[s.items + k].tok;
    const std::string_view pn = src_.text(t);
    if (std::find(seen.begin(), seen.end(), pn) != seen.end())
      fail(src_.loc(t), fmt::format("duplicate parameter '{}' of macro '{}'", pn, name));
    seen.push_back(pn);
    m.param_names.emplace_back(pn);
    m.param_ids.push_back(sym_.intern(pn));
  }
  macros_[name] = std::move(m);
  i = src_.unit(unit).close[i];
}

void Expander::exec_unknown_directive(const Stmt& s) {
  // Never a keyword: those are tokens of their own (asm/token.h), so the parser matched them.
  std::vector<std::string> directives;
  for (auto k = static_cast<int>(Tok::KwKernel); k <= static_cast<int>(Tok::KwLnc); ++k)
    directives.emplace_back(tok_spelling(static_cast<Tok>(k)));
  const std::string_view d = src_.text(s.tok);
  fail(src_.loc(s.tok), fmt::format("unknown directive '{}'{}", d, did_you_mean(d, directives)));
}

void Expander::exec_if(uint32_t unit, size_t& i) {
  Unit& u = src_.unit(unit);
  const size_t open = i, close = u.close[open];
  const std::vector<size_t>& mid = u.branches[open]; // .elif/.else lines
  i = close;
  // Branch b runs from its head (the .if, then each .elif/.else) to the next head or .endif.
  for (size_t b = 0; b <= mid.size(); ++b) {
    const size_t head = b == 0 ? open : mid[b - 1], next = b < mid.size() ? mid[b] : close;
    const Stmt& s = src_.file().stmts[head];
    bool take = true;
    if (s.kind == StmtKind::If || s.kind == StmtKind::Elif) {
      if (int64_t x; ev_.try_int(s.e0, x)) { // what eval() gives an integer condition
        take = x != 0;
      } else {
        try {
          Value v = ev_.eval(s.e0);
          if (!v.is_num())
            src_.fail_at(s.e0, fmt::format("condition must be a number, not '{}'", v.str()));
          take = v.num() != 0;
        } catch (const StmtError& e) {
          rep_.report(e.loc, e.message);
          take = false;
        }
      }
    }
    if (take) {
      exec_range(unit, head + 1, next);
      return;
    }
  }
}

void Expander::exec_for(uint32_t unit, size_t& i, const Stmt& s) {
  const size_t open = i, close = src_.unit(unit).close[open];
  i = close;
  LineInfo& li = line_info(s);
  if (li.for_var == UINT32_MAX) {
    if (src_.text(s.word) != "in") fail(src_.loc(s.word), "expected 'in' in '.for VAR in A .. B'");
    if (s.word2 != kNone && src_.text(s.word2) != "step")
      fail(src_.loc(s.word2), fmt::format("expected 'step', not '{}'", src_.text(s.word2)));
  }
  const int64_t from = ev_.eval_int(s.e0, "loop start"), to = ev_.eval_int(s.e1, "loop end");
  const int64_t step = s.e2 != kNone ? ev_.eval_int(s.e2, "loop step") : 1;
  if (step == 0) src_.fail_at(s.e2, "loop step cannot be zero");
  // The count in 128 bits: `to - from` and the counter itself may not fit in int64.
  const __int128 span = step > 0 ? __int128(to) - from : __int128(from) - to;
  const __int128 mag = step > 0 ? __int128(step) : -__int128(step);
  const __int128 n = span <= 0 ? 0 : (span + mag - 1) / mag;
  const Loc at{src_.cur_unit(), s.line, s.col, src_.frame()}; // src_.loc(s.tok), as parsed
  if (n > static_cast<__int128>(opts_.max_iterations))
    fail(at, fmt::format(".for of {} iterations exceeds the limit of {}",
                         int64_t(std::min<__int128>(n, INT64_MAX)), opts_.max_iterations));
  // The counter's last value is from + (n - 1) * step; one more step must not overflow either
  // (docs/asm.md: integer overflow is an error).
  if (n > 0 && (__int128(from) + n * __int128(step) > INT64_MAX ||
                __int128(from) + n * __int128(step) < INT64_MIN))
    fail(at, fmt::format("integer overflow: the .for counter passes {} after {} iterations",
                         step > 0 ? "INT64_MAX" : "INT64_MIN", int64_t(n)));
  const std::string_view var = src_.text(s.name);
  if (li.for_var == UINT32_MAX) li.for_var = sym_.intern(var);
  const uint32_t var_id = li.for_var;
  const int32_t outer = src_.frame();
  for (int64_t v = from; step > 0 ? v < to : v > to; v += step) {
    if (++steps_ > opts_.max_steps) rep_.count_step(at);
    // "var=v", as fmt::format("{}={}") spells it, without its machinery per iteration.
    // Sized exactly: a short one stays in the string (no allocation per iteration).
    char num[24];
    const size_t digits = size_t(std::to_chars(num, num + sizeof num, v).ptr - num);
    std::string what(var.size() + 1 + digits, '=');
    std::copy(var.begin(), var.end(), what.begin());
    std::copy(num, num + digits, what.begin() + long(var.size()) + 1);
    src_.set_frame(src_.push_frame(ExpansionFrame::ForIter, std::move(what), at));
    const size_t base = sym_.depth();
    sym_.push_scope();
    sym_.add_local_int(var_id, var, v, Var::Loop, at);
    try {
      exec_range(unit, open + 1, close);
    } catch (...) {
      sym_.pop_scopes(base);
      src_.set_frame(outer);
      throw;
    }
    sym_.pop_scopes(base);
    src_.set_frame(outer);
  }
}

const Expander::Macro* Expander::find_macro(std::string_view name, const Loc& at) const {
  auto it = macros_.find(name);
  if (it != macros_.end()) return &it->second;
  if (!find_all_by_mnemonic(name).empty())
    fail(at, fmt::format("instruction '{}' needs an engine prefix, e.g. '{}.{}'", name,
                         name_of(static_cast<Engine>(
                             std::countr_zero(find_all_by_mnemonic(name)[0]->engines))),
                         name));
  std::vector<std::string> cands;
  for (const auto& [n, m] : macros_) cands.push_back(n);
  fail(at, fmt::format("unknown macro '{}'{}", name, did_you_mean(name, cands)));
}

void Expander::exec_macro_call(const Stmt& s) {
  // The macro's name and where it is: the statement's first token, as parsed.
  const std::string_view name = std::string_view(src_.file().src).substr(s.tok, s.tok_len);
  const Loc at{src_.cur_unit(), s.line, s.col, src_.frame()};
  LineInfo& li = line_info(s);
  if (!li.macro) li.macro = find_macro(name, at);
  const Macro& m = *li.macro;
  // The macro's parameters are Items of the unit that defines it.
  const ParsedFile& def = src_.unit(m.unit).parsed;
  const Item* params = def.items.data() + m.params;
  // The parameter list, for messages only.
  auto pnames = [&] {
    std::vector<std::string> v;
    for (uint32_t k = 0; k < m.nparams; ++k)
      v.push_back(std::string(def.text(params[k].tok)) + (params[k].rhs != kNone ? "=..." : ""));
    return join(v);
  };
  // The arguments by parameter index (a macro has a few parameters: no map): most are
  // integers, kept as such (what eval() would give: Value::of_int of what try_int gives), the
  // others as the Var eval() gives.
  enum ArgState : uint8_t { None, IntArg, VarArg };
  boost::container::small_vector<uint8_t, 8> state(m.nparams, None);
  boost::container::small_vector<int64_t, 8> ints(m.nparams);
  boost::container::small_vector<std::optional<Var>, 8> args(m.nparams);
  size_t pos = 0;
  bool named = false;
  for (uint32_t k = 0; k < s.nitems; ++k) {
    const Item& op = src_.file().items[s.items + k];
    size_t pk = 0;
    if (const uint32_t ntok = operand_name(src_, op); ntok != kNone) {
      named = true;
      const std::string_view pn = src_.file().text(src_.node(ntok));
      const auto p = std::find(m.param_names.begin(), m.param_names.end(), pn);
      if (p == m.param_names.end()) {
        std::vector<std::string> c;
        for (uint32_t j = 0; j < m.nparams; ++j) c.emplace_back(def.text(params[j].tok));
        src_.fail_at(op.lhs, fmt::format("macro '{}' has no parameter '{}'{}", name, pn,
                                         did_you_mean(pn, c)));
      }
      pk = size_t(p - m.param_names.begin());
      if (state[pk] != None) src_.fail_at(op.lhs, fmt::format("argument '{}' given twice", pn));
    } else {
      if (named) fail(src_.loc(op.tok), "positional argument after a named one");
      if (pos >= m.nparams)
        fail(src_.loc(op.tok), fmt::format("macro '{}' takes {} argument(s) ({}), got more", name,
                                           m.nparams, pnames()));
      pk = pos++;
    }
    // (an argument's Loc is never shown)
    if (const uint32_t ve = operand_value(op); ev_.try_int(ve, ints[pk])) {
      state[pk] = IntArg;
    } else {
      args[pk] = Var{ev_.eval(ve), Var::Arg, {}};
      state[pk] = VarArg;
    }
  }
  if (++depth_ > opts_.max_depth) {
    --depth_;
    rep_.report(at, fmt::format("expansion depth limit ({}) exceeded in macro '{}' (recursive "
                                "expansion?)",
                                opts_.max_depth, name));
    throw Abort{};
  }
  const int32_t outer = src_.frame();
  const uint32_t caller = src_.cur_unit();
  src_.set_frame(src_.push_frame(ExpansionFrame::Macro, m.name, at));
  sym_.enter_macro();
  sym_.push_scope();
  auto restore = [&] {
    sym_.leave_macro();
    src_.set_frame(outer);
    src_.enter(caller);
    --depth_;
  };
  try {
    // Defaults are evaluated in the macro's scope (and file), so they may use earlier
    // parameters.
    src_.enter(m.unit);
    for (uint32_t k = 0; k < m.nparams; ++k) {
      const std::string_view pn = m.param_names[k];
      if (state[k] == IntArg) {
        sym_.add_local_int(m.param_ids[k], pn, ints[k], Var::Arg, {});
      } else if (state[k] == VarArg) {
        sym_.add_local(m.param_ids[k], pn, std::move(*args[k]));
      } else if (params[k].rhs != kNone) {
        Var dv{ev_.eval(params[k].rhs), Var::Arg, src_.loc(params[k].tok)};
        sym_.add_local(m.param_ids[k], pn, std::move(dv));
      } else {
        src_.set_frame(outer);
        src_.enter(caller);
        fail(at, fmt::format("missing argument '{}' of macro '{}' ({})", pn, name, pnames()));
      }
    }
    exec_range(m.unit, m.begin, m.end);
  } catch (...) {
    restore();
    throw;
  }
  restore();
}

void Expander::exec_include(const Stmt& s) {
  const std::string rel = unquote(src_.text(s.word));
  std::vector<fs::path> cands;
  const fs::path here = fs::path(src_.file().name).parent_path();
  cands.push_back(here / rel);
  for (const auto& d : opts_.include_dirs) cands.push_back(fs::path(d) / rel);
  cands.push_back(rel);
  // The first candidate that exists is the file; it is read and parsed once (unit_by_path_),
  // however often it is included.
  std::string path, canon;
  for (const auto& c : cands) {
    std::error_code ec;
    if (fs::exists(c, ec)) {
      path = c.lexically_normal().string();
      canon = fs::weakly_canonical(path, ec).string();
      break;
    }
    absent_files_.push_back(c.string());
  }
  if (path.empty())
    fail(src_.loc(s.word),
         fmt::format("cannot find include file '{}' (searched: {}{})", rel,
                     here.empty() ? "." : here.string(),
                     opts_.include_dirs.empty() ? "" : ", " + join(opts_.include_dirs)));
  if (std::find(include_stack_.begin(), include_stack_.end(), canon) != include_stack_.end()) {
    rep_.report(src_.loc(s.word),
                fmt::format("include cycle: '{}' is already being included", rel));
    throw Abort{};
  }
  if (depth_ + 1 > opts_.max_depth) fail(src_.loc(s.tok), "include depth limit exceeded");
  uint32_t unit;
  auto cached = unit_by_path_.find(canon);
  const int32_t outer = src_.frame();
  src_.set_frame(src_.push_frame(ExpansionFrame::Include, path, src_.loc(s.tok)));
  if (cached != unit_by_path_.end()) {
    unit = cached->second;
  } else {
    std::string content;
    if (auto why = read_text(path, content)) {
      src_.set_frame(outer);
      fail(src_.loc(s.word), fmt::format("cannot include '{}': {} {}", rel, path, *why));
    }
    count_lexed(content.size(), src_.loc(s.word));
    note_read(path, content);
    unit = src_.load(path, std::move(content));
    unit_by_path_[canon] = unit;
  }
  if (!src_.unit(unit).ok) {
    src_.set_frame(outer);
    return;
  }
  include_stack_.push_back(canon);
  ++depth_;
  try {
    exec_range(unit, 0, src_.unit(unit).parsed.stmts.size());
  } catch (...) {
    include_stack_.pop_back();
    --depth_;
    src_.set_frame(outer);
    throw;
  }
  include_stack_.pop_back();
  --depth_;
  src_.set_frame(outer);
}

} // namespace nisa::nasm
