#include "cli/common.h"

#include <charconv>
#include <iostream>

#include "asm/asm.h"
#include "interp/target.h"
#include "isa/object.h"

namespace nisa::cli {

std::optional<int> parse_args(std::string_view cmd, int argc, char** argv,
                              const po::options_description& opts, std::string& positional,
                              std::string_view missing, po::variables_map& vm) {
  po::options_description hidden;
  hidden.add_options()("positional", po::value(&positional));
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("positional", 1);
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    std::cerr << "nisa " << cmd << ": " << e.what() << "\n";
    return 1;
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  if (positional.empty()) {
    std::cerr << "nisa " << cmd << ": " << missing << " (nisa " << cmd << " --help)\n";
    return 1;
  }
  return std::nullopt;
}

bool parse_defines(std::string_view cmd, const std::vector<std::string>& defines,
                   std::vector<std::pair<std::string, std::string>>& out) {
  for (const auto& d : defines) {
    const auto eq = d.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "nisa " << cmd << ": -D '" << d << "': expected NAME=VALUE\n";
      return false;
    }
    out.emplace_back(d.substr(0, eq), d.substr(eq + 1));
  }
  return true;
}

std::optional<uint64_t> parse_count(std::string_view cmd, std::string_view opt,
                                    const std::string& text) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || text[0] == '+' || ec != std::errc() || end != text.data() + text.size()) {
    std::cerr << "nisa " << cmd << ": " << opt << " '" << text.substr(0, 40)
              << (ec == std::errc::result_out_of_range ? "': more than 18446744073709551615\n"
                                                       : "': expected a count (0, 1, 2, ...)\n");
    return std::nullopt;
  }
  return v;
}

bool split_binding(std::string_view cmd, const std::string& s, const char* opt,
                   interp::IoSpec& out) {
  const size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) {
    std::cerr << "nisa " << cmd << ": " << opt << " '" << s << "': expected NAME=FILE.npy\n";
    return false;
  }
  out = {s.substr(0, eq), s.substr(eq + 1)};
  return true;
}

void MachineArgs::add_to(po::options_description& opts) {
  const std::string max_steps_help =
      "stop after N events (instructions and DMA transfers completing) with a report of where "
      "each engine loops, exit code 5; 0: no limit (default " +
      std::to_string(interp::kDefaultMaxSteps) + ")";
  opts.add_options()("define,D", po::value(&defines)->composing(),
                     "NAME=VALUE: set a .param (.nasm only)")(
      "include,I", po::value(&includes)->composing(), "include directory (.nasm only)")(
      "in", po::value(&ins)->composing(), "NAME=FILE.npy: bind an input tensor")(
      "target", po::value(&target), "trn1 | trn2 | trn3 (default: the kernel's .target)")(
      "lnc", po::value(&lnc)->default_value(1), "cores per logical core: 1 or 2")(
      "ranks", po::value(&ranks)->default_value(1), "SPMD ranks, each with its own HBM")(
      "schedule", po::value(&schedule)->default_value("fixed"),
      "fixed | random: random orders ties and stretches latencies by --seed (exposes missing "
      "waits)")("seed", po::value(&seed)->default_value(0), "seed of --schedule random")(
      "check-uninit", "fault on reads of memory never written")(
      "max-steps", po::value(&max_steps)->value_name("N"), max_steps_help.c_str());
}

bool MachineArgs::apply(std::string_view cmd, const po::variables_map& vm,
                        interp::RunConfig& cfg) const {
  cfg.machine.lnc = lnc;
  cfg.machine.ranks = ranks;
  cfg.machine.check_uninit = vm.count("check-uninit") > 0;
  if (!target.empty()) {
    const interp::TargetParams* tp = interp::find_target(target);
    if (!tp) {
      std::cerr << "nisa " << cmd << ": unknown --target '" << target << "' (trn1, trn2 or trn3)\n";
      return false;
    }
    cfg.machine.target = tp->target;
    cfg.target_given = true;
  }
  if (schedule == "random") {
    cfg.sched.mode = interp::ScheduleMode::random;
  } else if (schedule != "fixed") {
    std::cerr << "nisa " << cmd << ": unknown --schedule '" << schedule << "' (fixed or random)\n";
    return false;
  }
  cfg.sched.seed = seed;
  if (vm.count("max-steps")) {
    auto n = parse_count(cmd, "--max-steps", max_steps);
    if (!n) return false;
    cfg.sched.max_steps = *n;
  }
  for (const auto& s : ins) {
    interp::IoSpec io;
    if (!split_binding(cmd, s, "--in", io)) return false;
    cfg.inputs.push_back(io);
  }
  return true;
}

std::optional<Module> MachineArgs::load_kernel(std::string_view cmd, const std::string& path,
                                               const interp::RunConfig& cfg) const {
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".nbin") == 0) {
    if (!defines.empty()) {
      std::cerr << "nisa " << cmd << ": -D applies to .nasm kernels only (" << path
                << " is assembled)\n";
      return std::nullopt;
    }
    auto r = load_object(path);
    if (!r) {
      std::cerr << "nisa " << cmd << ": " << r.error().str() << "\n";
      return std::nullopt;
    }
    return std::move(*r);
  }
  nasm::AsmOptions ao;
  if (!parse_defines(cmd, defines, ao.defines)) return std::nullopt;
  ao.include_dirs = includes;
  if (cfg.target_given) ao.target = cfg.machine.target;
  nasm::AsmResult r = nasm::assemble_file(path, ao);
  if (!r.ok()) {
    std::cerr << r.diagnostics_text();
    return std::nullopt;
  }
  return std::move(*r.module);
}

} // namespace nisa::cli
