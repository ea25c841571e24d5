#include "tests/support/kernel_harness.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "asm/asm.h"
#include "interp/core/machine.h"
#include "interp/core/target.h"
#include "interp/run/npy.h"

namespace nisa::kt {

Assembled assemble_kernel(const std::string& file, const Defines& defines, Target target) {
  nasm::AsmOptions o;
  o.defines = defines;
  o.target = target;
  nasm::AsmResult r = nasm::assemble_file(std::string(NISA_SOURCE_DIR) + "/kernels_asm/" + file, o);
  Assembled a;
  a.ok = r.ok();
  a.diagnostics = r.diagnostics_text();
  if (r.module) a.module = std::move(*r.module);
  return a;
}

RunOutput run_kernel(const Module& m, Target target, int lnc,
                     const std::map<std::string, std::vector<uint8_t>>& inputs, bool timeline,
                     uint64_t random_schedule_seed, bool check_uninit) {
  interp::MachineOptions mo;
  mo.target = target;
  mo.lnc = lnc;
  mo.check_uninit = check_uninit;
  interp::Machine machine(m, mo);
  for (const auto& [name, bytes] : inputs) {
    const TensorDecl* t = machine.find_tensor(name);
    if (!t) throw std::runtime_error("kernel has no tensor '" + name + "'");
    if (bytes.size() != interp::Machine::tensor_bytes(*t))
      throw std::runtime_error("input '" + name + "' has the wrong size");
    machine.write_tensor(*t, bytes.data());
  }
  interp::SchedOptions so;
  so.timeline = timeline;
  if (random_schedule_seed != 0) {
    so.mode = interp::ScheduleMode::random;
    so.seed = random_schedule_seed;
  }
  interp::RunResult r = interp::run(machine, so);
  RunOutput out;
  out.status = r.status;
  out.report = r.report;
  out.stats = r.stats;
  out.timeline = std::move(r.timeline);
  for (const TensorDecl& t : m.tensors) {
    if (t.space != MemSpace::hbm || t.role != Role::output) continue;
    const uint8_t* p = machine.hbm_tensor(0, t);
    out.tensors[t.name].assign(p, p + interp::Machine::tensor_bytes(t));
  }
  return out;
}

int64_t dve_cycles_of(const Module& m, Target target, const RunOutput& r,
                      const std::vector<Opcode>& ops) {
  const auto& dve = m.streams[int(Engine::dve)];
  int64_t ticks = 0;
  for (const interp::TimelineEvent& e : r.timeline) {
    if (e.kind != interp::TimelineEvent::inst || e.core != 0 || e.engine != Engine::dve) continue;
    if (std::find(ops.begin(), ops.end(), dve.at(e.pc).op) != ops.end()) ticks += e.dur;
  }
  return ticks / interp::target_params(target).ticks_per_cycle[int(Engine::dve)];
}

std::vector<uint8_t> to_bytes(const std::vector<float>& v, DType dt) {
  std::vector<uint8_t> b;
  if (dt == DType::fp32) {
    b.resize(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
  } else {
    b.resize(v.size() * 2);
    for (size_t i = 0; i < v.size(); ++i) {
      const uint16_t h = f32_to_bf16(v[i]);
      std::memcpy(&b[2 * i], &h, 2);
    }
  }
  return b;
}

std::vector<float> from_bytes(const std::vector<uint8_t>& b, DType dt) {
  std::vector<float> v;
  if (dt == DType::fp32) {
    v.resize(b.size() / 4);
    std::memcpy(v.data(), b.data(), v.size() * 4);
  } else {
    v.resize(b.size() / 2);
    for (size_t i = 0; i < v.size(); ++i) {
      uint16_t h;
      std::memcpy(&h, &b[2 * i], 2);
      v[i] = bf16_to_f32(h);
    }
  }
  return v;
}

std::vector<uint32_t> u32_from_bytes(const std::vector<uint8_t>& b) {
  std::vector<uint32_t> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

std::vector<float> random_values(size_t n, DType dt, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dt == DType::bf16 ? bf16_to_f32(f32_to_bf16(nd(rng))) : nd(rng);
  return v;
}

const char* dt_name(DType dt) { return dt == DType::fp32 ? "fp32" : "bf16"; }
const char* target_name(Target t) {
  return t == Target::trn1 ? "trn1" : t == Target::trn2 ? "trn2" : "trn3";
}

std::string case_prefix(Target t, int lnc, DType dt) {
  return std::string(target_name(t)) + "_lnc" + std::to_string(lnc) + "_" + dt_name(dt);
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string strip_wall(std::string s) {
  s = std::regex_replace(s, std::regex(R"("wall_seconds": *[0-9.eE+-]+)"), "\"wall_seconds\":_");
  return std::regex_replace(s, std::regex(R"(host wall time [0-9.]+ ms)"), "host wall time _");
}

std::vector<interp::IoSpec> random_inputs(const Module& m, const std::string& dir, int ranks) {
  std::vector<interp::IoSpec> ins;
  std::mt19937 rng(1234);
  for (const TensorDecl& t : m.tensors) {
    if (t.role != Role::input) continue;
    uint64_t n = 1;
    for (int64_t d : t.shape) n *= uint64_t(d);
    std::vector<int64_t> shape = t.shape;
    if (ranks > 1) shape.insert(shape.begin(), ranks), n *= uint64_t(ranks);
    const DType dt = t.dtype;
    std::vector<uint8_t> bytes;
    if (dt == DType::fp32 || dt == DType::bf16) {
      bytes = to_bytes(random_values(n, dt, uint32_t(rng())), dt);
    } else {
      const int w = dtype_bytes(dt);
      bytes.assign(n * uint64_t(w), 0);
      for (uint64_t i = 0; i < n; ++i) bytes[i * uint64_t(w)] = uint8_t(rng() % 2);
    }
    const std::string p = (std::filesystem::path(dir) / (t.name + ".npy")).string();
    interp::write_npy(p, dt, shape, bytes.data());
    ins.push_back({t.name, p});
  }
  return ins;
}

} // namespace nisa::kt
