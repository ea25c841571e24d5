// Encode / decode throughput over a large stream of random valid instructions (all opcodes),
// and .nbin write / read of a module holding that stream.
//   build-codec/bench/codec/bench_codec [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <random>

#include "isa/encode.h"
#include "isa/object.h"
#include "tests/isa/random_inst.h"

namespace {

constexpr size_t kInsts = 100000;

const std::vector<nisa::Inst>& insts() {
  static const std::vector<nisa::Inst> v = [] {
    std::mt19937_64 rng(42);
    nisa::testing::RandomGen gen(rng);
    std::vector<nisa::Inst> out;
    const auto table = nisa::inst_table();
    for (size_t k = 0; k < kInsts; ++k) out.push_back(gen.inst(table[k % table.size()].op));
    return out;
  }();
  return v;
}

const std::vector<uint8_t>& encoded() {
  static const std::vector<uint8_t> b = [] {
    std::vector<uint8_t> out;
    for (const auto& in : insts()) nisa::encode_inst(in, out);
    return out;
  }();
  return b;
}

void set_rates(benchmark::State& state) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kInsts));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * encoded().size()));
  state.counters["bytes/inst"] = static_cast<double>(encoded().size()) / kInsts;
}

void BM_Encode(benchmark::State& state) {
  std::vector<uint8_t> out;
  out.reserve(encoded().size());
  for (auto _ : state) {
    out.clear();
    for (const auto& in : insts()) nisa::encode_inst(in, out);
    benchmark::DoNotOptimize(out.data());
  }
  set_rates(state);
}
BENCHMARK(BM_Encode)->Unit(benchmark::kMillisecond);

void BM_Decode(benchmark::State& state) {
  const auto& b = encoded();
  nisa::Inst in;
  for (auto _ : state) {
    for (uint64_t at = 0; at < b.size();) {
      uint32_t len = 0;
      if (auto e = nisa::decode_inst_into(b, at, in, len)) state.SkipWithError(e->message.c_str());
      at += len;
    }
    benchmark::DoNotOptimize(in);
  }
  set_rates(state);
}
BENCHMARK(BM_Decode)->Unit(benchmark::kMillisecond);

void BM_DecodeStream(benchmark::State& state) { // allocating a fresh Inst per instruction
  const auto& b = encoded();
  for (auto _ : state) {
    auto r = nisa::decode_stream(b, 0, b.size());
    if (!r.ok()) state.SkipWithError(r.error().message.c_str());
    benchmark::DoNotOptimize(r);
  }
  set_rates(state);
}
BENCHMARK(BM_DecodeStream)->Unit(benchmark::kMillisecond);

nisa::Module big_module() {
  nisa::Module m;
  m.target = nisa::Target::trn3;
  for (int s = 0; s < 8; ++s) m.sems.push_back({"s" + std::to_string(s), 0});
  for (int g = 0; g < 4; ++g) m.groups.push_back({"g" + std::to_string(g), {{0, 1}}});
  for (const auto& in : insts()) m.streams[static_cast<int>(in.engine)].push_back(in);
  for (auto& stream : m.streams) // branch targets must stay inside their stream
    for (auto& in : stream)
      for (size_t k = 0; k < in.ops.size(); ++k)
        if (nisa::desc(in.op).operands[k].kind == nisa::OperandKind::Label) in.ops[k].i = 0;
  return m;
}

void BM_ObjectWrite(benchmark::State& state) {
  const nisa::Module m = big_module();
  size_t n = 0;
  for (auto _ : state) {
    auto b = nisa::write_object(m);
    n = b.size();
    benchmark::DoNotOptimize(b.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kInsts));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}
BENCHMARK(BM_ObjectWrite)->Unit(benchmark::kMillisecond);

void BM_ObjectRead(benchmark::State& state) {
  const auto b = nisa::write_object(big_module());
  for (auto _ : state) {
    auto r = nisa::read_object(b);
    if (!r.ok()) state.SkipWithError(r.error().message.c_str());
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kInsts));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * b.size()));
}
BENCHMARK(BM_ObjectRead)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
