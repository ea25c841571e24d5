// Instructions: mnemonic lookup, operand matching against the table (isa/insts.def), sync
// clauses, target checks and the shape checks the table implies.
#include <fmt/format.h>

#include <array>
#include <bit>
#include <cmath>
#include <optional>

#include "asm/assembler.h"
#include "isa/encode.h"
#include "isa/exec_kind.h"
#include "isa/legality.h"

namespace nisa::nasm {

namespace {

std::string did_you_mean(std::string_view w, const std::vector<std::string>& cands) {
  std::string s = suggest(w, cands);
  return s.empty() ? "" : fmt::format("; did you mean '{}'?", s);
}

std::string engines_text(uint8_t mask) {
  std::string out;
  for (int e = 0; e < kNumEngines; ++e)
    if (mask & (1u << e))
      out += (out.empty() ? "" : ", ") + std::string(name_of(static_cast<Engine>(e)));
  return out;
}

std::string operand_list(const InstDesc& d) {
  std::string out;
  for (const auto& o : d.operands)
    out += (out.empty() ? "" : ", ") + std::string(o.name) + (o.optional ? "=" : "");
  return out.empty() ? "none" : out;
}

std::string_view alu_alias(std::string_view n) {
  static const std::pair<std::string_view, std::string_view> kAliases[] = {
      {"mul", "multiply"},     {"sub", "subtract"},    {"eq", "equal"},      {"ne", "not_equal"},
      {"ge", "greater_equal"}, {"gt", "greater"},      {"le", "less_equal"}, {"lt", "less"},
      {"pow", "power"},        {"and", "bitwise_and"}, {"or", "bitwise_or"}, {"xor", "bitwise_xor"},
      {"shl", "left_shift"},   {"shr", "right_shift"}};
  for (auto [a, full] : kAliases)
    if (a == n) return full;
  return n;
}

std::optional<int> prefixed_index(std::string_view s, char prefix, int limit) {
  if (s.size() < 2 || s.size() > 4 || s[0] != prefix) return std::nullopt;
  if (s.size() > 2 && s[1] == '0') return std::nullopt;
  int v = 0;
  for (size_t k = 1; k < s.size(); ++k) {
    if (s[k] < '0' || s[k] > '9') return std::nullopt;
    v = v * 10 + (s[k] - '0');
  }
  return v < limit ? std::optional<int>(v) : std::nullopt;
}

} // namespace

uint32_t Assembler::operand_name(const Item& op) const {
  if (op.rhs == kNone) return kNone;
  if (node(op.lhs).kind != NodeKind::Name) fail_at(op.lhs, "expected an operand name before '='");
  return op.lhs;
}

uint16_t Assembler::sem_index(std::string_view name, uint32_t at) {
  auto it = sems_.find(name);
  if (it == sems_.end()) {
    std::vector<std::string> names;
    for (const auto& [n, i] : sems_) names.push_back(n);
    fail_at(at, fmt::format("unknown semaphore '{}'{}", name, did_you_mean(name, names)));
  }
  return it->second;
}

void Assembler::exec_inst(const Stmt& s) {
  target_locked_ = true;
  pending_afters_.clear();
  const std::string_view dotted = std::string_view(file().src).substr(s.tok, s.tok_len);
  const size_t dot = dotted.find('.');
  const std::string_view eng_name = dotted.substr(0, dot), mn = dotted.substr(dot + 1);
  const Loc at{cur_unit_, s.line, s.col, cur_frame_};
  // The engine and table row of this line, resolved once per line (a loop body's instruction
  // is assembled many times).
  if (inst_cache_.size() <= cur_unit_) inst_cache_.resize(cur_unit_ + 1);
  auto& cache = inst_cache_[cur_unit_];
  const size_t line = size_t(&s - file_->stmts.data());
  if (cache.size() != file_->stmts.size()) cache.assign(file_->stmts.size(), {});
  std::optional<uint8_t> eng;
  const InstDesc* d = cache[line].second;
  if (d) eng = cache[line].first;
  if (!d) eng = enum_parse(EnumType::Engine, eng_name);
  if (!eng) {
    std::vector<std::string> engines;
    for (const auto& m : enum_members(EnumType::Engine)) engines.emplace_back(m.name);
    fail(at, fmt::format("unknown engine '{}'{} (engines: {})", eng_name,
                         did_you_mean(eng_name, engines), engines_text(0x3f)));
  }
  const Engine engine = static_cast<Engine>(*eng);
  if (!d) d = find_by_mnemonic(mn, engine);
  if (d) cache[line] = {*eng, d};
  if (!d) {
    auto all = find_all_by_mnemonic(mn);
    if (all.empty()) {
      std::vector<std::string> names;
      for (const auto& row : inst_table())
        if (row.engines & engine_bit(engine)) names.emplace_back(row.mnemonic);
      std::string s2 = suggest(mn, names);
      if (s2.empty()) {
        names.clear();
        for (const auto& row : inst_table()) names.emplace_back(row.mnemonic);
      }
      fail(Loc{at.file, at.line, at.col + static_cast<uint32_t>(dot) + 1, at.frame},
           fmt::format("unknown mnemonic '{}'{}", mn, did_you_mean(mn, names)));
    }
    uint8_t mask = 0;
    for (const auto* r : all) mask |= r->engines;
    fail(at, fmt::format("instruction '{}' does not run on engine {} (it runs on: {})", mn,
                         eng_name, engines_text(mask)));
  }
  if (!gen_allows(d->gens, mod_.target))
    fail(at, fmt::format("instruction '{}' is not available on {} (available on: {})", dotted,
                         name_of(mod_.target), gens_text(d->gens)));

  // Bind operands: positional in table order, then by name.
  const size_t n = d->operands.size();
  constexpr size_t kMaxOps = 32;
  if (n > kMaxOps) fail(at, "instruction has too many operands"); // a table invariant
  std::array<uint32_t, kMaxOps> bound;
  bound.fill(kNone);
  size_t pos = 0;
  bool named = false;
  for (uint32_t j = 0; j < s.nitems; ++j) {
    const Item& op = file().items[s.items + j];
    if (const uint32_t name = operand_name(op); name != kNone) {
      named = true;
      const std::string_view on = file().text(node(name));
      size_t k = 0;
      while (k < n && d->operands[k].name != on) ++k;
      if (k == n) {
        std::vector<std::string> names;
        for (const auto& o : d->operands) names.emplace_back(o.name);
        fail_at(name, fmt::format("{} has no operand '{}'{} (operands: {})", dotted, on,
                                  did_you_mean(on, names), operand_list(*d)));
      }
      if (bound[k] != kNone) fail_at(name, fmt::format("operand '{}' given twice", on));
      bound[k] = operand_value(op);
    } else {
      if (named) fail(loc(op.tok), "positional operand after a named one");
      if (pos >= n)
        fail(loc(op.tok),
             fmt::format("too many operands: {} takes {} ({})", dotted, n, operand_list(*d)));
      bound[pos++] = operand_value(op);
    }
  }
  // Label operands queue fixups as they are converted: take them back if the instruction
  // fails after that (the fixup would name an instruction that is never added).
  struct PendingFixups {
    std::vector<Fixup>& fixups;
    size_t before;
    bool keep = false;
    ~PendingFixups() {
      if (!keep) fixups.resize(before);
    }
  } pending{fixups_, fixups_.size()};
  Inst in;
  in.op = d->op;
  in.engine = engine;
  in.ops.resize(n);
  std::array<bool, kMaxOps> raw{};
  const uint32_t index = static_cast<uint32_t>(mod_.streams[*eng].size());
  for (size_t k = 0; k < n; ++k) {
    const OperandDesc& od = d->operands[k];
    if (bound[k] == kNone) {
      if (!od.optional) {
        const Token last = file().token(s.last);
        fail(Loc{at.file, last.line, last.col + static_cast<uint32_t>(last.end - last.begin),
                 at.frame},
             fmt::format("missing operand '{}' of {} (operands: {})", od.name, dotted,
                         operand_list(*d)));
      }
      in.ops[k] = default_operand(od);
      continue;
    }
    bool r = false;
    in.ops[k] = convert_operand(*d, k, bound[k], engine, index, r);
    raw[k] = r;
    if (!gen_allows(od.gens, mod_.target) && !is_default(od, in.ops[k]))
      fail_at(bound[k], fmt::format("operand '{}' of {} is not available on {} (available on: {})",
                                    od.name, dotted, name_of(mod_.target), gens_text(od.gens)));
    else if (od.kind == OperandKind::Scalar && !in.ops[k].is_ap &&
             !gen_allows(od.imm_gens, mod_.target) && !is_default(od, in.ops[k]))
      fail_at(bound[k], fmt::format("an immediate '{}' of {} is not available on {} (available "
                                    "on: {}); use a [P, 1] tile",
                                    od.name, dotted, name_of(mod_.target), gens_text(od.imm_gens)));
  }
  for (uint32_t y = 0; y < s.nsyncs; ++y) parse_sync(file().syncs[s.syncs + y], in);
  check_shapes(*d, in, raw.data(), bound.data(), at);
  // The table's payload rules (the generation rules were checked above, with better messages).
  if (auto err = check_inst(in)) fail(at, *err);
  if (++total_insts_ > opts_.max_instructions) {
    report(at,
           fmt::format("the kernel exceeds the limit of {} instructions", opts_.max_instructions));
    throw Abort{};
  }
  mod_.streams[*eng].push_back(std::move(in));
  pending.keep = true;
  for (AfterEdge a : pending_afters_) {
    a.consumer = Engine(*eng), a.consumer_index = index;
    afters_.push_back(a);
  }
  pending_afters_.clear();
  // AUTOSYNC is a global (.set) unless a scope binds the name: the global is looked up until
  // it exists, then kept.
  const Var* as = nullptr;
  for (size_t k = nlocals_; !as && k-- > macro_base_.back();) as = locals_[k].find("AUTOSYNC");
  if (!as && !autosync_)
    if (auto it = globals_.find(std::string_view("AUTOSYNC")); it != globals_.end())
      autosync_ = &it->second;
  if (!as) as = autosync_;
  if (const Var* v = as; v && v->v.kind == Value::Int && v->v.i != 0)
    autosync(Engine(*eng), index, at);
  for (const std::string& l : labels_wanting_inst_) {
    auto it = labels_.find(l);
    if (it != labels_.end()) it->second.first_engine = int(*eng), it->second.first_index = index;
  }
  labels_wanting_inst_.clear();
  mod_.debug[*eng].push_back(DebugLoc{at.file, at.line, at.col, at.frame});
}

AccessPattern Assembler::to_ap(const Value& v, uint32_t e, bool& raw) {
  if (v.kind == Value::Ap) {
    raw = v.raw;
    return v.ap;
  }
  if (v.kind == Value::Name) {
    if (const TensorDecl* t = find_tensor(v.s)) {
      auto r = lower_slice(*t, {});
      if (auto* err = std::get_if<LowerError>(&r)) fail_at(e, err->message);
      return std::get<AccessPattern>(r);
    }
    std::vector<std::string> names;
    for (const auto& [n, t] : tensors_) names.push_back(n);
    fail_unknown_tensor(e, v.s,
                        fmt::format("unknown tensor '{}'{}", v.s, did_you_mean(v.s, names)));
  }
  fail_at(e, fmt::format("expected a tensor or a slice, not {}", v.str()));
}

Operand Assembler::convert_operand(const InstDesc& d, size_t k, uint32_t e, Engine eng,
                                   uint32_t inst_index, bool& raw) {
  const OperandDesc& od = d.operands[k];
  Operand o;
  Value v = eval(e);
  auto as_int = [&](int64_t lo, int64_t hi) {
    if (v.kind == Value::Float && v.f == std::floor(v.f) && std::abs(v.f) < 9e18)
      v = Value::of_int(static_cast<int64_t>(v.f));
    if (v.kind != Value::Int) {
      need_num(v, e);
      fail_at(e, fmt::format("operand '{}' must be an integer, not {}", od.name, v.str()));
    }
    if (v.i < lo || v.i > hi)
      fail_at(e, fmt::format("operand '{}' = {} is outside [{}, {}]", od.name, v.i, lo, hi));
    return v.i;
  };
  auto name_of_value = [&](const char* what) {
    if (v.kind != Value::Name)
      fail_at(e, fmt::format("operand '{}' must be {}, not {}", od.name, what, v.str()));
    return v.s;
  };
  switch (od.kind) {
  case OperandKind::Dst:
  case OperandKind::Src: {
    o.ap = to_ap(v, e, raw);
    const uint8_t bit = space_bit(o.ap.space);
    if (!(od.spaces & bit)) {
      std::string allowed;
      for (MemSpace s : {MemSpace::hbm, MemSpace::sbuf, MemSpace::psum})
        if (od.spaces & space_bit(s))
          allowed += (allowed.empty() ? "" : " or ") + std::string(name_of(s));
      fail_at(e, fmt::format("operand '{}' of {}.{} cannot be in {} (allowed: {})", od.name,
                             name_of(eng), d.mnemonic, name_of(o.ap.space), allowed));
    }
    return o;
  }
  case OperandKind::Scalar:
    if (v.is_num()) {
      o.f = static_cast<float>(v.num());
      return o;
    }
    o.is_ap = true;
    o.ap = to_ap(v, e, raw);
    if (!(od.spaces & space_bit(o.ap.space)))
      fail_at(e, fmt::format("operand '{}' cannot be in {}", od.name, name_of(o.ap.space)));
    return o;
  case OperandKind::ImmF:
    need_num(v, e);
    o.f = static_cast<float>(v.num());
    return o;
  case OperandKind::ImmI: o.i = as_int(INT32_MIN, INT32_MAX); return o;
  case OperandKind::Bool: o.i = as_int(0, 1); return o;
  case OperandKind::Enum: {
    std::string n = name_of_value("a name");
    if (od.enum_type == EnumType::AluOp) n = std::string(alu_alias(n));
    auto ev = enum_parse(od.enum_type, n);
    if (!ev)
      fail_at(
          e, fmt::format(
                 "unknown {} '{}' for operand '{}'{}", enum_type_name(od.enum_type), v.s, od.name,
                 [&] {
                   std::vector<std::string> names;
                   for (const auto& m : enum_members(od.enum_type)) names.emplace_back(m.name);
                   if (od.enum_type == EnumType::AluOp)
                     for (const char* a : {"mul", "sub", "eq", "ne", "ge", "gt", "le", "lt", "pow"})
                       names.emplace_back(a);
                   return did_you_mean(v.s, names);
                 }()));
    o.i = *ev;
    return o;
  }
  case OperandKind::Reg:
  case OperandKind::RegOrImm: {
    if (v.kind == Value::Name) {
      auto r = prefixed_index(v.s, 'r', kNumRegs);
      if (!r) fail_at(e, fmt::format("'{}' is not a register (r0..r{})", v.s, kNumRegs - 1));
      o.is_reg = od.kind == OperandKind::RegOrImm;
      o.i = *r;
      return o;
    }
    if (od.kind == OperandKind::Reg)
      fail_at(e, fmt::format("operand '{}' must be a register r0..r{}", od.name, kNumRegs - 1));
    o.i = as_int(INT32_MIN, INT32_MAX);
    return o;
  }
  case OperandKind::Queue: {
    auto q = v.kind == Value::Name ? prefixed_index(v.s, 'q', kNumDmaQueues) : std::nullopt;
    if (!q)
      fail_at(e, fmt::format("operand '{}' must be a DMA queue q0..q{}, not {}", od.name,
                             kNumDmaQueues - 1, v.str()));
    o.i = *q;
    return o;
  }
  case OperandKind::Sem: o.i = sem_index(name_of_value("a semaphore"), e); return o;
  case OperandKind::Group: {
    const std::string n = name_of_value("a replica group");
    auto it = groups_.find(n);
    if (it == groups_.end()) {
      std::vector<std::string> names;
      for (const auto& [g, i] : groups_) names.push_back(g);
      fail_at(e, fmt::format("unknown replica group '{}'{}", n, did_you_mean(n, names)));
    }
    o.i = it->second;
    return o;
  }
  case OperandKind::Label:
    if (v.kind == Value::Int) {
      o.i = as_int(0, UINT32_MAX);
      return o;
    }
    fixups_.push_back(
        {eng, inst_index, static_cast<uint32_t>(k), name_of_value("a label"), loc_of(e)});
    return o;
  case OperandKind::Pattern: {
    const char* msg = "a pattern is a list of 1 to 4 [step, num] pairs";
    if (v.kind != Value::List || v.list.size() > 4) fail_at(e, msg);
    o.pat.n = static_cast<uint8_t>(v.list.size());
    for (size_t j = 0; j < v.list.size(); ++j) {
      const Value& p = v.list[j];
      if (p.kind != Value::List || p.list.size() != 2 || p.list[0].kind != Value::Int ||
          p.list[1].kind != Value::Int || p.list[0].i < INT32_MIN || p.list[0].i > INT32_MAX ||
          p.list[1].i < INT32_MIN || p.list[1].i > INT32_MAX)
        fail_at(e, msg);
      o.pat.d[j] = {static_cast<int32_t>(p.list[0].i), static_cast<int32_t>(p.list[1].i)};
    }
    return o;
  }
  case OperandKind::Mask: {
    if (v.kind != Value::List || v.list.size() != 32)
      fail_at(e, "a mask is a list of 32 partition indices (255 = keep)");
    for (size_t j = 0; j < 32; ++j) {
      if (v.list[j].kind != Value::Int || v.list[j].i < 0 || v.list[j].i > 255)
        fail_at(e, "mask entries are integers in [0, 255]");
      o.mask.v[j] = static_cast<uint8_t>(v.list[j].i);
    }
    return o;
  }
  }
  fail_at(e, "unsupported operand kind");
}

// The word after '@': read straight from the source when it is one of the clause names
// followed by '(' (what the lexer would return), else through the lexer.
std::string_view Assembler::sync_kind(uint32_t tok) const {
  const std::string_view src = file().src;
  for (std::string_view w : {"wait", "signal", "after", "after_opt"})
    if (src.size() > tok + w.size() && src.compare(tok, w.size(), w) == 0 &&
        src[tok + w.size()] == '(')
      return src.substr(tok, w.size());
  return text(tok);
}

void Assembler::parse_sync(const Sync& s, Inst& in) {
  const std::string_view kind = sync_kind(s.kind);
  if (kind != "wait" && kind != "signal" && kind != "after" && kind != "after_opt")
    fail(loc(s.tok), fmt::format("unknown sync clause '@{}'{}", kind,
                                 did_you_mean("@" + std::string(kind),
                                              {"@wait", "@signal", "@after", "@after_opt"})));
  if (kind == "after" || kind == "after_opt") {
    // @after(L, ...): wait for the latest instruction assembled at label L (for `.Lname`, the
    // latest expansion that defined it: the previous .for iteration's, before this
    // iteration's own). @after_opt: no wait when L has no instruction yet (a first iteration).
    for (uint32_t k = 0; k < s.nitems; ++k) {
      const Item& a = file().items[s.items + k];
      const Node& np = node(a.lhs);
      if (a.rhs != kNone || np.kind != NodeKind::Name)
        fail(loc(a.tok), fmt::format("@{} takes label names", kind));
      const std::string_view name = file().text(np);
      std::string key(name);
      if (name[0] == '.') {
        auto it = latest_local_.find(name);
        key = it == latest_local_.end() ? std::string() : it->second;
      }
      auto it = key.empty() ? labels_.end() : labels_.find(key);
      if (it == labels_.end() || it->second.first_engine < 0) {
        if (kind == "after_opt") continue;
        std::vector<std::string> names;
        for (const auto& [n, l] : labels_) names.push_back(n);
        fail(loc(a.tok),
             it == labels_.end()
                 ? fmt::format("@after: no label '{}' before this instruction (the producer must "
                               "come earlier in the listing; @after_opt allows none){}",
                               name, did_you_mean(name, names))
                 : fmt::format("@after: no instruction follows label '{}' yet", name));
      }
      pending_afters_.push_back(AfterEdge{in.engine, 0, Engine(it->second.first_engine),
                                          it->second.first_index, loc(a.tok)});
    }
    return;
  }
  auto sem_of = [&](uint32_t e) {
    const Node& np = node(e);
    if (np.kind != NodeKind::Name) fail_at(e, "expected a semaphore name");
    std::string_view n = file().text(np);
    if (const Var* v = lookup(n); v && v->v.kind == Value::Name) n = v->v.s;
    return sem_index(n, e);
  };
  for (uint32_t k = 0; k < s.nitems; ++k) {
    const Item& a = file().items[s.items + k];
    if (kind == "signal") {
      Signal sig;
      sig.sem = sem_of(a.lhs);
      if (a.rhs != kNone) {
        int64_t dv = eval_int(a.rhs, "signal increment");
        if (dv < 0 || dv > UINT32_MAX) fail_at(a.rhs, "signal increment must fit in 32 bits");
        sig.delta = static_cast<uint32_t>(dv);
      }
      if (in.signals.size() >= kMaxSignals)
        fail(loc(a.tok), fmt::format("at most {} signals", kMaxSignals));
      in.signals.push_back(sig);
      continue;
    }
    const Node* b = a.rhs == kNone ? &node(a.lhs) : nullptr;
    if (!b || b->kind != NodeKind::Binary || (b->op != Tok::Ge && b->op != Tok::EqEq))
      fail(loc(a.tok), "@wait takes conditions 'sem >= value' or 'sem == value'");
    Wait w;
    w.sem = sem_of(b->a);
    w.cmp = b->op == Tok::Ge ? WaitCmp::ge : WaitCmp::eq;
    int64_t val = eval_int(b->b, "wait value");
    if (val < 0 || val > UINT32_MAX)
      fail_at(b->b, fmt::format("wait value {} must be in [0, 2^32)", val));
    w.value = static_cast<uint32_t>(val);
    if (in.waits.size() >= kMaxWaits) fail(loc(a.tok), fmt::format("at most {} waits", kMaxWaits));
    in.waits.push_back(w);
  }
}

// The static rules of isa/legality.h (the generation rules were checked as the operands were
// converted, with messages that say where each operand exists). Operands written as raw
// ap(...) are exempt: they are exactly what the disassembler printed.
void Assembler::check_shapes(const InstDesc& d, const Inst& in, const bool* raw,
                             const uint32_t* where, Loc inst_loc) {
  uint64_t skip = 0;
  for (size_t k = 0; k < d.operands.size() && k < 64; ++k)
    if (raw[k]) skip |= uint64_t(1) << k;
  const auto e = shape_error(in, mod_.target, skip);
  if (!e) return;
  const bool at_operand = e->operand >= 0 && where[e->operand] != kNone;
  fail(at_operand ? loc_of(where[e->operand]) : inst_loc, legality_text(in, *e));
}

namespace {

__extension__ typedef __int128 i128;

// The bytes an access pattern may touch: one rectangle (partitions x byte hull) on chip, one
// byte hull in HBM; dynamic offsets take every value in [0, limit).
bool extent_of(const AccessPattern& ap, bool write, std::vector<SyncExtent>& out) {
  if (ap.space == MemSpace::none || ap.ndims < 1 || ap.ndims > kMaxFreeDims) return false;
  const i128 eb = dtype_bytes(ap.dtype);
  const ApSpan span = ap_free_span(ap);
  i128 lo = span.lo, hi = span.hi;
  bool unbounded = false;
  if (ap.dyn != DynKind::none) {
    if (ap.dyn_limit == 0) unbounded = true;
    const i128 d = i128(ap.dyn_limit ? ap.dyn_limit - 1 : 0) * ap.dyn_mult;
    (d < 0 ? lo : hi) += d;
    if (ap.dyn == DynKind::vec)
      out.push_back({MemSpace::sbuf, ap.vidx.part_start,
                     uint32_t(ap.vidx.part_start) + ap.part_count, ap.vidx.offset,
                     uint64_t(ap.vidx.offset) + dtype_bytes(ap.vidx.dtype), false});
  }
  if (ap.space == MemSpace::hbm && ap.part_count > 1) {
    const i128 pr = i128(ap.part_stride) * (ap.part_count - 1);
    (pr < 0 ? lo : hi) += pr;
  }
  auto clampu = [](i128 v) -> uint64_t {
    return v < 0 ? 0 : v > i128(INT64_MAX) ? uint64_t(INT64_MAX) : uint64_t(v);
  };
  SyncExtent x{ap.space, 0, 1, 0, uint64_t(INT64_MAX), write};
  if (ap.space != MemSpace::hbm)
    x.p0 = ap.part_start, x.p1 = uint32_t(ap.part_start) + ap.part_count;
  if (!unbounded)
    x.b0 = clampu(i128(ap.offset) + lo * eb), x.b1 = clampu(i128(ap.offset) + (hi + 1) * eb);
  out.push_back(x);
  return true;
}

bool conflict(const std::vector<SyncExtent>& a, const std::vector<SyncExtent>& b) {
  for (const auto& x : a)
    for (const auto& y : b)
      if ((x.write || y.write) && x.space == y.space && x.p0 < y.p1 && y.p0 < x.p1 && x.b0 < y.b1 &&
          y.b0 < x.b1)
        return true;
  return false;
}

} // namespace

void Assembler::autosync(Engine e, uint32_t index, Loc at) {
  const Inst& in = mod_.streams[int(e)][index];
  AutoRec rec{e, index, {}};
  for_each_mem_operand(in, [&](const OperandDesc&, const Operand& o, bool is_write) {
    extent_of(o.ap, is_write, rec.ext);
  });
  if (rec.ext.empty()) return;
  // This instruction's stream (as lower_afters keys producers).
  std::tuple<int, int, int> mine{int(e), 0, 0};
  if (is_async_dma(in)) mine = {int(e), 1, int(dma_queue(in))};
  if (exec_kind(in) == ExecKind::collective) mine = {int(e), 2, int(cc_channel(in))};
  for (auto& [key, recs] : auto_recs_) {
    // The same stream is ordered already (program order; one engine's transfers of one queue
    // complete in order), except a plain instruction after its engine's DMA or collective.
    if (key == mine) continue;
    for (size_t j = recs.size(); j-- > 0;)
      if (conflict(recs[j].ext, rec.ext)) {
        afters_.push_back(AfterEdge{e, index, recs[j].engine, recs[j].index, at});
        break; // the latest is enough: that stream's earlier ones complete before it
      }
  }
  auto_recs_[mine].push_back(std::move(rec));
}

} // namespace nisa::nasm
