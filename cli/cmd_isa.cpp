// nisa isa [NAME...] [--format md|text|encoding|json|tmlanguage]: the instruction reference
// generated from the table, whole or of the instructions named.
#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "asm/asm.h"
#include "cli/commands.h"
#include "cli/isa_formats.h"
#include "isa/reference.h"

namespace po = boost::program_options;

namespace nisa::cli {
namespace {

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string s = nasm::suggest(word, candidates);
  return s.empty() ? "" : fmt::format("; did you mean '{}'?", s);
}

// The rows NAME stands for, appended to `out`: a mnemonic (every engine's row of it: transpose
// is pe's and dve's), ENGINE.MNEMONIC (as written in assembly), or the table's ident
// (pe_transpose). An error message when NAME is none of them.
std::string lookup(const std::string& name, std::vector<const InstDesc*>& out) {
  std::vector<const InstDesc*> rows;
  if (const size_t dot = name.find('.'); dot != std::string::npos) {
    const std::string eng = name.substr(0, dot), mn = name.substr(dot + 1);
    std::vector<std::string> engines;
    for (const auto& m : enum_members(EnumType::Engine)) engines.emplace_back(m.name);
    const auto e = enum_parse(EnumType::Engine, eng);
    if (!e)
      return fmt::format("unknown engine '{}' in '{}'{} (engines: pe, act, dve, pool, sp, cc)", eng,
                         name, did_you_mean(eng, engines));
    if (const InstDesc* d = find_by_mnemonic(mn, static_cast<Engine>(*e))) {
      out.push_back(d);
      return "";
    }
    std::vector<std::string> on_engine;
    for (const auto& d : inst_table())
      if (d.engines & (1u << *e)) on_engine.emplace_back(d.mnemonic);
    const auto elsewhere = find_all_by_mnemonic(mn);
    if (!elsewhere.empty()) {
      std::string where;
      for (int k = 0; k < kNumEngines; ++k)
        if (elsewhere.front()->engines & (1u << k))
          where += (where.empty() ? "" : ", ") + std::string(name_of(Engine(k)));
      return fmt::format("'{}': {} is not an instruction of {} (engines: {})", name, mn, eng,
                         where);
    }
    return fmt::format("unknown instruction '{}' on {}{}", mn, eng, did_you_mean(mn, on_engine));
  }
  rows = find_all_by_mnemonic(name);
  if (rows.empty())
    for (const auto& d : inst_table())
      if (d.ident == name) rows.push_back(&d);
  if (rows.empty()) {
    std::vector<std::string> names;
    for (const auto& d : inst_table()) {
      names.emplace_back(d.mnemonic);
      if (d.ident != d.mnemonic) names.emplace_back(d.ident);
    }
    return fmt::format("unknown instruction '{}'{}", name, did_you_mean(name, names));
  }
  out.insert(out.end(), rows.begin(), rows.end());
  return "";
}

} // namespace

int cmd_isa(int argc, char** argv) {
  std::string format = "text";
  std::vector<std::string> names;
  po::options_description opts(
      "usage: nisa isa [NAME...] [--format md|text|encoding|json|tmlanguage]\n\n"
      "Prints the instruction reference generated from isa/insts.def and isa/formulas.def "
      "(docs/isa.md is the md output; encoding prints the per-"
      "instruction byte layouts of docs/encoding.md; json: the table as JSON, docs/isa-json.md; "
      "tmlanguage: the TextMate grammar of .nasm, docs/editors.md).\n\n"
      "NAME: only these instructions (and, in text and md, the enumerations their operands "
      "take, e.g. the activation functions' formulas for `activation`), in the order given. A "
      "NAME is a mnemonic (`activation`; `transpose` is pe's and dve's), an ENGINE.MNEMONIC as "
      "written in assembly (`act.activation`, `pe.transpose`) or the table's identifier "
      "(`pe_transpose`). An unknown NAME is an error (exit 1).\n\noptions");
  opts.add_options()("help,h", "show this help")(
      "format,f", po::value<std::string>(&format)->default_value("text"),
      "md, text, encoding, json or tmlanguage");
  po::options_description hidden;
  hidden.add_options()("name", po::value(&names)->composing());
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("name", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "nisa isa: %s\n", e.what());
    return 1;
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  static constexpr const char* kFormats = "md, text, encoding, json or tmlanguage";
  if (format != "md" && format != "text" && format != "encoding" && format != "json" &&
      format != "tmlanguage") {
    std::fprintf(stderr, "nisa isa: unknown --format '%s' (%s)\n", format.c_str(), kFormats);
    return 1;
  }
  std::vector<const InstDesc*> only;
  for (const std::string& n : names) {
    std::vector<const InstDesc*> rows;
    if (const std::string err = lookup(n, rows); !err.empty()) {
      std::fprintf(stderr, "nisa isa: %s\n", err.c_str());
      return 1;
    }
    for (const InstDesc* d : rows) // each instruction once, where it is first named
      if (std::find(only.begin(), only.end(), d) == only.end()) only.push_back(d);
  }
  if (!only.empty() && format == "tmlanguage") {
    std::fprintf(stderr, "nisa isa: the tmlanguage grammar covers every instruction; NAME "
                         "selects instructions for md, text, encoding and json\n");
    return 1;
  }
  if (format == "encoding") {
    std::cout << encoding_reference(only);
    return 0;
  }
  if (format == "json") {
    std::cout << isa_json(only);
    return 0;
  }
  if (format == "tmlanguage") {
    std::cout << tmlanguage_json();
    return 0;
  }
  std::cout << isa_reference(format == "md", only);
  return 0;
}

} // namespace nisa::cli
