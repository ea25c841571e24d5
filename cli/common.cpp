#include "cli/common.h"

#include "interp/dist/procs.h"

#include "interp/core/host_pool.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "asm/asm.h"
#include "cli/kernel_cache.h"
#include "interp/core/host_pool.h"
#include "interp/core/target.h"
#include "isa/launch.h"
#include "isa/object.h"
#include "isa/output_file.h"
#include "isa/quote.h"

namespace nisa::cli {

std::vector<std::string> include_path(std::vector<std::string> dirs) {
  const std::string bin = interp::exe_dir();
  if (bin.empty()) return dirs;
  const std::filesystem::path lib = std::filesystem::path(bin + "../share/nisa/kernels_asm");
  std::error_code ec;
  if (std::filesystem::is_directory(lib, ec)) dirs.push_back(lib.lexically_normal().string());
  return dirs;
}

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
      std::cerr << "nisa " << cmd << ": -D '" << elide(d) << "': expected NAME=VALUE\n";
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

bool check_range(std::string_view cmd, std::string_view opt, long long v, long long lo,
                 long long hi) {
  if (v >= lo && v <= hi) return true;
  std::cerr << "nisa " << cmd << ": " << opt << " " << v << ": expected " << lo
            << (hi == lo + 1 ? " or " : "..") << hi << "\n";
  return false;
}

std::optional<double> check_ns(std::string_view cmd, std::string_view opt, double v) {
  if (std::isfinite(v) && v >= 0 && v <= kMaxTraceNs) return v;
  std::cerr << "nisa " << cmd << ": " << opt << " " << v
            << ": expected a modelled time in ns from 0 to " << kMaxTraceNs << "\n";
  return std::nullopt;
}

bool parse_cost_scales(std::string_view cmd, const std::vector<std::string>& settings,
                       interp::CostScale& scale) {
  scale = interp::kNoCostScale;
  bool given[interp::kNumCostUnits] = {};
  for (const std::string& s : settings) {
    auto fail = [&](const std::string& why) {
      std::cerr << "nisa " << cmd << ": --cost-scale '" << elide(s) << "': " << why << "\n";
      return false;
    };
    const size_t eq = s.find('=');
    if (eq == std::string::npos)
      return fail("expected UNIT=F (units: " + interp::cost_unit_list() + ")");
    const std::string unit = s.substr(0, eq), text = s.substr(eq + 1);
    const auto u = interp::find_cost_unit(unit);
    if (!u)
      return fail(interp::unknown_cost_unit(unit, nasm::suggest(unit, interp::cost_unit_names())));
    double f = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), f);
    const bool whole = !text.empty() && end == text.data() + text.size();
    if (whole && ec == std::errc::result_out_of_range) // 1e999, 1e-999
      return fail(*interp::cost_scale_error(0));
    if (!whole || ec != std::errc())
      return fail("expected a number after '=' (e.g. " + unit + "=2)");
    if (auto err = interp::cost_scale_error(f)) return fail(*err);
    if (given[int(*u)]) return fail(unit + " is scaled twice (one --cost-scale per unit)");
    given[int(*u)] = true;
    scale[int(*u)] = f;
  }
  return true;
}

bool split_binding(std::string_view cmd, const std::string& s, const char* opt,
                   interp::IoSpec& out) {
  const size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) {
    std::cerr << "nisa " << cmd << ": " << opt << " '" << elide(s) << "': expected NAME=FILE.npy\n";
    return false;
  }
  out = {s.substr(0, eq), s.substr(eq + 1)};
  return true;
}

std::optional<uint64_t> parse_bytes(std::string_view s) {
  uint64_t v = 0, unit = 1;
  if (!s.empty()) {
    const size_t k = std::string_view("KMGT").find(char(std::toupper(s.back())));
    if (k != std::string_view::npos) {
      unit = uint64_t(1) << (10 * (k + 1));
      s.remove_suffix(1);
    }
  }
  if (s.empty()) return std::nullopt;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, uint64_t(c - '0'), &v))
      return std::nullopt;
  }
  if (__builtin_mul_overflow(v, unit, &v)) return std::nullopt;
  return v;
}

bool check_output_paths(std::string_view cmd, const std::string& kernel,
                        const std::vector<std::pair<std::string, std::string>>& outputs,
                        const interp::RunConfig& cfg) {
  std::vector<NamedPath> outs, ins{{"the kernel source", kernel}};
  for (const auto& [label, path] : outputs) outs.push_back({label, path});
  for (const interp::IoSpec& io : cfg.outputs) outs.push_back({"--out " + io.name, io.path});
  for (const interp::IoSpec& io : cfg.inputs) ins.push_back({"--in " + io.name, io.path});
  try {
    nisa::check_output_paths(outs, ins);
  } catch (const OutputError& e) {
    std::cerr << "nisa " << cmd << ": " << e.what() << "\n";
    return false;
  }
  return true;
}

void MachineArgs::add_to(po::options_description& opts) {
  const std::string max_steps_help =
      "stop after N events (instructions and DMA transfers completing) with a report of where "
      "each engine loops, exit code 5; 0: no limit (default " +
      std::to_string(interp::kDefaultMaxSteps) + "; " +
      std::to_string(interp::kDefaultMaxStepsRecording) + " for run --trace or --timeline)";
  opts.add_options()("define,D", po::value(&defines)->composing(),
                     "NAME=VALUE: set a .param (.nasm only)")(
      "include,I", po::value(&includes)->composing(),
      "include directory (.nasm only; then, installed, <prefix>/share/nisa/kernels_asm)")(
      "in", po::value(&ins)->composing(), "NAME=FILE.npy: bind an input tensor")(
      "target", po::value(&target), "trn1 | trn2 | trn3 (default: the kernel's .target)")(
      "lnc", po::value(&lnc)->default_value(1),
      "cores per logical core: 1 or 2 (default: the kernel's .lnc, else 1)")(
      "ranks", po::value(&ranks)->default_value(1),
      ("SPMD ranks (1.." + std::to_string(interp::kMaxRanks) +
       "), each with its own HBM (default: the kernel's .ranks, else 1)")
          .c_str())(
      "schedule", po::value(&schedule)->default_value("fixed"),
      "fixed | random: random orders ties and stretches latencies by --seed (exposes missing "
      "waits)")("seed", po::value(&seed)->default_value("0"),
                "seed of --schedule random (0.."
                "18446744073709551615)")("check-uninit", "fault on reads of memory never written")(
      "max-steps", po::value(&max_steps)->value_name("N"), max_steps_help.c_str())(
      "max-hbm", po::value(&max_hbm),
      "limit on a rank's HBM in bytes (K/M/G/T suffixes; default 4G), checked before "
      "allocating")("hbm-spill", po::value(&hbm_spill)->default_value("auto"),
                    "auto | on | off: keep the ranks' HBM in temporary files (paged by the OS) "
                    "instead of memory; auto: when it exceeds half of the host's RAM")(
      "spill-dir", po::value(&spill_dir)->value_name("DIR"),
      "directory of the --hbm-spill files (default $TMPDIR, else /tmp)")(
      "threads", po::value(&threads)->value_name("N"),
      ("host threads (1.." + std::to_string(interp::kMaxHostThreads) +
       "; default: the host's cores, here " + std::to_string(interp::default_host_threads()) +
       "); results are the same for every N")
          .c_str())(
      "cost-scale", po::value(&cost_scales)->composing()->value_name("UNIT=F"),
      ("what-if: divide the modelled durations of UNIT by F (0.001..1000000; once per unit): "
       "an engine's instruction latencies, dma's transfers, cc's instructions and channel "
       "transfers; fixed latencies stay (docs/machine.md \"Cost scale\"). Units: " +
       interp::cost_unit_list())
          .c_str());
}

bool MachineArgs::apply(std::string_view cmd, const po::variables_map& vm,
                        interp::RunConfig& cfg) const {
  // Range-checked here, before any of them sizes an allocation (--ranks -1 once asked for a
  // vector of 2^64 - 1 elements).
  if (!check_range(cmd, "--lnc", lnc, 1, 2) ||
      !check_range(cmd, "--ranks", ranks, 1, interp::kMaxRanks))
    return false;
  cfg.machine.lnc = lnc;
  cfg.machine.ranks = ranks;
  cfg.machine.check_uninit = vm.count("check-uninit") > 0;
  if (!max_hbm.empty()) {
    const auto b = parse_bytes(max_hbm);
    if (!b || *b == 0) {
      std::cerr << "nisa " << cmd << ": --max-hbm '" << elide(max_hbm)
                << "': expected a byte count > 0 such as 1073741824 or 16G\n";
      return false;
    }
    cfg.machine.max_hbm = *b;
  }
  if (hbm_spill == "auto" || hbm_spill == "on" || hbm_spill == "off") {
    cfg.machine.hbm_spill = hbm_spill == "on"    ? interp::HbmSpill::on
                            : hbm_spill == "off" ? interp::HbmSpill::off
                                                 : interp::HbmSpill::automatic;
  } else {
    std::cerr << "nisa " << cmd << ": unknown --hbm-spill '" << elide(hbm_spill)
              << "' (auto, on or off)\n";
    return false;
  }
  cfg.machine.spill_dir = spill_dir;
  if (!parse_cost_scales(cmd, cost_scales, cfg.machine.cost_scale)) return false;
  if (!target.empty()) {
    const interp::TargetParams* tp = interp::find_target(target);
    if (!tp) {
      std::cerr << "nisa " << cmd << ": unknown --target '" << elide(target)
                << "' (trn1, trn2 or trn3)\n";
      return false;
    }
    cfg.machine.target = tp->target;
    cfg.target_given = true;
  }
  if (schedule == "random") {
    cfg.sched.mode = interp::ScheduleMode::random;
  } else if (schedule != "fixed") {
    std::cerr << "nisa " << cmd << ": unknown --schedule '" << elide(schedule)
              << "' (fixed or random)\n";
    return false;
  }
  auto sd = parse_count(cmd, "--seed", seed);
  if (!sd) return false;
  cfg.sched.seed = *sd;
  if (vm.count("max-steps")) {
    auto n = parse_count(cmd, "--max-steps", max_steps);
    if (!n) return false;
    cfg.sched.max_steps = *n;
    cfg.max_steps_given = true;
  }
  // Under mpirun the host's cores are shared by its processes.
  cfg.sched.threads =
      std::min(std::max(1, interp::default_host_threads() / interp::mpi_local_size()),
               interp::kMaxHostThreads);
  if (vm.count("threads")) {
    auto n = parse_count(cmd, "--threads", threads);
    if (!n) return false;
    if (*n < 1 || *n > uint64_t(interp::kMaxHostThreads)) {
      std::cerr << "nisa " << cmd << ": --threads " << *n << ": expected 1.."
                << interp::kMaxHostThreads << "\n";
      return false;
    }
    cfg.sched.threads = int(*n);
  }
  cfg.machine.threads = cfg.sched.threads;
  for (const auto& s : ins) {
    interp::IoSpec io;
    if (!split_binding(cmd, s, "--in", io)) return false;
    cfg.inputs.push_back(io);
  }
  return true;
}

std::optional<std::string> apply_declared(const po::variables_map& vm, const Module& mod,
                                          interp::RunConfig& cfg) {
  for (Launch which : {Launch::ranks, Launch::lnc}) {
    int& value = which == Launch::ranks ? cfg.machine.ranks : cfg.machine.lnc;
    const char* opt = launch_name(which);
    const bool given = vm.count(opt) && !vm[opt].defaulted();
    auto r = launch_value(mod, which, given ? std::optional<int>(value) : std::nullopt,
                          "--" + std::string(opt) + " " + std::to_string(value));
    if (!r) return r.error();
    value = *r;
  }
  return std::nullopt;
}

std::optional<Module> MachineArgs::load_module(std::string_view cmd, const std::string& path,
                                               const interp::RunConfig& cfg,
                                               uint64_t* checksum) const {
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".nbin") == 0) {
    if (!defines.empty()) {
      std::cerr << "nisa " << cmd << ": -D applies to .nasm kernels only (" << path
                << " is assembled)\n";
      return std::nullopt;
    }
    std::vector<uint8_t> bytes;
    std::optional<ObjectFileError> err = read_object_bytes(path, bytes);
    if (!err) {
      auto r = read_object(bytes);
      if (r) {
        if (checksum) *checksum = object_checksum(bytes);
        return std::move(*r);
      }
      err = ObjectFileError{path, r.error().offset, r.error().message};
    }
    std::cerr << "nisa " << cmd << ": " << err->str() << "\n";
    return std::nullopt;
  }
  nasm::AsmOptions ao;
  if (!parse_defines(cmd, defines, ao.defines)) return std::nullopt;
  ao.include_dirs = include_path(includes);
  if (cfg.target_given) ao.target = cfg.machine.target;
  if (checksum) { // a run: through the cache of assembled kernels
    std::string diags;
    auto c = assemble_cached(path, ao, diags);
    if (!c) {
      std::cerr << diags;
      return std::nullopt;
    }
    *checksum = c->checksum;
    return std::move(c->module);
  }
  nasm::AsmResult r = nasm::assemble_file(path, ao);
  if (!r.ok()) {
    std::cerr << r.diagnostics_text();
    return std::nullopt;
  }
  return std::move(*r.module);
}

std::optional<Module> MachineArgs::load_kernel(std::string_view cmd, const std::string& path,
                                               const po::variables_map& vm,
                                               interp::RunConfig& cfg) const {
  // `nisa run` only: the other commands keep the assembler's module as it made it.
  uint64_t checksum = 0;
  std::optional<Module> mod = load_module(cmd, path, cfg, cmd == "run" ? &checksum : nullptr);
  cfg.module_hash = checksum;
  if (!mod) return std::nullopt;
  if (auto why = apply_declared(vm, *mod, cfg)) {
    std::cerr << "nisa " << cmd << ": " << *why << "\n";
    return std::nullopt;
  }
  return mod;
}

} // namespace nisa::cli
