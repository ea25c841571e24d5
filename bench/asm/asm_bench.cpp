// Assembler throughput: a flat generated listing of 100k instructions (every line parsed,
// lowered and checked), and the same work expressed as .for loops (expansion-bound).
#include <benchmark/benchmark.h>

#include <string>

#include "asm/asm.h"

namespace {

constexpr int kInsts = 100'000;

const char* kHeader = R"(.kernel bench
.hbm  x : bf16[4096, 4096] input
.hbm  y : bf16[4096, 4096] output
.sbuf a : fp32[128, 2048]
.sbuf b : fp32[128, 2048]
.sbuf c : bf16[128, 2048]
.sbuf s : fp32[128, 1]
.sem  s0, s1, s2
)";

// One of four instruction shapes per line, with varying slices and sync.
std::string flat_source() {
  std::string src = kHeader;
  src.reserve(static_cast<size_t>(kInsts) * 90);
  for (int i = 0; i < kInsts; ++i) {
    const int k = i % 4, o = (i * 64) % 1536;
    switch (k) {
    case 0:
      src += "  dve.tensor_tensor a[:, " + std::to_string(o) + ":" + std::to_string(o + 512) +
             "], b[:, 0:512], a[:, 512:1024], op=add  @wait(s0 >= " + std::to_string(i / 4) + ")\n";
      break;
    case 1:
      src += "  sp.dma q" + std::to_string(i % 16) + ", c[0:64, 0:128], x[" +
             std::to_string((i * 64) % 4000) + ":" + std::to_string((i * 64) % 4000 + 64) +
             ", 256:384]  @signal(s1)\n";
      break;
    case 2:
      src += "  act.activation a[:, 0:256], b[:, " + std::to_string(o) + ":" +
             std::to_string(o + 256) + "], func=exp, scale=0.5, bias=s  ; softmax numerator\n";
      break;
    default:
      src += "  dve.tensor_scalar c[:, 0:1024], a[:, 0:1024], op0=mul, operand0=2.0, op1=add, "
             "operand1=s @signal(s2 += 2)\n";
    }
  }
  return src;
}

std::string loop_source() {
  std::string src = kHeader;
  src += ".for i in 0 .. " + std::to_string(kInsts / 4) + R"(
  .set o = (i * 256) % 1536
  dve.tensor_tensor a[:, o:o+512], b[:, 0:512], a[:, 512:1024], op=add  @wait(s0 >= i)
  sp.dma q3, c[0:64, 0:128], x[(i*64) % 4000 : (i*64) % 4000 + 64, 256:384]  @signal(s1)
  act.activation a[:, 0:256], b[:, o:o+256], func=exp, scale=0.5, bias=s
  dve.tensor_scalar c[:, 0:1024], a[:, 0:1024], op0=mul, operand0=2.0, op1=add, operand1=s @signal(s2 += 2)
.endfor
)";
  return src;
}

void run(benchmark::State& state, const std::string& src) {
  int64_t lines = 0;
  for (char ch : src) lines += ch == '\n';
  for (auto _ : state) {
    auto r = nisa::nasm::assemble_string(src, "bench.nasm");
    if (!r.ok()) {
      state.SkipWithError(r.diagnostics_text().c_str());
      return;
    }
    benchmark::DoNotOptimize(r.module->streams);
  }
  state.counters["lines/s"] = benchmark::Counter(static_cast<double>(lines * state.iterations()),
                                                 benchmark::Counter::kIsRate);
  state.counters["insts/s"] =
      benchmark::Counter(static_cast<double>(kInsts) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

void BM_AssembleFlat100k(benchmark::State& state) {
  static const std::string src = flat_source();
  run(state, src);
}
BENCHMARK(BM_AssembleFlat100k)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_AssembleLoops100k(benchmark::State& state) {
  static const std::string src = loop_source();
  run(state, src);
}
BENCHMARK(BM_AssembleLoops100k)->Unit(benchmark::kMillisecond)->MinTime(2.0);

} // namespace

BENCHMARK_MAIN();
