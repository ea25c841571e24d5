// An instruction line: its engine and table row, operands bound (positional, then by name),
// lowered and checked, sync clauses, and the instruction added to its engine's stream.
#include "asm/instructions.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <optional>

#include "asm/assembler_util.h"
#include "asm/labels.h"
#include "asm/reporter.h"
#include "asm/symbols.h"
#include "asm/sync.h"
#include "isa/encode.h"
#include "isa/legality.h"

namespace nisa::nasm {
using namespace detail;

namespace {

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

} // namespace

// Operands bound to the row's operands (`bound`, all kNone before): positional in table order,
// then by name.
void Instructions::bind(const Stmt& s, const InstDesc& d, std::string_view dotted,
                        uint32_t* bound) const {
  const size_t n = d.operands.size();
  size_t pos = 0;
  bool named = false;
  for (uint32_t j = 0; j < s.nitems; ++j) {
    const Item& op = src_.file().items[s.items + j];
    if (const uint32_t name = operand_name(src_, op); name != kNone) {
      named = true;
      const std::string_view on = src_.file().text(src_.node(name));
      size_t k = 0;
      while (k < n && d.operands[k].name != on) ++k;
      if (k == n) {
        std::vector<std::string> names;
        for (const auto& o : d.operands) names.emplace_back(o.name);
        src_.fail_at(name, fmt::format("{} has no operand '{}'{} (operands: {})", dotted, on,
                                       did_you_mean(on, names), operand_list(d)));
      }
      if (bound[k] != kNone) src_.fail_at(name, fmt::format("operand '{}' given twice", on));
      bound[k] = operand_value(op);
    } else {
      if (named) fail(src_.loc(op.tok), "positional operand after a named one");
      if (pos >= n)
        fail(src_.loc(op.tok),
             fmt::format("too many operands: {} takes {} ({})", dotted, n, operand_list(d)));
      bound[pos++] = operand_value(op);
    }
  }
}

void Instructions::assemble(const Stmt& s) {
  sync_.begin();
  const std::string_view dotted = std::string_view(src_.file().src).substr(s.tok, s.tok_len);
  const size_t dot = dotted.find('.');
  const std::string_view eng_name = dotted.substr(0, dot), mn = dotted.substr(dot + 1);
  const Loc at{src_.cur_unit(), s.line, s.col, src_.frame()};
  // The engine and table row of this line, resolved once per line (a loop body's instruction
  // is assembled many times).
  LineInst* cache = inst_cache_.row(src_.cur_unit(), src_.file().stmts.size());
  const size_t line = size_t(&s - src_.file().stmts.data());
  std::optional<uint8_t> eng;
  const InstDesc* d = cache[line].d;
  if (d) eng = cache[line].eng;
  if (!d) eng = enum_parse(EnumType::Engine, eng_name);
  if (!eng) {
    std::vector<std::string> engines;
    for (const auto& m : enum_members(EnumType::Engine)) engines.emplace_back(m.name);
    fail(at, fmt::format("unknown engine '{}'{} (engines: {})", eng_name,
                         did_you_mean(eng_name, engines), engines_text(0x3f)));
  }
  const Engine engine = static_cast<Engine>(*eng);
  if (!d) d = find_by_mnemonic(mn, engine);
  if (d && !cache[line].d) cache[line].eng = *eng, cache[line].d = d;
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
  LineInst& li = cache[line];
  if (li.bound_at != UINT32_MAX) {
    std::copy_n(bound_.begin() + li.bound_at, n, bound.begin());
  } else {
    bind(s, *d, dotted, bound.data());
    li.bound_at = static_cast<uint32_t>(bound_.size());
    bound_.insert(bound_.end(), bound.begin(), bound.begin() + long(n));
  }
  // Label operands queue fixups as they are converted: take them back if the instruction
  // fails after that (the fixup would name an instruction that is never added).
  struct PendingFixups {
    Labels& labels;
    size_t before;
    bool keep = false;
    ~PendingFixups() {
      if (!keep) labels.drop_fixups(before);
    }
  } pending{labels_, labels_.fixup_count()};
  // Built in place at the end of its stream (not moved there: an Inst is a few hundred bytes,
  // small vectors included), and taken back if it fails. The stream grows 4x at a time: each
  // growth moves every instruction so far, and 2x moved each one about twice on average. Spare
  // capacity is never touched, so it costs address space, not memory.
  std::vector<Inst>& stream = mod_.streams[*eng];
  const uint32_t index = static_cast<uint32_t>(stream.size());
  if (stream.size() == stream.capacity()) stream.reserve(std::max<size_t>(64, stream.size() * 4));
  struct PendingInst {
    std::vector<Inst>& stream;
    bool keep = false;
    ~PendingInst() {
      if (!keep) stream.pop_back();
    }
  } pending_inst{stream};
  Inst& in = stream.emplace_back();
  in.op = d->op;
  in.engine = engine;
  in.ops.reserve(n); // each operand appended in table order, written once (they are big)
  static_assert(kMaxOps <= 64);
  uint64_t raw = 0; // bit k: operand k was written as ap(...)
  for (size_t k = 0; k < n; ++k) {
    const OperandDesc& od = d->operands[k];
    if (bound[k] == kNone) {
      if (!od.optional) {
        const Token last = src_.file().token(s.last);
        fail(Loc{at.file, last.line, last.col + static_cast<uint32_t>(last.end - last.begin),
                 at.frame},
             fmt::format("missing operand '{}' of {} (operands: {})", od.name, dotted,
                         operand_list(*d)));
      }
      // The row's defaults, made once (default_operand parses the table's text).
      if (!li.defaults) {
        std::vector<Operand>& defs = defaults_[d];
        if (defs.empty())
          for (const OperandDesc& o : d->operands) defs.push_back(default_operand(o));
        li.defaults = &defs;
      }
      in.ops.push_back((*li.defaults)[k]);
      continue;
    }
    bool r = false;
    in.ops.push_back(ops_.convert(*d, k, bound[k], engine, index, r));
    if (r) raw |= uint64_t(1) << k;
    if (!gen_allows(od.gens, mod_.target) && !is_default(od, in.ops[k]))
      src_.fail_at(bound[k],
                   fmt::format("operand '{}' of {} is not available on {} (available on: {})",
                               od.name, dotted, name_of(mod_.target), gens_text(od.gens)));
    else if (od.kind == OperandKind::Scalar && !in.ops[k].is_ap &&
             !gen_allows(od.imm_gens, mod_.target) && !is_default(od, in.ops[k]))
      src_.fail_at(bound[k],
                   fmt::format("an immediate '{}' of {} is not available on {} (available "
                               "on: {}); use a [P, 1] tile",
                               od.name, dotted, name_of(mod_.target), gens_text(od.imm_gens)));
  }
  for (uint32_t y = 0; y < s.nsyncs; ++y) sync_.parse(src_.file().syncs[s.syncs + y], in);
  ops_.check_shapes(in, raw, bound.data(), at);
  // The table's payload rules (the generation rules were checked above, with better messages).
  if (auto err = check_inst(in)) fail(at, *err);
  if (++total_insts_ > opts_.max_instructions) {
    rep_.report(
        at, fmt::format("the kernel exceeds the limit of {} instructions", opts_.max_instructions));
    throw Abort{};
  }
  pending_inst.keep = true;
  pending.keep = true;
  sync_.commit(Engine(*eng), index);
  if (sym_.autosync()) sync_.autosync(Engine(*eng), index, at);
  labels_.attach(Engine(*eng), index);
  mod_.debug[*eng].push_back(DebugLoc{at.file, at.line, at.col, at.frame});
}

} // namespace nisa::nasm
