// What several subcommands share: argument parsing with one positional argument, -D and
// NAME=FILE bindings, the machine options of `run` and `debug`, and loading a kernel from
// .nasm or .nbin. Every error is printed as "nisa CMD: ..." and the caller exits with 1.
#pragma once
#include <boost/program_options.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "interp/run/run.h"
#include "isa/module.h"

namespace nisa::cli {
namespace po = boost::program_options;

// Parses argv against `opts` (shown by --help) plus one positional argument. Returns the exit
// code to stop with (0 after --help, 1 on an error or a missing positional argument), or
// nullopt to go on.
std::optional<int> parse_args(std::string_view cmd, int argc, char** argv,
                              const po::options_description& opts, std::string& positional,
                              std::string_view missing, po::variables_map& vm);

// -D NAME=VALUE values -> (name, value) pairs.
bool parse_defines(std::string_view cmd, const std::vector<std::string>& defines,
                   std::vector<std::pair<std::string, std::string>>& out);

// The .include search path: the -I directories, then, when this nisa is installed, the kernels'
// standard library beside it (<prefix>/bin/nisa -> <prefix>/share/nisa/kernels_asm), so that a
// kernel anywhere can `.include "lib/attn.inc"` as the shipped kernels do.
std::vector<std::string> include_path(std::vector<std::string> dirs);

// The options `nisa run` and `nisa debug` share.
struct MachineArgs {
  std::vector<std::string> defines, includes, ins;
  std::string target, schedule = "fixed";
  int lnc = 1, ranks = 1;
  std::string seed = "0";
  std::string max_steps;
  std::string threads; // --threads; empty: the host's cores
  std::string max_hbm; // bytes, or with a K/M/G/T suffix (powers of 1024)
  std::string hbm_spill = "auto", spill_dir;
  std::vector<std::string> cost_scales; // --cost-scale UNIT=F, one per unit

  void add_to(po::options_description& opts);
  // Fills cfg.machine, cfg.sched and cfg.inputs.
  bool apply(std::string_view cmd, const po::variables_map& vm, interp::RunConfig& cfg) const;
  // .nbin: the object as stored; .nasm: assembled with -D, -I and the run's --target.
  // `checksum`: when given, the object's checksum goes there (0: unknown) and a .nasm is
  // assembled through the cache of assembled kernels (kernel_cache.h).
  std::optional<Module> load_module(std::string_view cmd, const std::string& path,
                                    const interp::RunConfig& cfg,
                                    uint64_t* checksum = nullptr) const;
  // load_module, then apply_declared (its error printed as "nisa CMD: ...").
  std::optional<Module> load_kernel(std::string_view cmd, const std::string& path,
                                    const po::variables_map& vm, interp::RunConfig& cfg) const;
};

// The kernel's `.ranks` / `.lnc` as the defaults of --ranks / --lnc (cfg.machine.ranks, lnc;
// isa/launch.h): the error when an option given differs ("--ranks 2 conflicts with `.ranks 4`
// at kernels_asm/fgcc.nasm:55"), else nullopt.
std::optional<std::string> apply_declared(const po::variables_map& vm, const Module& mod,
                                          interp::RunConfig& cfg);

// A count option's decimal value (digits only, at most UINT64_MAX); prints the error.
std::optional<uint64_t> parse_count(std::string_view cmd, std::string_view opt,
                                    const std::string& text);
// A count in lo..hi (an int option as boost parsed it); prints "--ranks -1: expected 1..128".
bool check_range(std::string_view cmd, std::string_view opt, long long v, long long lo,
                 long long hi);
// A modelled time in ns (--trace-from, --trace-to): finite, 0 or more and at most
// kMaxTraceNs; prints the error.
std::optional<double> check_ns(std::string_view cmd, std::string_view opt, double v);
// The largest time a trace window takes: its ticks fit an int64_t with room to spare.
inline constexpr double kMaxTraceNs = 1e15; // about 11.6 modelled days
// --cost-scale UNIT=F settings into `scale` (each unit at most once, F a factor that
// interp::cost_scale_error accepts); prints the first error.
bool parse_cost_scales(std::string_view cmd, const std::vector<std::string>& settings,
                       interp::CostScale& scale);
// A byte count: digits with an optional K, M, G or T suffix (powers of 1024), checked for
// overflow; nullopt when malformed.
std::optional<uint64_t> parse_bytes(std::string_view s);

// Usage error (false, message printed) when two outputs name the same file or an output names
// an input: the kernel source, an --in file. `outputs` are (label, path), e.g. ("--trace", f).
bool check_output_paths(std::string_view cmd, const std::string& kernel,
                        const std::vector<std::pair<std::string, std::string>>& outputs,
                        const interp::RunConfig& cfg);

// NAME=FILE.npy (for --in / --out).
bool split_binding(std::string_view cmd, const std::string& s, const char* opt,
                   interp::IoSpec& out);

} // namespace nisa::cli
