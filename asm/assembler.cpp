// The assembler's entry: a run sets up the parts, expands the main unit and finishes the
// module (docs/asm.md).
#include "asm/assembler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <new>
#include <optional>

#include "asm/assembler_util.h"
#include "isa/error.h"

namespace nisa::nasm {
namespace fs = std::filesystem;
using namespace detail;

Assembler::Assembler(const AsmOptions& opts) : opts_(opts) {
  if (opts_.times) src_.parse_time = &opts_.times->parse;
}

AsmResult Assembler::run_file(const std::string& path) {
  std::string text;
  std::optional<std::string> why;
  {
    const Stopwatch watch(opts_.times ? &opts_.times->read : nullptr);
    why = read_text(path, text);
  }
  if (why) {
    Diagnostic d;
    d.file = path;
    d.message = "cannot read file: it " + *why;
    AsmResult r;
    r.diags.push_back(d);
    return r;
  }
  std::error_code ec;
  expander_.set_main_path(fs::weakly_canonical(path, ec).string());
  expander_.note_read(path, text);
  return run(std::move(text), path);
}

AsmResult Assembler::run_string(std::string_view text, const std::string& name) {
  return run(std::string(text), name);
}

AsmResult Assembler::run(std::string text, const std::string& name) {
  // Expansion's time is the run's less the parsing it asks for (includes are parsed on the way).
  const double parsed_before = opts_.times ? opts_.times->parse : 0;
  {
    const Stopwatch watch(opts_.times ? &opts_.times->expand : nullptr);
    expand(std::move(text), name);
  }
  if (opts_.times) opts_.times->expand -= opts_.times->parse - parsed_before;
  const Stopwatch watch(opts_.times ? &opts_.times->resolve : nullptr);
  return finish();
}

void Assembler::expand(std::string text, const std::string& name) {
  add_defines();
  decls_.start();
  try {
    expander_.count_lexed(text.size(), Loc{});
    uint32_t u = src_.load(name, std::move(text));
    if (src_.unit(u).ok) {
      src_.enter(u);
      expander_.exec_range(u, 0, src_.unit(u).parsed.stmts.size());
    }
  } catch (const Abort&) {
  }
}

void Assembler::add_defines() {
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
      rep_.report_global(fmt::format("-D {}={}: the value must be a number or a name", k, v));
      continue;
    }
    if (is_predefined(k)) {
      rep_.report_global(
          fmt::format("-D {}: '{}' is predefined from the target; use --target", k, k));
      continue;
    }
    sym_.add_define(k, val);
  }
}

AsmResult Assembler::finish() {
  try {
    for (const std::string& name : sym_.unused_defines()) {
      const std::vector<std::string> params = sym_.param_names();
      rep_.report_global(fmt::format("unknown -D name '{}'{} (the kernel's parameters: {})", name,
                                     did_you_mean(name, params),
                                     params.empty() ? "none" : join(params)));
    }
    sync_.lower_afters();
    labels_.resolve();
  } catch (const Abort&) {
  }
  AsmResult r;
  r.diags = rep_.take();
  r.read_files = std::move(expander_.read_files());
  r.absent_files = std::move(expander_.absent_files());
  if (rep_.errors() == 0) {
    mod_.frames.shrink_to_fit();
    r.module = std::move(mod_);
  }
  return r;
}

// ---- public API -------------------------------------------------------------------------------

// An allocation that fails is an error that says what was assembled and how big it is (the
// assembler's own memory is gone by then).
[[noreturn]] static void out_of_memory(const std::string& name, uintmax_t bytes) {
  throw HostError(fmt::format("out of memory: assembling {} ({} bytes of source, and its "
                              "includes and expansion)",
                              name, bytes));
}

AsmResult assemble_file(const std::string& path, const AsmOptions& opts) {
  try {
    Assembler a(opts);
    return a.run_file(path);
  } catch (const std::bad_alloc&) {
    std::error_code ec;
    const uintmax_t size = fs::file_size(path, ec);
    out_of_memory(path, ec ? 0 : size);
  }
}

AsmResult assemble_string(std::string_view text, const std::string& name, const AsmOptions& opts) {
  try {
    Assembler a(opts);
    return a.run_string(text, name);
  } catch (const std::bad_alloc&) {
    out_of_memory(name, text.size());
  }
}

} // namespace nisa::nasm
