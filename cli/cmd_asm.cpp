// nisa asm IN.nasm -o OUT.nbin [-D NAME=VALUE]... [-I DIR]... [--target trn2]
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "asm/asm.h"
#include "asm/diagnostics_json.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "isa/object.h"
#include "isa/output_file.h"
#include "isa/quote.h"

namespace nisa::cli {

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
      "json: the diagnostics as one JSON document on stderr (schema in docs/asm.md)");
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
  if (auto err = save_object(output, *r.module)) {
    std::fprintf(stderr, "nisa asm: %s\n", err->str().c_str());
    return 1;
  }
  // The process ends here: leave the module to the OS instead of freeing its ~10^5 small
  // blocks one by one (as clang's -disable-free does). Kept reachable for leak checkers.
  static const nasm::AsmResult* kept = new nasm::AsmResult(std::move(r));
  (void)kept;
  return 0;
}

} // namespace nisa::cli
