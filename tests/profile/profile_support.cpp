#include "tests/profile/profile_support.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include "asm/asm.h"
#include "interp/run/run.h"
#include "tests/support/kernel_harness.h"

namespace nisa::test {

namespace fs = std::filesystem;

namespace {

// Every directory and file made here, removed when the test process exits (a name's directory
// is reused by the later runs of that name in the same process: its inputs stay the same).
struct Scratch {
  std::mutex mu;
  std::set<fs::path> paths;
  void add(const fs::path& p) {
    std::lock_guard<std::mutex> lock(mu);
    paths.insert(p);
  }
  ~Scratch() {
    std::error_code ec;
    for (const fs::path& p : paths) fs::remove_all(p, ec);
  }
};
Scratch& scratch() {
  static Scratch s;
  return s;
}

fs::path dir_for(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("nisa_profile_" + name + "_" + std::to_string(::getpid()));
  fs::create_directories(d);
  scratch().add(d);
  return d;
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream f(p);
  if (!f) return {};
  return nlohmann::json::parse(f);
}

interp::RunConfig config(const Module& m, int lnc, int ranks, const fs::path& dir) {
  interp::RunConfig cfg;
  cfg.machine.lnc = lnc;
  cfg.machine.ranks = ranks;
  const fs::path in = dir / "inputs";
  if (!fs::exists(in)) {
    fs::create_directories(in);
    cfg.inputs = kt::random_inputs(m, in.string(), ranks);
  } else {
    // The same files as the first run of this directory.
    for (const TensorDecl& t : m.tensors)
      if (t.role == Role::input) cfg.inputs.push_back({t.name, (in / (t.name + ".npy")).string()});
  }
  cfg.stats_json_path = (dir / "stats.json").string();
  return cfg;
}

} // namespace

Profiled profile_module(const Module& m, int lnc, int ranks, const std::string& name, bool what_if,
                        bool text_report, bool timeline) {
  const fs::path dir = dir_for(name);
  interp::RunConfig cfg = config(m, lnc, ranks, dir);
  cfg.profile = text_report;
  cfg.profile_json_path = (dir / "profile.json").string();
  cfg.profile_what_if = what_if;
  if (timeline) cfg.timeline_path = (dir / "timeline.json").string();
  std::ostringstream out, err;
  Profiled r;
  r.rc = interp::run_module(m, cfg, out, err);
  r.out = out.str(), r.err = err.str();
  r.profile = read_json(cfg.profile_json_path);
  r.stats = read_json(cfg.stats_json_path);
  if (timeline) r.timeline = read_json(cfg.timeline_path);
  return r;
}

int64_t makespan_with_scale(const Module& m, int lnc, int ranks, const std::string& name,
                            const std::string& unit, double f) {
  const fs::path dir = dir_for(name);
  interp::RunConfig cfg = config(m, lnc, ranks, dir);
  const auto u = interp::find_cost_unit(unit);
  EXPECT_TRUE(u.has_value()) << unit;
  if (u) cfg.machine.cost_scale[size_t(*u)] = f;
  std::ostringstream out, err;
  const int rc = interp::run_module(m, cfg, out, err);
  EXPECT_EQ(rc, 0) << err.str();
  return read_json(cfg.stats_json_path).value("makespan_ticks", int64_t(-1));
}

Module assemble(const std::string& text) {
  // From a file, so that the report can show each line's text.
  static int n = 0;
  const fs::path p = fs::temp_directory_path() / ("nisa_profile_src_" + std::to_string(::getpid()) +
                                                  "_" + std::to_string(n++) + ".nasm");
  std::ofstream(p) << text;
  scratch().add(p);
  nasm::AsmResult r = nasm::assemble_file(p.string());
  if (!r.ok()) {
    ADD_FAILURE() << r.diagnostics_text();
    return Module{};
  }
  return *r.module;
}

} // namespace nisa::test
