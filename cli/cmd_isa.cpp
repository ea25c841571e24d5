// nisa isa [--format md|text|encoding]: the instruction reference generated from the table.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <string>

#include "cli/commands.h"
#include "cli/isa_formats.h"
#include "isa/reference.h"

namespace po = boost::program_options;

namespace nisa::cli {

int cmd_isa(int argc, char** argv) {
  std::string format = "text";
  po::options_description opts(
      "usage: nisa isa [--format md|text|encoding|json|tmlanguage]\n\n"
      "Prints the instruction reference generated from isa/insts.def "
      "(docs/isa.md is the md output; encoding prints the per-"
      "instruction byte layouts of docs/encoding.md; json: the table as JSON, docs/isa-json.md; "
      "tmlanguage: the TextMate grammar of .nasm, docs/editors.md).\n\noptions");
  opts.add_options()("help,h", "show this help")(
      "format,f", po::value<std::string>(&format)->default_value("text"),
      "md, text, encoding, json or tmlanguage");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "nisa isa: %s\n", e.what());
    return 1;
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  if (format == "encoding") {
    std::cout << encoding_reference();
    return 0;
  }
  if (format == "json") {
    std::cout << isa_json();
    return 0;
  }
  if (format == "tmlanguage") {
    std::cout << tmlanguage_json();
    return 0;
  }
  if (format != "md" && format != "text") {
    std::fprintf(stderr,
                 "nisa isa: unknown --format '%s' (md, text, encoding, json or tmlanguage)\n",
                 format.c_str());
    return 1;
  }
  std::cout << isa_reference(format == "md");
  return 0;
}

} // namespace nisa::cli
