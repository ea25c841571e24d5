// nisa asm IN.nasm -o OUT.nbin [-D NAME=VALUE]... [-I DIR]... [--target trn2]
#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "asm/asm.h"
#include "asm/diagnostics_json.h"
#include "asm/token.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "isa/object.h"
#include "isa/output_file.h"
#include "isa/print.h"
#include "isa/quote.h"

namespace nisa::cli {

namespace {
using Clock = std::chrono::steady_clock;
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// --time-report: where the time went, per phase, and a native baseline of the same run: one
// pass of the assembler's tokenizer over the expanded listing (`nisa disasm --no-source`: one
// line per emitted instruction, every operand spelled out), the least any tool reading that
// program as text pays. Lines "NAME MS ms" for bench/asm_process.py.
void time_report(const Module& m, const nasm::AsmTimes& t, double assemble, double encode,
                 double write, size_t object_bytes) {
  size_t insts = 0;
  for (const auto& s : m.streams) insts += s.size();
  ModulePrintOptions po;
  po.source_comments = false;
  const std::string listing = print_module(m, po);
  size_t tokens = 0;
  double lex = 1e30; // the best of a few passes: a cold pass would measure page faults
  for (int k = 0; k < 5; ++k) {
    const auto t0 = Clock::now();
    nasm::Lexer lexer(listing);
    size_t n = 0;
    while (lexer.next().kind != nasm::Tok::Eof) ++n;
    lex = std::min(lex, seconds(Clock::now() - t0));
    tokens = n;
  }
  const double other = assemble - t.read - t.parse - t.expand - t.resolve;
  const double total = assemble + encode + write;
  auto line = [](const char* name, double s, const char* what) {
    std::fprintf(stderr, "  %-10s %9.3f ms  %s\n", name, s * 1e3, what);
  };
  std::fprintf(stderr, "nisa asm: time report: %zu instructions, %zu object bytes\n", insts,
               object_bytes);
  line("read", t.read, "the main file");
  line("parse", t.parse, "lexing and parsing every unit");
  line("expand", t.expand, "blocks, loops, macros, expressions, operands, checks");
  line("resolve", t.resolve, "labels, @after edges, the module finished");
  line("other", other, "set-up and teardown of the assembler");
  line("encode", encode, "the object's bytes");
  line("write", write, "the file");
  line("total", total, "in process, from assembling to the file written");
  std::fprintf(stderr,
               "  %-10s %9.3f ms  tokenizer over the expanded listing (%zu bytes, %zu tokens)\n",
               "baseline", lex * 1e3, listing.size(), tokens);
  std::fprintf(stderr, "  per instruction: %.3f us in process, baseline %.3f us (%.1fx)\n",
               insts ? total * 1e6 / double(insts) : 0.0, insts ? lex * 1e6 / double(insts) : 0.0,
               lex > 0 ? total / lex : 0.0);
}
} // namespace

int cmd_asm(int argc, char** argv) {
  po::options_description opts("nisa asm IN.nasm [-o OUT.nbin] [options]");
  std::string input, output, target, diag_format = "text";
  std::vector<std::string> defines, includes;
  opts.add_options()("help,h", "show this help")("output,o", po::value(&output),
                                                 "output object (default: IN with .nbin)")(
      "define,D", po::value(&defines)->composing(), "NAME=VALUE: override a .param")(
      "include,I", po::value(&includes)->composing(),
      "DIR: search .include files here (then, installed, <prefix>/share/nisa/kernels_asm)")(
      "target", po::value(&target), "trn1 | trn2 | trn3 (overrides .target; default trn2)")(
      "max-errors", po::value<int>()->default_value(20), "stop after this many errors")(
      "diagnostics-format", po::value(&diag_format)->value_name("text|json"),
      "json: the diagnostics as one JSON document on stderr (schema in docs/asm.md)")(
      "time-report", "print each phase's time to stderr, and a tokenizer pass over the "
                     "expanded listing as a baseline (bench/asm_process.py)");
  po::variables_map vm;
  if (auto rc = parse_args("asm", argc, argv, opts, input, "no input file", vm)) return *rc;
  if (diag_format != "text" && diag_format != "json") {
    std::fprintf(stderr, "nisa asm: unknown --diagnostics-format '%s' (text or json)\n",
                 elide(diag_format).c_str());
    return 1;
  }
  nasm::AsmOptions o;
  o.include_dirs = include_path(includes);
  o.max_errors = vm["max-errors"].as<int>();
  if (!parse_defines("asm", defines, o.defines)) return 1;
  if (!target.empty()) {
    auto t = enum_parse(EnumType::Target, target);
    if (!t) {
      std::fprintf(stderr, "nisa asm: unknown target '%s' (trn1, trn2, trn3)\n",
                   elide(target).c_str());
      return 1;
    }
    o.target = static_cast<Target>(*t);
  }
  const bool report = vm.count("time-report") > 0;
  nasm::AsmTimes times;
  if (report) o.times = &times;
  const auto t0 = Clock::now();
  auto r = nasm::assemble_file(input, o);
  if (diag_format == "json")
    std::fputs(nasm::diagnostics_json(r.diags).c_str(), stderr);
  else
    std::fputs(r.diagnostics_text().c_str(), stderr);
  if (!r.ok()) return 1;
  if (output.empty()) {
    const auto dot = input.rfind('.');
    const auto slash = input.rfind('/');
    output = (dot != std::string::npos && (slash == std::string::npos || dot > slash)
                  ? input.substr(0, dot)
                  : input) +
             ".nbin";
  }
  if (same_output_file(output, input)) {
    std::fprintf(stderr, "nisa asm: -o %s would overwrite the source\n", elide(output).c_str());
    return 1;
  }
  const auto t1 = Clock::now();
  const std::vector<uint8_t> bytes = write_object(*r.module);
  const auto t2 = Clock::now();
  if (auto err = write_object_file(output, bytes)) {
    std::fprintf(stderr, "nisa asm: %s\n", err->str().c_str());
    return 1;
  }
  if (report)
    time_report(*r.module, times, seconds(t1 - t0), seconds(t2 - t1), seconds(Clock::now() - t2),
                bytes.size());
  // The process ends here: leave the module to the OS instead of freeing its ~10^5 small
  // blocks one by one (as clang's -disable-free does). Kept reachable for leak checkers.
  static const nasm::AsmResult* kept = new nasm::AsmResult(std::move(r));
  (void)kept;
  return 0;
}

} // namespace nisa::cli
