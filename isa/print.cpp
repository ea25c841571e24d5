#include "isa/print.h"

#include <fmt/format.h>

#include <cmath>

#include "isa/encode.h"

namespace nisa {
namespace {

std::string sem_name(uint32_t i, const PrintContext& ctx) {
  if (ctx.module && i < ctx.module->sems.size()) return ctx.module->sems[i].name;
  return fmt::format("s{}", i);
}
std::string group_name(uint32_t i, const PrintContext& ctx) {
  if (ctx.module && i < ctx.module->groups.size()) return ctx.module->groups[i].name;
  return fmt::format("g{}", i);
}
std::string label_text(Engine e, int64_t index, const PrintContext& ctx) {
  if (ctx.module)
    for (const auto& l : ctx.module->labels[static_cast<int>(e)])
      if (l.index == index) return l.name;
  return std::to_string(index);
}

std::string print_operand(const OperandDesc& d, const Operand& o, Engine e,
                          const PrintContext& ctx) {
  switch (d.kind) {
  case OperandKind::Dst:
  case OperandKind::Src: return print_ap(o.ap);
  case OperandKind::Scalar: return o.is_ap ? print_ap(o.ap) : print_float(o.f);
  case OperandKind::ImmF: return print_float(o.f);
  case OperandKind::ImmI:
  case OperandKind::Bool: return std::to_string(o.i);
  case OperandKind::Enum: {
    std::string_view n = enum_name(d.enum_type, static_cast<uint8_t>(o.i));
    return n.empty() ? std::to_string(o.i) : std::string(n);
  }
  case OperandKind::Reg: return fmt::format("r{}", o.i);
  case OperandKind::RegOrImm: return o.is_reg ? fmt::format("r{}", o.i) : std::to_string(o.i);
  case OperandKind::Queue: return fmt::format("q{}", o.i);
  case OperandKind::Sem: return sem_name(static_cast<uint32_t>(o.i), ctx);
  case OperandKind::Label: return label_text(e, o.i, ctx);
  case OperandKind::Group: return group_name(static_cast<uint32_t>(o.i), ctx);
  case OperandKind::Pattern: {
    std::string s = "[";
    for (int k = 0; k < o.pat.n; ++k)
      s += fmt::format("{}[{}, {}]", k ? ", " : "", o.pat.d[k][0], o.pat.d[k][1]);
    return s + "]";
  }
  case OperandKind::Mask: return fmt::format("[{}]", fmt::join(o.mask.v, ", "));
  }
  return "?";
}

} // namespace

std::string print_float(float f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
  std::string s = fmt::format("{}", f);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string print_ap(const AccessPattern& ap) {
  std::string s = fmt::format("ap({}, {}, {}, {}, {:#x}, [", name_of(ap.space),
                              dtype_name(ap.dtype), ap.part_start, ap.part_count, ap.offset);
  for (int k = 0; k < ap.ndims; ++k)
    s += fmt::format("{}[{}, {}]", k ? ", " : "", ap.dims[k].stride, ap.dims[k].count);
  s += "]";
  if (ap.part_stride != 0) s += fmt::format(", pstride={}", ap.part_stride);
  if (ap.dyn == DynKind::reg) s += fmt::format(", dyn=r{}", ap.dyn_reg);
  if (ap.dyn == DynKind::vec) s += ", dyn=vec";
  if (ap.dyn_mult != 0) s += fmt::format(", mult={}", ap.dyn_mult);
  if (ap.dyn_limit != 0) s += fmt::format(", limit={}", ap.dyn_limit);
  if (ap.vidx != VecIndex{})
    s += fmt::format(", vidx=[{}, {}, {}, {}]", ap.vidx.part_start, ap.vidx.part_count,
                     ap.vidx.offset, dtype_name(ap.vidx.dtype));
  return s + ")";
}

std::string print_inst(const Inst& in, const PrintContext& ctx) {
  const InstDesc& d = desc(in.op);
  std::string s = fmt::format("{}.{}", name_of(in.engine), d.mnemonic);
  // Positional up to the last required operand (so positions stay aligned), then named
  // operands that differ from their defaults.
  size_t last_required = 0;
  for (size_t k = 0; k < d.operands.size(); ++k)
    if (!d.operands[k].optional) last_required = k + 1;
  bool first = true;
  for (size_t k = 0; k < d.operands.size() && k < in.ops.size(); ++k) {
    const OperandDesc& od = d.operands[k];
    const Operand& o = in.ops[k];
    if (k >= last_required && (is_default(od, o) || !o.present)) continue;
    if (k < last_required && !o.present) continue; // cannot happen for valid records
    s += first ? " " : ", ";
    first = false;
    if (k >= last_required) s += fmt::format("{}=", od.name);
    s += print_operand(od, o, in.engine, ctx);
  }
  if (!in.waits.empty()) {
    s += " @wait(";
    for (size_t k = 0; k < in.waits.size(); ++k)
      s += fmt::format("{}{} {} {}", k ? ", " : "", sem_name(in.waits[k].sem, ctx),
                       name_of(in.waits[k].cmp), in.waits[k].value);
    s += ")";
  }
  if (!in.signals.empty()) {
    s += " @signal(";
    for (size_t k = 0; k < in.signals.size(); ++k) {
      s += (k ? ", " : "") + sem_name(in.signals[k].sem, ctx);
      if (in.signals[k].delta != 1) s += fmt::format(" += {}", in.signals[k].delta);
    }
    s += ")";
  }
  return s;
}

namespace {

std::string print_decls(const Module& m) {
  std::string s;
  if (!m.kernel.empty()) s += fmt::format(".kernel {}\n", m.kernel);
  s += fmt::format(".target {}\n", name_of(m.target));
  if (m.ranks.value) s += fmt::format(".ranks {}\n", m.ranks.value);
  if (m.lnc.value) s += fmt::format(".lnc {}\n", m.lnc.value);
  for (const auto& [k, v] : m.params) s += fmt::format(".param {} = {}\n", k, v);
  for (const auto& t : m.tensors) {
    s += fmt::format(".{} {} : {}[{}] {} @ ", name_of(t.space), t.name, dtype_name(t.dtype),
                     fmt::join(t.shape, ", "), name_of(t.role));
    s += t.part_start ? fmt::format("[{}, {:#x}]\n", t.part_start, t.address)
                      : fmt::format("{:#x}\n", t.address);
  }
  for (const auto& sem : m.sems)
    s += sem.init ? fmt::format(".sem {} = {}\n", sem.name, sem.init)
                  : fmt::format(".sem {}\n", sem.name);
  for (const auto& g : m.groups) {
    s += fmt::format(".group {} = [", g.name);
    for (size_t k = 0; k < g.groups.size(); ++k)
      s += fmt::format("{}[{}]", k ? ", " : "", fmt::join(g.groups[k], ", "));
    s += "]\n";
  }
  return s;
}

std::string source_comment(const Module& m, int e, size_t i) {
  const auto& dbg = m.debug[e];
  if (i >= dbg.size() || dbg[i].file >= m.files.size()) return "";
  std::string s = fmt::format("{}:{}", m.files[dbg[i].file], dbg[i].line);
  for (int32_t f = dbg[i].frame; f >= 0 && f < static_cast<int32_t>(m.frames.size());
       f = m.frames[f].parent) {
    const auto& fr = m.frames[f];
    if (fr.kind == ExpansionFrame::ForIter) s += fmt::format(" [{}]", fr.what);
    if (fr.kind == ExpansionFrame::Macro) s += fmt::format(" [macro {}]", fr.what);
  }
  return s;
}

} // namespace

std::string print_module(const Module& m, const ModulePrintOptions& opts) {
  std::string s = print_decls(m);
  PrintContext ctx{&m};
  for (int e = 0; e < kNumEngines; ++e) {
    if (opts.engine && static_cast<int>(*opts.engine) != e) continue;
    const auto& stream = m.streams[e];
    const auto& labels = m.labels[e];
    if (stream.empty() && labels.empty()) continue;
    const std::string eng(name_of(static_cast<Engine>(e)));
    s += fmt::format("\n; ---- {} ({} instructions)\n", eng, stream.size());
    for (size_t i = 0; i <= stream.size(); ++i) {
      // Engine-qualified labels: the same name may mark different indices on each engine.
      for (const auto& l : labels)
        if (l.index == i) s += fmt::format("{}.{}:\n", eng, l.name);
      if (i == stream.size()) break;
      std::string line = "        " + print_inst(stream[i], ctx);
      std::string comment;
      if (opts.show_encoding) {
        std::vector<uint8_t> bytes;
        encode_inst(stream[i], bytes);
        std::string hex;
        for (size_t k = 0; k < bytes.size(); ++k)
          hex += fmt::format("{}{:#04x}", k ? "," : "", bytes[k]);
        comment = fmt::format("encoding: [{}]", hex);
      }
      if (opts.source_comments) {
        std::string src = source_comment(m, e, i);
        if (!src.empty()) comment += (comment.empty() ? "" : "  ") + src;
      }
      if (!comment.empty()) line += "  ; " + comment;
      s += line + "\n";
    }
  }
  return s;
}

} // namespace nisa
