#include "asm/assembler.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/container/small_vector.hpp>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include "asm/assembler_util.h"
#include "isa/encode.h"
#include "isa/exec_kind.h"
#include "isa/limits.h"
#include "isa/quote.h"

namespace nisa::nasm {
namespace fs = std::filesystem;

using namespace detail;

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
