// libFuzzer target for the object reader and the interpreter: bytes that decode to a module
// are loaded on a machine (HBM limited to 1 MiB, so any placement is checked before
// allocating) and run for at most kMaxEvents scheduler events, one step() at a time. The step
// limit bounds endless kernels until the interpreter has an execution budget of its own; the
// element cap of an access (interp/core/view.cpp) bounds each step. Any outcome but a crash or a
// sanitizer report is fine: ok, deadlock, fault, or std::runtime_error from the machine's
// checks.
// Build: see CMakeLists.txt here; seeds: the kernels assembled to .nbin (run_seeds.sh);
//   build-fuzz/tests/fuzz/fuzz_run /tmp/runcorpus -max_total_time=1860 -timeout=20
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <stdexcept>

#include "interp/core/machine.h"
#include "interp/sched/scheduler.h"
#include "isa/object.h"

using namespace nisa;

namespace {
constexpr int kMaxEvents = 2000;
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The checksum is not verified so that mutations reach the section parsers and the run.
  auto r = read_object(std::span<const uint8_t>(data, size), ReadOptions{.verify_checksum = false});
  if (!r.ok()) {
    if (size > 0 && r.error().offset >= size) std::abort();
    return 0;
  }
  const Module& mod = *r;
  interp::MachineOptions mo;
  mo.target = mod.target;
  mo.max_hbm = uint64_t(1) << 20;
  mo.check_uninit = size % 2 == 1; // both paths of the uninitialised-read tracking
  try {
    interp::Machine m(mod, mo);
    interp::Scheduler s(m);
    for (int k = 0; k < kMaxEvents && s.step(); ++k) {
    }
    const interp::RunResult& res = s.result();
    if (s.finished() && res.status != interp::RunStatus::ok && res.report.empty()) std::abort();
  } catch (const std::runtime_error&) {
    // A declaration the machine rejects (target size, --max-hbm, roles).
  }
  return 0;
}
