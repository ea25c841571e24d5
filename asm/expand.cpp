// The assembler's expansion pass: statements are executed in order, directives define
// symbols, tensors, views, semaphores and groups, macros and .for loops expand, .include reads
// another unit, and instructions are lowered (operands.cpp) into the module's streams.
#include "asm/assembler.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/container/small_vector.hpp>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include "isa/encode.h"
#include "isa/exec_kind.h"
#include "isa/limits.h"
#include "isa/quote.h"

#include "asm/assembler_util.h"

namespace nisa::nasm {
namespace fs = std::filesystem;
using namespace detail;

// ---- expansion --------------------------------------------------------------------------------

void Assembler::exec_range(uint32_t unit, size_t begin, size_t end) {
  const uint32_t saved = cur_unit_;
  enter_unit(unit);
  for (size_t i = begin; i < end; ++i) exec_line(unit, i);
  enter_unit(saved);
}

void Assembler::exec_line(uint32_t unit, size_t& i) {
  const Stmt& s = file_->stmts[i];
  if (++steps_ > opts_.max_steps) count_step(loc(s.first));
  try {
    if (s.label != kNone) define_label(s.label);
    if (s.kind != StmtKind::None) exec_stmt(unit, i, s);
  } catch (const StmtError& e) {
    if (!e.message.empty()) report(e.loc, e.message); // empty: already reported
  }
}

void Assembler::exec_stmt(uint32_t unit, size_t& i, const Stmt& s) {
  switch (s.kind) {
  case StmtKind::Inst: return exec_inst(s);
  case StmtKind::Assign: return exec_assign(s);
  case StmtKind::If: return exec_if(unit, i);
  case StmtKind::For: return exec_for(unit, i, s);
  case StmtKind::MacroCall: return exec_macro_call(s);
  case StmtKind::Tensor: try { return exec_tensor(s);
    } catch (const StmtError&) {
      failed_decls_.insert(std::string(text(s.name))); // later uses are not errors of their own
      throw;
    }
  case StmtKind::Macro: return exec_macro_def(unit, i, s);
  case StmtKind::Include: return exec_include(s);
  case StmtKind::Error: fail(loc(s.tok), unquote(text(s.word)));
  case StmtKind::Kernel: mod_.kernel = text(s.name); return;
  case StmtKind::Target: return exec_target(s);
  case StmtKind::View: try { return exec_view(s);
    } catch (const StmtError&) {
      failed_decls_.insert(std::string(text(s.name)));
      throw;
    }
  case StmtKind::Sem: return exec_sem(s);
  case StmtKind::Group: return exec_group(s);
  case StmtKind::UnknownDirective: return exec_unknown_directive(s);
  default:
    // .elif/.else/.endif/.endfor/.endm reached directly: their blocks are handled by the opener.
    return;
  }
}

void Assembler::exec_macro_def(uint32_t unit, size_t& i, const Stmt& s) {
  const std::string name(text(s.name));
  declare(name, loc(s.name), "macro");
  Macro m{name, unit, i + 1, units_[unit].close[i], s.items, s.nitems, loc(s.name), {}};
  std::vector<std::string_view> seen;
  for (uint32_t k = 0; k < s.nitems; ++k) {
    const uint32_t t = file().items[s.items + k].tok;
    const std::string_view pn = text(t);
    if (std::find(seen.begin(), seen.end(), pn) != seen.end())
      fail(loc(t), fmt::format("duplicate parameter '{}' of macro '{}'", pn, name));
    seen.push_back(pn);
    m.param_names.emplace_back(pn);
  }
  macros_[name] = std::move(m);
  i = units_[unit].close[i];
}

void Assembler::exec_unknown_directive(const Stmt& s) {
  // Never a keyword: those are tokens of their own (asm/token.h), so the parser matched them.
  std::vector<std::string> directives;
  for (auto k = static_cast<int>(Tok::KwKernel); k <= static_cast<int>(Tok::KwGroup); ++k)
    directives.emplace_back(tok_spelling(static_cast<Tok>(k)));
  const std::string_view d = text(s.tok);
  fail(loc(s.tok), fmt::format("unknown directive '{}'{}", d, did_you_mean(d, directives)));
}

void Assembler::exec_if(uint32_t unit, size_t& i) {
  Unit& u = units_[unit];
  const size_t open = i, close = u.close[open];
  std::vector<size_t> heads{open};
  heads.insert(heads.end(), u.branches[open].begin(), u.branches[open].end());
  heads.push_back(close);
  i = close;
  for (size_t b = 0; b + 1 < heads.size(); ++b) {
    const Stmt& s = file_->stmts[heads[b]];
    bool take = true;
    if (s.kind == StmtKind::If || s.kind == StmtKind::Elif) {
      try {
        Value v = eval(s.e0);
        if (!v.is_num())
          fail_at(s.e0, fmt::format("condition must be a number, not '{}'", v.str()));
        take = v.num() != 0;
      } catch (const StmtError& e) {
        report(e.loc, e.message);
        take = false;
      }
    }
    if (take) {
      exec_range(unit, heads[b] + 1, heads[b + 1]);
      return;
    }
  }
}

void Assembler::exec_for(uint32_t unit, size_t& i, const Stmt& s) {
  const size_t open = i, close = units_[unit].close[open];
  i = close;
  if (text(s.word) != "in") fail(loc(s.word), "expected 'in' in '.for VAR in A .. B'");
  if (s.word2 != kNone && text(s.word2) != "step")
    fail(loc(s.word2), fmt::format("expected 'step', not '{}'", text(s.word2)));
  const int64_t from = eval_int(s.e0, "loop start"), to = eval_int(s.e1, "loop end");
  const int64_t step = s.e2 != kNone ? eval_int(s.e2, "loop step") : 1;
  if (step == 0) fail_at(s.e2, "loop step cannot be zero");
  // The count in 128 bits: `to - from` and the counter itself may not fit in int64.
  const __int128 span = step > 0 ? __int128(to) - from : __int128(from) - to;
  const __int128 mag = step > 0 ? __int128(step) : -__int128(step);
  const __int128 n = span <= 0 ? 0 : (span + mag - 1) / mag;
  const Loc at = loc(s.tok);
  if (n > static_cast<__int128>(opts_.max_iterations))
    fail(at, fmt::format(".for of {} iterations exceeds the limit of {}",
                         int64_t(std::min<__int128>(n, INT64_MAX)), opts_.max_iterations));
  // The counter's last value is from + (n - 1) * step; one more step must not overflow either
  // (docs/asm.md: integer overflow is an error).
  if (n > 0 && (__int128(from) + n * __int128(step) > INT64_MAX ||
                __int128(from) + n * __int128(step) < INT64_MIN))
    fail(at, fmt::format("integer overflow: the .for counter passes {} after {} iterations",
                         step > 0 ? "INT64_MAX" : "INT64_MIN", int64_t(n)));
  const std::string var(text(s.name));
  const int32_t outer = cur_frame_;
  for (int64_t v = from; step > 0 ? v < to : v > to; v += step) {
    if (++steps_ > opts_.max_steps) count_step(at);
    cur_frame_ = push_frame(ExpansionFrame::ForIter, fmt::format("{}={}", var, v), at);
    const size_t base = nlocals_;
    push_scope().vars.emplace_back(var, Var{Value::of_int(v), Var::Loop, at});
    try {
      exec_range(unit, open + 1, close);
    } catch (...) {
      pop_scopes(base);
      cur_frame_ = outer;
      throw;
    }
    pop_scopes(base);
    cur_frame_ = outer;
  }
}

void Assembler::exec_macro_call(const Stmt& s) {
  const std::string name(text(s.tok));
  const Loc at = loc(s.tok);
  auto it = macros_.find(name);
  if (it == macros_.end()) {
    if (!find_all_by_mnemonic(name).empty())
      fail(at, fmt::format("instruction '{}' needs an engine prefix, e.g. '{}.{}'", name,
                           name_of(static_cast<Engine>(
                               std::countr_zero(find_all_by_mnemonic(name)[0]->engines))),
                           name));
    std::vector<std::string> cands;
    for (const auto& [n, m] : macros_) cands.push_back(n);
    fail(at, fmt::format("unknown macro '{}'{}", name, did_you_mean(name, cands)));
  }
  const Macro& m = it->second;
  // The macro's parameters are Items of the unit that defines it.
  const ParsedFile& def = units_[m.unit].parsed;
  const Item* params = def.items.data() + m.params;
  // The parameter list, for messages only.
  auto pnames = [&] {
    std::vector<std::string> v;
    for (uint32_t k = 0; k < m.nparams; ++k)
      v.push_back(std::string(def.text(params[k].tok)) + (params[k].rhs != kNone ? "=..." : ""));
    return join(v);
  };
  // The arguments by parameter index (a macro has a few parameters: no map).
  boost::container::small_vector<std::optional<Var>, 8> args(m.nparams);
  size_t pos = 0;
  bool named = false;
  for (uint32_t k = 0; k < s.nitems; ++k) {
    const Item& op = file().items[s.items + k];
    size_t pk = 0;
    if (const uint32_t ntok = operand_name(op); ntok != kNone) {
      named = true;
      const std::string_view pn = file().text(node(ntok));
      const auto p = std::find(m.param_names.begin(), m.param_names.end(), pn);
      if (p == m.param_names.end()) {
        std::vector<std::string> c;
        for (uint32_t j = 0; j < m.nparams; ++j) c.emplace_back(def.text(params[j].tok));
        fail_at(op.lhs,
                fmt::format("macro '{}' has no parameter '{}'{}", name, pn, did_you_mean(pn, c)));
      }
      pk = size_t(p - m.param_names.begin());
      if (args[pk]) fail_at(op.lhs, fmt::format("argument '{}' given twice", pn));
    } else {
      if (named) fail(loc(op.tok), "positional argument after a named one");
      if (pos >= m.nparams)
        fail(loc(op.tok), fmt::format("macro '{}' takes {} argument(s) ({}), got more", name,
                                      m.nparams, pnames()));
      pk = pos++;
    }
    args[pk] = Var{eval(operand_value(op)), Var::Arg, {}}; // (an argument's Loc is never shown)
  }
  if (++depth_ > opts_.max_depth) {
    --depth_;
    report(at, fmt::format("expansion depth limit ({}) exceeded in macro '{}' (recursive "
                           "expansion?)",
                           opts_.max_depth, name));
    throw Abort{};
  }
  const int32_t outer = cur_frame_;
  const uint32_t caller = cur_unit_;
  cur_frame_ = push_frame(ExpansionFrame::Macro, name, at);
  macro_base_.push_back(nlocals_);
  Scope& scope = push_scope();
  auto restore = [&] {
    pop_scopes(macro_base_.back());
    macro_base_.pop_back();
    cur_frame_ = outer;
    enter_unit(caller);
    --depth_;
  };
  try {
    // Defaults are evaluated in the macro's scope (and file), so they may use earlier
    // parameters.
    enter_unit(m.unit);
    for (uint32_t k = 0; k < m.nparams; ++k) {
      const std::string_view pn = m.param_names[k];
      if (args[k]) {
        scope.vars.emplace_back(pn, std::move(*args[k]));
      } else if (params[k].rhs != kNone) {
        Var dv{eval(params[k].rhs), Var::Arg, loc(params[k].tok)};
        scope.vars.emplace_back(pn, std::move(dv));
      } else {
        cur_frame_ = outer;
        enter_unit(caller);
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

void Assembler::exec_include(const Stmt& s) {
  const std::string rel = unquote(text(s.word));
  std::vector<fs::path> cands;
  const fs::path here = fs::path(file().name).parent_path();
  cands.push_back(here / rel);
  for (const auto& d : opts_.include_dirs) cands.push_back(fs::path(d) / rel);
  cands.push_back(rel);
  std::string path, content;
  for (const auto& c : cands)
    if (read_text(c.string(), content)) {
      path = c.lexically_normal().string();
      break;
    }
  if (path.empty())
    fail(loc(s.word),
         fmt::format("cannot find include file '{}' (searched: {}{})", rel,
                     here.empty() ? "." : here.string(),
                     opts_.include_dirs.empty() ? "" : ", " + join(opts_.include_dirs)));
  std::error_code ec;
  const std::string canon = fs::weakly_canonical(path, ec).string();
  if (std::find(include_stack_.begin(), include_stack_.end(), canon) != include_stack_.end()) {
    report(loc(s.word), fmt::format("include cycle: '{}' is already being included", rel));
    throw Abort{};
  }
  if (depth_ + 1 > opts_.max_depth) fail(loc(s.tok), "include depth limit exceeded");
  uint32_t unit;
  auto cached = unit_by_path_.find(canon);
  const int32_t outer = cur_frame_;
  cur_frame_ = push_frame(ExpansionFrame::Include, path, loc(s.tok));
  if (cached != unit_by_path_.end()) {
    unit = cached->second;
  } else {
    unit = load_unit(path, std::move(content));
    unit_by_path_[canon] = unit;
  }
  if (!units_[unit].ok) {
    cur_frame_ = outer;
    return;
  }
  include_stack_.push_back(canon);
  ++depth_;
  try {
    exec_range(unit, 0, units_[unit].parsed.stmts.size());
  } catch (...) {
    include_stack_.pop_back();
    --depth_;
    cur_frame_ = outer;
    throw;
  }
  include_stack_.pop_back();
  --depth_;
  cur_frame_ = outer;
}

void Assembler::exec_assign(const Stmt& s) {
  const Tok kind = file().token(s.tok).kind;
  const std::string_view name = text(s.name);
  const Loc at = loc(s.name);
  if (kind == Tok::KwSet) {
    for (size_t k = nlocals_; k-- > macro_base_.back();) {
      if (Var* it = locals_[k].find(name)) {
        if (it->kind == Var::Loop)
          fail(at, fmt::format("cannot assign the loop variable '{}'", name));
        it->v = eval(s.e0);
        return;
      }
    }
    auto it = globals_.find(name);
    if (it != globals_.end()) {
      if (it->second.kind == Var::Predefined)
        fail(at, fmt::format("'{}' is predefined from the target; .set cannot change it", name));
      if (it->second.kind != Var::Set)
        fail(at, fmt::format("'{}' is a constant ({}); .set cannot change it", name,
                             it->second.kind == Var::Param ? ".param" : ".equ"));
      it->second.v = eval(s.e0);
      return;
    }
    Value v = eval(s.e0);
    declare(name, at, ".set");
    globals_[std::string(name)] = Var{v, Var::Set, at};
    return;
  }
  const bool param = kind == Tok::KwParam;
  Value v;
  auto d = defines_.find(std::string(name));
  if (param && d != defines_.end()) {
    v = d->second.first;
    d->second.second = true;
  } else {
    v = eval(s.e0);
  }
  declare(name, at, param ? ".param" : ".equ");
  globals_[std::string(name)] = Var{v, param ? Var::Param : Var::Equ, at};
  if (param) mod_.params.emplace_back(name, v.str());
}

void Assembler::exec_target(const Stmt& s) {
  const std::string_view n = text(s.name);
  auto t = enum_parse(EnumType::Target, n);
  if (!t)
    fail(loc(s.name),
         fmt::format("unknown target '{}'{}", n, did_you_mean(n, enum_names(EnumType::Target))));
  if (target_set_by_option_) return; // --target wins
  if (target_locked_)
    fail(loc(s.tok), ".target must come before tensor declarations and instructions");
  mod_.target = static_cast<Target>(*t);
  alloc_ = std::make_unique<Allocator>(mod_.target);
  set_target_symbols();
}

void Assembler::set_target_symbols() {
  globals_["TARGET"] = Var{Value::of_name(std::string(name_of(mod_.target))), Var::Predefined, {}};
  globals_["GEN"] = Var{Value::of_int(static_cast<int>(mod_.target)), Var::Predefined, {}};
}

DType Assembler::eval_dtype(uint32_t tok) {
  std::string_view n = text(tok);
  if (const Var* v = lookup(n); v && v->v.kind == Value::Name) n = v->v.s;
  auto dt = parse_dtype(n);
  if (!dt) {
    std::vector<std::string> names;
    for (const auto& i : kDTypeInfo) names.emplace_back(i.name);
    fail(loc(tok), fmt::format("unknown dtype '{}'{}", n, did_you_mean(n, names)));
  }
  return *dt;
}

void Assembler::exec_tensor(const Stmt& s) {
  target_locked_ = true;
  TensorDecl t;
  t.name = text(s.name);
  const Tok kind = file().token(s.tok).kind;
  t.space = kind == Tok::KwHbm    ? MemSpace::hbm
            : kind == Tok::KwSbuf ? MemSpace::sbuf
                                  : MemSpace::psum;
  t.dtype = eval_dtype(s.word2);
  if (s.nitems == 0) fail(loc(s.tok), "a tensor needs a shape, e.g. fp32[128, 512]");
  const Item* shape = file().items.data() + s.items;
  for (uint32_t k = 0; k < s.nitems; ++k) {
    int64_t d = eval_int(shape[k].lhs, "dimension");
    if (d < 1 || d > (int64_t{1} << 40))
      fail_at(shape[k].lhs, fmt::format("dimension {} must be in [1, 2^40]", d));
    t.shape.push_back(d);
  }
  if (t.space != MemSpace::hbm && t.shape[0] > kNumPartitions)
    fail_at(shape[0].lhs,
            fmt::format("{} tensor '{}' has {} partitions; at most {}",
                        tok_spelling(kind).substr(1), t.name, t.shape[0], kNumPartitions));
  if (s.word != kNone) {
    const std::string_view role = text(s.word);
    auto r = enum_parse(EnumType::Role, role);
    if (!r)
      fail(loc(s.word), fmt::format("unknown role '{}'{} (input, output or scratch)", role,
                                    did_you_mean(role, enum_names(EnumType::Role))));
    t.role = static_cast<Role>(*r);
  }
  std::optional<uint64_t> pin;
  if (s.e0 != kNone) {
    // `@ addr`, or `@ [first_partition, addr]` on chip.
    Value a = eval(s.e0);
    if (a.kind == Value::List && a.list.size() == 2 && a.list[0].kind == Value::Int &&
        a.list[1].kind == Value::Int && t.space != MemSpace::hbm) {
      if (a.list[0].i < 0 || a.list[0].i > kNumPartitions - t.shape[0])
        fail_at(s.e0, fmt::format("partitions {}..{} are outside the {} partitions", a.list[0].i,
                                  a.list[0].i + t.shape[0], kNumPartitions));
      t.part_start = static_cast<uint16_t>(a.list[0].i);
      Value second = a.list[1];
      a = std::move(second);
    }
    need_num(a, s.e0);
    if (a.kind != Value::Int || a.i < 0) fail_at(s.e0, "the address must be an integer >= 0");
    pin = static_cast<uint64_t>(a.i);
  }
  declare(t.name, loc(s.name), "tensor");
  if (auto err = alloc_->place(t, pin)) fail(loc(s.name), *err);
  tensors_[t.name] = t;
  mod_.tensors.push_back(t);
}

void Assembler::exec_view(const Stmt& s) {
  if (text(s.word) != "as")
    fail(loc(s.word), "expected 'as' in '.view NAME = TENSOR as DTYPE[SHAPE]'");
  Value src = eval(s.e0);
  const TensorDecl* base = src.kind == Value::Name ? find_tensor(src.s) : nullptr;
  if (!base) fail_at(s.e0, fmt::format("'{}' is not a tensor", src.str()));
  TensorDecl v = *base;
  v.name = text(s.name);
  v.dtype = eval_dtype(s.word2);
  v.shape.clear();
  if (s.nitems == 0) fail(loc(s.tok), "a view needs a shape");
  const Item* shape = file().items.data() + s.items;
  for (uint32_t k = 0; k < s.nitems; ++k) {
    int64_t d = eval_int(shape[k].lhs, "dimension");
    if (d < 1) fail_at(shape[k].lhs, "dimensions must be >= 1");
    v.shape.push_back(d);
  }
  if (v.space != MemSpace::hbm && v.shape[0] > base->shape[0])
    fail_at(shape[0].lhs, fmt::format("view '{}' has {} partitions; '{}' has {}", v.name,
                                      v.shape[0], base->name, base->shape[0]));
  const auto vbytes = v.space == MemSpace::hbm ? checked_tensor_bytes(v) : checked_row_bytes(v);
  if (!vbytes)
    fail(loc(s.tok), fmt::format("view '{}': its size in bytes overflows 64 bits", v.name));
  if (*vbytes > tensor_bytes(*base))
    fail(loc(s.tok), fmt::format("view '{}' needs {} bytes{}; '{}' has {}", v.name, tensor_bytes(v),
                                 v.space == MemSpace::hbm ? "" : " per partition", base->name,
                                 tensor_bytes(*base)));
  declare(v.name, loc(s.name), "view");
  tensors_[v.name] = v;
}

void Assembler::exec_sem(const Stmt& s) {
  for (uint32_t k = 0; k < s.nitems; ++k) {
    const Item& d = file().items[s.items + k];
    const std::string n(text(d.tok));
    int64_t init = d.rhs != kNone ? eval_int(d.rhs, "initial value") : 0;
    if (init < 0 || init > UINT32_MAX) fail_at(d.rhs, "initial value must fit in 32 bits");
    if (mod_.sems.size() >= 0xffff) fail(loc(d.tok), "too many semaphores");
    declare(n, loc(d.tok), "semaphore");
    sems_[n] = static_cast<uint16_t>(mod_.sems.size());
    mod_.sems.push_back({n, static_cast<uint32_t>(init)});
  }
}

void Assembler::exec_group(const Stmt& s) {
  Value v = eval(s.e0);
  ReplicaGroupDecl g;
  g.name = text(s.name);
  const char* shape = "a replica group is a list of rank lists, e.g. [[0, 1], [2, 3]]";
  if (v.kind != Value::List) fail_at(s.e0, shape);
  for (const auto& l : v.list) {
    if (l.kind != Value::List) fail_at(s.e0, shape);
    std::vector<uint32_t> ranks;
    for (const auto& r : l.list) {
      if (r.kind != Value::Int || r.i < 0 || r.i > 65535)
        fail_at(s.e0, "ranks are integers in [0, 65535]");
      ranks.push_back(static_cast<uint32_t>(r.i));
    }
    g.groups.push_back(std::move(ranks));
  }
  declare(g.name, loc(s.name), "replica group");
  groups_[g.name] = static_cast<uint16_t>(mod_.groups.size());
  mod_.groups.push_back(std::move(g));
}

void Assembler::define_label(uint32_t t) {
  const std::string_view written = text(t);
  std::string n(written);
  if (n[0] == '.') {
    if (!is_local_label(n))
      fail(loc(t), fmt::format("'{}' is not a label: a local label starts with '.L'", n));
    n = local_key(n, cur_frame_);
  }
  auto it = labels_.find(n);
  if (it != labels_.end())
    fail(loc(t), fmt::format("duplicate label '{}' (first defined at line {})", written,
                             it->second.def.line));
  LabelDef d;
  for (int e = 0; e < kNumEngines; ++e) d.at[e] = static_cast<uint32_t>(mod_.streams[e].size());
  d.def = loc(t);
  if (const size_t dot = n.find('.'); dot != std::string::npos && dot != 0) {
    // Engine-qualified: a label of that engine's stream only (what the disassembler prints).
    auto e = enum_parse(EnumType::Engine, n.substr(0, dot));
    if (!e) fail(loc(t), fmt::format("unknown engine '{}' in label '{}'", n.substr(0, dot), n));
    mod_.labels[*e].push_back({n.substr(dot + 1), d.at[*e]});
  }
  labels_[n] = d;
  labels_wanting_inst_.push_back(n);
  if (written[0] == '.') latest_local_[std::string(written)] = n;
}

// Each @after edge: the producer's signal stream (its engine; for a DMA its (engine, queue),
// for a collective its channel) gets a semaphore __after_<stream>; every producer of a stream,
// in stream order, signals it once, so the k-th producer has completed when the count reaches
// k (signals of one stream complete in order). The consumer waits for that count. The result
// is ordinary @wait/@signal: the disassembly shows them and `nisa check` proves them.
void Assembler::lower_afters() {
  if (afters_.empty()) return;
  struct Stream {
    std::string name;
    std::vector<uint32_t> producers; // (engine fixed by the key) indices, sorted
    uint16_t sem = 0;
  };
  std::map<std::tuple<int, int, int>, Stream> streams;
  auto key_of = [&](Engine e, uint32_t i) {
    const Inst& in = mod_.streams[int(e)][i];
    if (is_async_dma(in)) return std::make_tuple(int(e), 1, int(dma_queue(in)));
    if (exec_kind(in) == ExecKind::collective)
      return std::make_tuple(int(e), 2, int(cc_channel(in)));
    return std::make_tuple(int(e), 0, 0);
  };
  std::vector<const AfterEdge*> live;
  for (const AfterEdge& a : afters_) {
    auto k = key_of(a.producer, a.producer_index);
    // Program order already orders a plain instruction before a later one of its engine.
    if (std::get<1>(k) == 0 && a.producer == a.consumer && a.producer_index < a.consumer_index)
      continue;
    Stream& st = streams[k];
    if (st.name.empty())
      st.name = fmt::format("__after_{}{}", name_of(a.producer),
                            std::get<1>(k) == 1   ? fmt::format("_q{}", std::get<2>(k))
                            : std::get<1>(k) == 2 ? fmt::format("_ch{}", std::get<2>(k))
                                                  : "");
    st.producers.push_back(a.producer_index);
    live.push_back(&a);
  }
  for (auto& [k, st] : streams) {
    std::sort(st.producers.begin(), st.producers.end());
    st.producers.erase(std::unique(st.producers.begin(), st.producers.end()), st.producers.end());
    if (lookup(st.name) || tensors_.count(st.name) || sems_.count(st.name)) {
      report(
          live.front()->loc,
          fmt::format("@after needs the semaphore name '{}', which the kernel declares", st.name));
      return;
    }
    if (mod_.sems.size() >= UINT16_MAX) {
      report(live.front()->loc, "@after: too many semaphores");
      return;
    }
    st.sem = static_cast<uint16_t>(mod_.sems.size());
    mod_.sems.push_back({st.name, 0});
    for (uint32_t i : st.producers) {
      Inst& in = mod_.streams[std::get<0>(k)][i];
      if (in.signals.size() >= kMaxSignals) {
        report(live.front()->loc, fmt::format("@after: the producer {}[{}] already has {} signals",
                                              name_of(Engine(std::get<0>(k))), i, kMaxSignals));
        return;
      }
      in.signals.push_back({st.sem, 1});
    }
  }
  for (const AfterEdge* a : live) {
    const Stream& st = streams[key_of(a->producer, a->producer_index)];
    const uint32_t rank = static_cast<uint32_t>(
        std::lower_bound(st.producers.begin(), st.producers.end(), a->producer_index) -
        st.producers.begin() + 1);
    Inst& in = mod_.streams[int(a->consumer)][a->consumer_index];
    auto it = std::find_if(in.waits.begin(), in.waits.end(),
                           [&](const Wait& w) { return w.sem == st.sem; });
    if (it != in.waits.end()) {
      it->value = std::max(it->value, rank);
      continue;
    }
    if (in.waits.size() >= kMaxWaits) {
      report(a->loc,
             fmt::format("@after: the instruction would need more than {} waits", kMaxWaits));
      continue;
    }
    in.waits.push_back({st.sem, WaitCmp::ge, rank});
  }
}

} // namespace nisa::nasm
