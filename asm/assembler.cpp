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

namespace nisa::nasm {
namespace fs = std::filesystem;

namespace {

bool read_text(const std::string& path, std::string& out) {
  // Regular files only (never a device or a FIFO), of a sane size.
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) > (64u << 20)) return false;
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  // One read into a string of the right size (the file may still change under us: read what
  // is there, up to the limit).
  out.assign(std::min<uintmax_t>(fs::file_size(path, ec), 64u << 20), '\0');
  f.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<size_t>(f.gcount()));
  return !f.bad();
}

std::string unquote(std::string_view s) {
  std::string out;
  for (size_t k = 1; k + 1 < s.size(); ++k) {
    if (s[k] == '\\' && k + 2 < s.size()) {
      char c = s[++k];
      out.push_back(c == 'n' ? '\n' : c == 't' ? '\t' : c);
    } else {
      out.push_back(s[k]);
    }
  }
  return out;
}

std::string did_you_mean(std::string_view w, const std::vector<std::string>& cands) {
  std::string s = suggest(w, cands);
  return s.empty() ? "" : fmt::format("; did you mean '{}'?", s);
}

std::vector<std::string> enum_names(EnumType t) {
  std::vector<std::string> v;
  for (const auto& m : enum_members(t)) v.emplace_back(m.name);
  return v;
}

// Read-only names the assembler defines from the target (docs/asm.md §3).
bool is_predefined(std::string_view name) { return name == "TARGET" || name == "GEN"; }

// A local label (`.Lname`) is keyed by the expansion frame that defines it.
bool is_local_label(std::string_view name) { return name.starts_with(".L") && name.size() > 2; }
std::string local_key(std::string_view name, int32_t frame) {
  return fmt::format("{}@{}", name, frame);
}
// The name the module (and the disassembler) shows: a plain identifier, unique per frame.
std::string local_module_name(std::string_view name, int32_t frame) {
  return frame < 0 ? fmt::format("L{}", name.substr(2))
                   : fmt::format("L{}_{}", name.substr(2), frame);
}

std::string join(const std::vector<std::string>& v, std::string_view sep = ", ") {
  std::string out;
  for (size_t k = 0; k < v.size(); ++k) out += (k ? std::string(sep) : "") + v[k];
  return out;
}

} // namespace

std::string Value::str() const {
  switch (kind) {
  case Int: return std::to_string(i);
  case Float: return fmt::format("{}", f);
  case Name: return s;
  case Str: return "\"" + s + "\"";
  case List: {
    std::vector<std::string> v;
    for (const auto& e : list) v.push_back(e.str());
    return "[" + join(v) + "]";
  }
  case Ap: return "<access pattern>";
  }
  return "?";
}

// ---- set-up and results ---------------------------------------------------------------------

Assembler::Assembler(const AsmOptions& opts) : opts_(opts) {
  if (opts.target) {
    mod_.target = *opts.target;
    target_set_by_option_ = true;
  }
}

AsmResult Assembler::run_file(const std::string& path) {
  std::string text;
  if (!read_text(path, text)) {
    Diagnostic d;
    d.file = path;
    d.message = "cannot read file";
    AsmResult r;
    r.diags.push_back(d);
    return r;
  }
  std::error_code ec;
  include_stack_.push_back(fs::weakly_canonical(path, ec).string());
  return run(std::move(text), path);
}

AsmResult Assembler::run_string(std::string_view text, const std::string& name) {
  return run(std::string(text), name);
}

AsmResult Assembler::run(std::string text, const std::string& name) {
  for (const auto& [k, v] : opts_.defines) {
    auto num = parse_number_text(v);
    Value val;
    if (num) {
      val = *num;
    } else if (!v.empty() && v[0] == '-' && parse_number_text(v.substr(1))) {
      val = *parse_number_text(v.substr(1));
      if (val.kind == Value::Int)
        val.i = -val.i;
      else
        val.f = -val.f;
    } else if (!v.empty() && (std::isalpha(static_cast<unsigned char>(v[0])) || v[0] == '_') &&
               std::all_of(v.begin(), v.end(), [](char c) {
                 return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
               })) {
      val = Value::of_name(v);
    } else {
      report_global(fmt::format("-D {}={}: the value must be a number or a name", k, v));
      continue;
    }
    if (is_predefined(k)) {
      report_global(fmt::format("-D {}: '{}' is predefined from the target; use --target", k, k));
      continue;
    }
    defines_[k] = {val, false};
  }
  alloc_ = std::make_unique<Allocator>(mod_.target);
  set_target_symbols();
  try {
    uint32_t u = load_unit(name, std::move(text));
    if (units_[u].ok) {
      enter_unit(u);
      exec_range(u, 0, units_[u].parsed.stmts.size());
    }
  } catch (const Abort&) {
  }
  return finish();
}

AsmResult Assembler::finish() {
  try {
    for (const auto& [name, dv] : defines_) {
      if (dv.second) continue;
      std::vector<std::string> params;
      for (const auto& [n, v] : globals_)
        if (v.kind == Var::Param) params.push_back(n);
      std::sort(params.begin(), params.end());
      report_global(fmt::format("unknown -D name '{}'{} (the kernel's parameters: {})", name,
                                did_you_mean(name, params),
                                params.empty() ? "none" : join(params)));
    }
    lower_afters();
    for (const auto& fx : fixups_) {
      std::string shown = fx.label;
      const LabelDef* def = find_label(fx, shown);
      if (!def) {
        std::vector<std::string> names;
        for (const auto& [n, l] : labels_)
          names.push_back(n.find('@') == std::string::npos ? n : n.substr(0, n.find('@')));
        report(fx.loc,
               fmt::format("undefined label '{}'{}", fx.label, did_you_mean(fx.label, names)));
        continue;
      }
      const int e = static_cast<int>(fx.engine);
      uint32_t target = def->at[e];
      mod_.streams[e][fx.inst].ops[fx.op].i = target;
      auto& labels = mod_.labels[e];
      if (!shown.empty() && std::none_of(labels.begin(), labels.end(),
                                         [&](const Label& l) { return l.name == shown; }))
        labels.push_back({shown, target});
    }
  } catch (const Abort&) {
  }
  AsmResult r;
  r.diags = std::move(diags_);
  if (errors_ == 0) {
    mod_.frames.shrink_to_fit();
    r.module = std::move(mod_);
  }
  return r;
}

// The label a branch refers to: `engine.name` before `name`; a local `.Lname` from the
// innermost enclosing expansion (of the reference) that defines it. Sets the name to add to
// the module's labels (empty for an engine-qualified label, which is there already).
const Assembler::LabelDef* Assembler::find_label(const Fixup& fx, std::string& module_name) const {
  if (is_local_label(fx.label)) {
    for (int32_t f = fx.loc.frame;; f = mod_.frames[static_cast<size_t>(f)].parent) {
      auto it = labels_.find(local_key(fx.label, f));
      if (it != labels_.end()) {
        module_name = local_module_name(fx.label, f);
        return &it->second;
      }
      if (f < 0) return nullptr;
    }
  }
  const std::string qualified = fmt::format("{}.{}", name_of(fx.engine), fx.label);
  if (auto it = labels_.find(qualified); it != labels_.end()) {
    module_name.clear();
    return &it->second;
  }
  auto it = labels_.find(fx.label);
  return it == labels_.end() ? nullptr : &it->second;
}

uint32_t Assembler::load_unit(const std::string& display, std::string text) {
  const uint32_t id = static_cast<uint32_t>(units_.size());
  mod_.files.push_back(display);
  units_.emplace_back();
  Unit& unit = units_.back();
  unit.parsed = parse_source(display, std::move(text));
  for (const auto& e : unit.parsed.errors) {
    report(Loc{id, e.line, e.col, cur_frame_}, e.message);
    unit.ok = false;
  }
  if (!unit.ok) return id;
  match_blocks(unit, id);
  return id;
}

// Pairs every block opener with its closer once per file, so that expansion can jump over
// bodies and unterminated or stray blocks are reported even when never executed.
void Assembler::match_blocks(Unit& u, uint32_t id) {
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
        report(here(i), fmt::format("'{}' without a matching opening directive", word));
        u.ok = false;
        continue;
      }
      Open& top = stack.back();
      if (is_elif || is_else) {
        if (std::string_view(top.what) != ".if") {
          report(here(i), fmt::format("'{}' inside '{}' (opened at line {}), not inside .if", word,
                                      top.what, line_of(top.line)));
          u.ok = false;
        } else if (top.seen_else) {
          report(here(i), fmt::format("'{}' after '.else'", word));
          u.ok = false;
        } else {
          top.seen_else = is_else;
          u.branches[top.line].push_back(i);
        }
        continue;
      }
      if (std::string_view(top.closer) != closer) {
        report(here(i), fmt::format("'{}' closes '{}' opened at line {}; expected '{}'", closer,
                                    top.what, line_of(top.line), top.closer));
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
          report(here(i), fmt::format("unknown directive '{}'; did you mean '{}' (closing '{}' at "
                                      "line {})?",
                                      d, o.closer, o.what, line_of(o.line)));
      }
    report(here(o.line),
           fmt::format("unterminated '{}': no '{}' before the end of the file", o.what, o.closer));
    u.ok = false;
  }
}

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

// ---- symbols and diagnostics ----------------------------------------------------------------

const Assembler::Var* Assembler::lookup(std::string_view name) const {
  for (size_t k = nlocals_; k-- > macro_base_.back();)
    if (const Var* v = locals_[k].find(name)) return v;
  auto it = globals_.find(name);
  return it == globals_.end() ? nullptr : &it->second;
}

// lookup() for a Name node of the current unit: the global it names is remembered per node
// (an expansion evaluates the same nodes over and over).
const Assembler::Var* Assembler::lookup_node(uint32_t e, std::string_view name) {
  for (size_t k = nlocals_; k-- > macro_base_.back();)
    if (const Var* v = locals_[k].find(name)) return v;
  if (global_cache_.size() <= cur_unit_) global_cache_.resize(cur_unit_ + 1);
  auto& cache = global_cache_[cur_unit_];
  if (cache.size() <= e) cache.resize(file_->nodes.size(), nullptr);
  if (const Var* v = cache[e]) return v;
  auto it = globals_.find(name);
  if (it == globals_.end()) return nullptr;
  return cache[e] = &it->second;
}

std::vector<std::string> Assembler::visible_names() const {
  std::vector<std::string> v;
  for (size_t k = macro_base_.back(); k < nlocals_; ++k)
    for (const auto& [n, x] : locals_[k].vars) v.push_back(n);
  for (const auto& [n, x] : globals_) v.push_back(n);
  for (const auto& [n, x] : tensors_) v.push_back(n);
  return v;
}

const TensorDecl* Assembler::find_tensor(std::string_view name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

void Assembler::declare(std::string_view name, Loc l, const char* what) {
  if (is_predefined(name))
    fail(l, fmt::format("'{}' is predefined from the target (TARGET = {}, GEN = {}); it cannot be "
                        "redefined",
                        name, name_of(mod_.target), static_cast<int>(mod_.target)));
  auto it = symbols_.find(name);
  if (it != symbols_.end())
    fail(l, fmt::format("duplicate symbol '{}' ({}); first defined at {}:{}:{}", name, what,
                        fs::path(mod_.files[it->second.file]).filename().string(), it->second.line,
                        it->second.col));
  symbols_[std::string(name)] = l;
}

int32_t Assembler::push_frame(ExpansionFrame::Kind k, std::string what, Loc at) {
  ExpansionFrame f;
  f.kind = k;
  f.what = std::move(what);
  f.file = at.file;
  f.line = at.line;
  f.col = at.col;
  f.parent = at.frame;
  mod_.frames.push_back(std::move(f));
  return static_cast<int32_t>(mod_.frames.size() - 1);
}

// Nested loops multiply: bound the whole expansion, not only each loop and the instructions.
void Assembler::count_step(const Loc& at) {
  report(at, fmt::format("the expansion exceeds the limit of {} steps (statements executed and "
                         "loop iterations; nested loops multiply)",
                         opts_.max_steps));
  throw Abort{};
}

void Assembler::report(const Loc& l, const std::string& msg) {
  Diagnostic d;
  d.file = l.file < mod_.files.size() ? mod_.files[l.file] : "<input>";
  d.line = l.line;
  d.col = l.col;
  d.message = msg;
  if (l.file < units_.size()) d.source_line = std::string(units_[l.file].parsed.line_text(l.line));
  // The same error from every iteration of a loop is reported once; past a bound, repeating
  // errors stop the assembly (each one may cost a did-you-mean search).
  for (const auto& o : diags_)
    if (o.file == d.file && o.line == d.line && o.col == d.col && o.message == d.message) {
      if (++repeats_ < kMaxRepeatedErrors) return;
      Diagnostic stop;
      stop.message = fmt::format("{} repeated errors (in a loop?); stopping", repeats_);
      diags_.push_back(stop);
      ++errors_;
      throw Abort{};
    }
  for (int32_t f = l.frame; f >= 0 && f < static_cast<int32_t>(mod_.frames.size());
       f = mod_.frames[f].parent) {
    const auto& fr = mod_.frames[f];
    const std::string where = fmt::format("{}:{}:{}", mod_.files[fr.file], fr.line, fr.col);
    switch (fr.kind) {
    case ExpansionFrame::Macro:
      d.notes.push_back(fmt::format("in expansion of macro '{}' at {}", fr.what, where));
      break;
    case ExpansionFrame::ForIter:
      d.notes.push_back(fmt::format("in iteration {} of .for at {}", fr.what, where));
      break;
    case ExpansionFrame::Include: d.notes.push_back(fmt::format("included from {}", where)); break;
    }
  }
  diags_.push_back(std::move(d));
  if (++errors_ >= opts_.max_errors) {
    Diagnostic stop;
    stop.message = fmt::format("too many errors ({}); stopping", errors_);
    diags_.push_back(stop);
    throw Abort{};
  }
}

void Assembler::report_global(const std::string& msg) {
  Diagnostic d;
  d.file = "<command line>";
  d.message = msg;
  diags_.push_back(d);
  ++errors_;
}

// ---- public API -------------------------------------------------------------------------------

std::string Diagnostic::str() const {
  std::string out;
  if (line)
    out = fmt::format("{}:{}:{}: ", file, line, col);
  else if (!file.empty())
    out = file + ": ";
  // A hostile input (a 1 MB token or line) is quoted at most a line's worth at a time.
  out += (severity == Error ? "error: " : "note: ") + elide(message, 2 * kMaxQuoted) + "\n";
  if (line && !source_line.empty()) {
    // The source line, or a window of kMaxQuoted bytes around the column.
    std::string_view src = source_line;
    size_t first = 0;
    if (src.size() > kMaxQuoted) {
      first = col > kMaxQuoted / 2 ? std::min<size_t>(col - kMaxQuoted / 2, src.size()) : 0;
      while (first > 0 && (static_cast<unsigned char>(src[first]) & 0xC0) == 0x80) --first;
    }
    const std::string shown = (first ? "..." : "") + elide(src.substr(first), kMaxQuoted);
    out += shown + "\n";
    std::string caret(first ? 3 : 0, ' ');
    for (size_t k = first + 1; k < col && k <= src.size() && k - first <= kMaxQuoted; ++k)
      caret.push_back(src[k - 1] == '\t' ? '\t' : ' ');
    out += caret + "^\n";
  }
  for (const auto& n : notes) out += "note: " + n + "\n";
  return out;
}

std::string AsmResult::diagnostics_text() const {
  std::string out;
  for (const auto& d : diags) out += d.str();
  return out;
}

AsmResult assemble_file(const std::string& path, const AsmOptions& opts) {
  Assembler a(opts);
  return a.run_file(path);
}

AsmResult assemble_string(std::string_view text, const std::string& name, const AsmOptions& opts) {
  Assembler a(opts);
  return a.run_string(text, name);
}

std::string suggest(std::string_view word, const std::vector<std::string>& candidates) {
  const size_t limit = std::clamp<size_t>(word.size() / 3 + 1, 1, 3);
  std::string best;
  size_t best_d = limit + 1;
  std::vector<size_t> prev, cur;
  for (const auto& c : candidates) {
    if (c == word) continue;
    prev.resize(c.size() + 1);
    cur.resize(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= word.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= c.size(); ++j)
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (word[i - 1] != c[j - 1])});
      std::swap(prev, cur);
    }
    const size_t d = prev[c.size()];
    // Ties: prefer the candidate of the same length (a typo rather than a missing letter).
    const bool better_tie =
        d == best_d && ((c.size() == word.size()) > (best.size() == word.size()) ||
                        ((c.size() == word.size()) == (best.size() == word.size()) && c < best));
    if (d < best_d || better_tie) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

} // namespace nisa::nasm
