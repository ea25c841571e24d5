// nisa disasm IN.nbin [--show-encoding] [--engine E]
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "isa/object.h"
#include "isa/print.h"

namespace nisa::cli {

int cmd_disasm(int argc, char** argv) {
  po::options_description opts("nisa disasm IN.nbin [options]");
  std::string input, engine;
  opts.add_options()("help,h", "show this help")("show-encoding",
                                                 "print each instruction's bytes beside it")(
      "engine", po::value(&engine), "print one engine's stream: pe act dve pool sp cc")(
      "no-source", "omit the source-line comments");
  po::variables_map vm;
  if (auto rc = parse_args("disasm", argc, argv, opts, input, "no input file", vm)) return *rc;
  ModulePrintOptions po_;
  po_.show_encoding = vm.count("show-encoding") > 0;
  po_.source_comments = vm.count("no-source") == 0;
  if (!engine.empty()) {
    auto e = enum_parse(EnumType::Engine, engine);
    if (!e) {
      std::fprintf(stderr, "nisa disasm: unknown engine '%s' (pe act dve pool sp cc)\n",
                   engine.c_str());
      return 1;
    }
    po_.engine = static_cast<Engine>(*e);
  }
  auto m = load_object(input);
  if (!m) {
    std::fprintf(stderr, "nisa disasm: %s\n", m.error().str().c_str());
    return 1;
  }
  std::cout << print_module(*m, po_);
  return 0;
}

} // namespace nisa::cli
