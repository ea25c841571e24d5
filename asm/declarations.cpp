// Declarations: variables, tensors and views, semaphores, replica groups, the launch settings
// (.ranks, .lnc), the target.
#include "asm/declarations.h"

#include <fmt/format.h>

#include <filesystem>
#include <optional>

#include "asm/assembler_util.h"
#include "asm/eval.h"
#include "asm/symbols.h"
#include "isa/launch.h"
#include "isa/limits.h"

namespace nisa::nasm {
using namespace detail;
namespace fs = std::filesystem;

Declarations::Declarations(const AsmOptions& opts, Module& mod, const Sources& src, Symbols& sym,
                           Evaluator& ev)
    : mod_(mod), src_(src), sym_(sym), ev_(ev) {
  if (opts.target) {
    mod_.target = *opts.target;
    target_set_by_option_ = true;
  }
}

void Declarations::start() {
  alloc_ = std::make_unique<Allocator>(mod_.target);
  sym_.set_target(mod_.target);
}

void Declarations::assign(const Stmt& s) {
  // The keyword (.param, .equ or .set: the parser made an Assign of those only) as spelled.
  const std::string_view kw = std::string_view(src_.file().src).substr(s.tok, s.tok_len);
  const Tok kind = kw == ".set" ? Tok::KwSet : kw == ".param" ? Tok::KwParam : Tok::KwEqu;
  if (kind == Tok::KwSet) {
    const auto& stmts = src_.file().stmts;
    SetLine& sl = set_lines_.row(src_.cur_unit(), stmts.size())[&s - stmts.data()];
    // The name's text only when the line's variable is not known yet, or for a message.
    if (sl.id == UINT32_MAX) sl.id = sym_.intern(src_.text(s.name));
    if (Var* it = sym_.find_local_id(sl.id)) {
      if (it->kind == Var::Loop)
        fail(src_.loc(s.name),
             fmt::format("cannot assign the loop variable '{}'", src_.text(s.name)));
      return set_value(it->v, s.e0);
    }
    if (!sl.global) sl.global = sym_.find_global(src_.text(s.name));
    if (Var* g = sl.global) {
      if (g->kind == Var::Predefined)
        fail(src_.loc(s.name), fmt::format("'{}' is predefined from the target; .set cannot "
                                           "change it",
                                           src_.text(s.name)));
      if (g->kind != Var::Set)
        fail(src_.loc(s.name),
             fmt::format("'{}' is a constant ({}); .set cannot change it", src_.text(s.name),
                         g->kind == Var::Param ? ".param" : ".equ"));
      return set_value(g->v, s.e0);
    }
    const std::string_view name = src_.text(s.name);
    const Loc at = src_.loc(s.name);
    Value v = ev_.eval(s.e0);
    sym_.declare(name, at, ".set");
    sym_.set_global(name, Var{v, Var::Set, at});
    return;
  }
  const std::string_view name = src_.text(s.name);
  const Loc at = src_.loc(s.name);
  const bool param = kind == Tok::KwParam;
  Value v;
  if (const Value* d = param ? sym_.take_define(name) : nullptr) {
    v = *d;
  } else {
    v = ev_.eval(s.e0);
  }
  sym_.declare(name, at, param ? ".param" : ".equ");
  sym_.set_global(name, Var{v, param ? Var::Param : Var::Equ, at});
  if (param) mod_.params.emplace_back(name, v.str());
}

// to = eval(e); an integer into an integer in place (a Value is big).
void Declarations::set_value(Value& to, uint32_t e) {
  if (int64_t x; to.kind == Value::Int && to.s.empty() && to.list.empty() && ev_.try_int(e, x))
    to.i = x;
  else
    to = ev_.eval(e);
}

void Declarations::target(const Stmt& s) {
  const std::string_view n = src_.text(s.name);
  auto t = enum_parse(EnumType::Target, n);
  if (!t)
    fail(src_.loc(s.name),
         fmt::format("unknown target '{}'{}", n, enum_did_you_mean(EnumType::Target, n)));
  if (target_set_by_option_) return; // --target wins
  if (target_locked_)
    fail(src_.loc(s.tok), ".target must come before tensor declarations and instructions");
  mod_.target = static_cast<Target>(*t);
  alloc_ = std::make_unique<Allocator>(mod_.target);
  sym_.set_target(mod_.target);
}

DType Declarations::eval_dtype(uint32_t tok) {
  std::string_view n = src_.text(tok);
  if (const Var* v = sym_.lookup(n); v && v->v.kind == Value::Name) n = v->v.s;
  auto dt = parse_dtype(n);
  if (!dt) fail(src_.loc(tok), fmt::format("unknown dtype '{}'{}", n, dtype_did_you_mean(n)));
  return *dt;
}

void Declarations::tensor(const Stmt& s) {
  lock_target();
  TensorDecl t;
  t.name = src_.text(s.name);
  const Tok kind = src_.file().token(s.tok).kind;
  t.space = kind == Tok::KwHbm    ? MemSpace::hbm
            : kind == Tok::KwSbuf ? MemSpace::sbuf
                                  : MemSpace::psum;
  t.dtype = eval_dtype(s.word2);
  if (s.nitems == 0) fail(src_.loc(s.tok), "a tensor needs a shape, e.g. fp32[128, 512]");
  const Item* shape = src_.file().items.data() + s.items;
  for (uint32_t k = 0; k < s.nitems; ++k) {
    int64_t d = ev_.eval_int(shape[k].lhs, "dimension");
    if (d < 1 || d > (int64_t{1} << 40))
      src_.fail_at(shape[k].lhs, fmt::format("dimension {} must be in [1, 2^40]", d));
    t.shape.push_back(d);
  }
  if (t.space != MemSpace::hbm && t.shape[0] > kNumPartitions)
    src_.fail_at(shape[0].lhs,
                 fmt::format("{} tensor '{}' has {} partitions; at most {}",
                             tok_spelling(kind).substr(1), t.name, t.shape[0], kNumPartitions));
  if (s.word != kNone) {
    const std::string_view role = src_.text(s.word);
    auto r = enum_parse(EnumType::Role, role);
    if (!r)
      fail(src_.loc(s.word), fmt::format("unknown role '{}'{} (input, output or scratch)", role,
                                         enum_did_you_mean(EnumType::Role, role)));
    t.role = static_cast<Role>(*r);
  }
  std::optional<uint64_t> pin;
  if (s.e0 != kNone) {
    // `@ addr`, or `@ [first_partition, addr]` on chip.
    Value a = ev_.eval(s.e0);
    if (a.kind == Value::List && a.list.size() == 2 && a.list[0].kind == Value::Int &&
        a.list[1].kind == Value::Int && t.space != MemSpace::hbm) {
      if (a.list[0].i < 0 || a.list[0].i > kNumPartitions - t.shape[0])
        src_.fail_at(s.e0, fmt::format("partitions {}..{} are outside the {} partitions",
                                       a.list[0].i, a.list[0].i + t.shape[0], kNumPartitions));
      t.part_start = static_cast<uint16_t>(a.list[0].i);
      Value second = a.list[1];
      a = std::move(second);
    }
    ev_.need_num(a, s.e0);
    if (a.kind != Value::Int || a.i < 0) src_.fail_at(s.e0, "the address must be an integer >= 0");
    pin = static_cast<uint64_t>(a.i);
  }
  sym_.declare(t.name, src_.loc(s.name), "tensor");
  if (auto err = alloc_->place(t, pin)) fail(src_.loc(s.name), *err);
  sym_.add_tensor(t);
  mod_.tensors.push_back(t);
}

void Declarations::view(const Stmt& s) {
  if (src_.text(s.word) != "as")
    fail(src_.loc(s.word), "expected 'as' in '.view NAME = TENSOR as DTYPE[SHAPE]'");
  Value src = ev_.eval(s.e0);
  const TensorDecl* base = src.kind == Value::Name ? sym_.find_tensor(src.s) : nullptr;
  if (!base && src.kind == Value::Name) // a tensor whose declaration failed: no second error
    sym_.fail_unknown_tensor(s.e0, src.s, fmt::format("'{}' is not a tensor", src.str()));
  if (!base) src_.fail_at(s.e0, fmt::format("'{}' is not a tensor", src.str()));
  TensorDecl v = *base;
  v.name = src_.text(s.name);
  v.dtype = eval_dtype(s.word2);
  v.shape.clear();
  if (s.nitems == 0) fail(src_.loc(s.tok), "a view needs a shape");
  const Item* shape = src_.file().items.data() + s.items;
  for (uint32_t k = 0; k < s.nitems; ++k) {
    int64_t d = ev_.eval_int(shape[k].lhs, "dimension");
    if (d < 1) src_.fail_at(shape[k].lhs, "dimensions must be >= 1");
    v.shape.push_back(d);
  }
  if (v.space != MemSpace::hbm && v.shape[0] > base->shape[0])
    src_.fail_at(shape[0].lhs, fmt::format("view '{}' has {} partitions; '{}' has {}", v.name,
                                           v.shape[0], base->name, base->shape[0]));
  const auto vbytes = v.space == MemSpace::hbm ? checked_tensor_bytes(v) : checked_row_bytes(v);
  if (!vbytes)
    fail(src_.loc(s.tok), fmt::format("view '{}': its size in bytes overflows 64 bits", v.name));
  if (*vbytes > tensor_bytes(*base))
    fail(src_.loc(s.tok),
         fmt::format("view '{}' needs {} bytes{}; '{}' has {}", v.name, tensor_bytes(v),
                     v.space == MemSpace::hbm ? "" : " per partition", base->name,
                     tensor_bytes(*base)));
  sym_.declare(v.name, src_.loc(s.name), "view");
  sym_.add_tensor(v);
}

void Declarations::sem(const Stmt& s) {
  for (uint32_t k = 0; k < s.nitems; ++k) {
    const Item& d = src_.file().items[s.items + k];
    const std::string n(src_.text(d.tok));
    int64_t init = d.rhs != kNone ? ev_.eval_int(d.rhs, "initial value") : 0;
    if (init < 0 || init > UINT32_MAX) src_.fail_at(d.rhs, "initial value must fit in 32 bits");
    if (mod_.sems.size() >= 0xffff) fail(src_.loc(d.tok), "too many semaphores");
    sym_.declare(n, src_.loc(d.tok), "semaphore");
    sym_.add_sem(n, static_cast<uint16_t>(mod_.sems.size()));
    mod_.sems.push_back({n, static_cast<uint32_t>(init)});
  }
}

void Declarations::group(const Stmt& s) {
  Value v = ev_.eval(s.e0);
  ReplicaGroupDecl g;
  g.name = src_.text(s.name);
  const char* shape = "a replica group is a list of rank lists, e.g. [[0, 1], [2, 3]]";
  if (v.kind != Value::List) src_.fail_at(s.e0, shape);
  for (const auto& l : v.list) {
    if (l.kind != Value::List) src_.fail_at(s.e0, shape);
    std::vector<uint32_t> ranks;
    for (const auto& r : l.list) {
      if (r.kind != Value::Int || r.i < 0 || r.i > 65535)
        src_.fail_at(s.e0, "ranks are integers in [0, 65535]");
      ranks.push_back(static_cast<uint32_t>(r.i));
    }
    g.groups.push_back(std::move(ranks));
  }
  sym_.declare(g.name, src_.loc(s.name), "replica group");
  sym_.add_group(g.name, static_cast<uint16_t>(mod_.groups.size()));
  mod_.groups.push_back(std::move(g));
}

// `.ranks N` / `.lnc N`: once each, N in the range `nisa run` takes (isa/launch.h).
void Declarations::launch(const Stmt& s) {
  const Launch which = src_.file().token(s.tok).kind == Tok::KwRanks ? Launch::ranks : Launch::lnc;
  const std::string directive = std::string(".") + launch_name(which);
  LaunchDecl& d = which == Launch::ranks ? mod_.ranks : mod_.lnc;
  const Loc at = src_.loc(s.tok);
  if (d.value)
    fail(at, fmt::format("duplicate {} ({} {} first declared at {}:{}:{})", directive, directive,
                         d.value, fs::path(mod_.files[d.loc.file]).filename().string(), d.loc.line,
                         d.loc.col));
  const int64_t v = ev_.eval_int(s.e0, directive.c_str());
  if (auto why = launch_value_error(which, v))
    src_.fail_at(s.e0, fmt::format("{} {}: {}", directive, v, *why));
  d.value = static_cast<uint32_t>(v);
  d.loc = DebugLoc{at.file, at.line, at.col, at.frame};
}

} // namespace nisa::nasm
