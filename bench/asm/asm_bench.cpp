// Assembler throughput: a flat generated listing of 100k instructions (every line parsed,
// lowered and checked), and the same work expressed as .for loops (expansion-bound); the
// front end's phases (lex, parse) and a memcpy of the text as baselines of the same run.
//   bench_asm --write-flat N FILE   writes the flat listing with N instructions (for profiling
//                                   one `nisa asm` run, e.g. under valgrind --tool=callgrind)
#include <benchmark/benchmark.h>

#include <cstring>
#include <fstream>
#include <string>

#include "asm/asm.h"
#include "asm/ast.h"
#include "bench/kernel_assemble.h"

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
std::string flat_source(int n = kInsts) {
  std::string src = kHeader;
  src.reserve(static_cast<size_t>(n) * 90);
  for (int i = 0; i < n; ++i) {
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

int64_t count_lines(const std::string& src) {
  int64_t lines = 0;
  for (char ch : src) lines += ch == '\n';
  return lines;
}

void set_line_rate(benchmark::State& state, const std::string& src) {
  state.counters["lines/s"] = benchmark::Counter(
      static_cast<double>(count_lines(src) * state.iterations()), benchmark::Counter::kIsRate);
}

void run(benchmark::State& state, const std::string& src) {
  for (auto _ : state) {
    auto r = nisa::nasm::assemble_string(src, "bench.nasm");
    if (!r.ok()) {
      state.SkipWithError(r.diagnostics_text().c_str());
      return;
    }
    benchmark::DoNotOptimize(r.module->streams);
  }
  set_line_rate(state, src);
  state.counters["insts/s"] =
      benchmark::Counter(static_cast<double>(kInsts) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

// Baseline: copying the text once (what any tool reading it pays at least).
void BM_BaselineMemcpyFlat100k(benchmark::State& state) {
  static const std::string src = flat_source();
  std::string dst(src.size(), '\0');
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  set_line_rate(state, src);
}
BENCHMARK(BM_BaselineMemcpyFlat100k)->Unit(benchmark::kMillisecond);

// The front end's phases alone: tokens (streamed, as the parser reads them); tokens + tree.
void BM_LexFlat100k(benchmark::State& state) {
  static const std::string src = flat_source();
  for (auto _ : state) {
    nisa::nasm::Lexer lexer(src);
    size_t n = 0;
    while (lexer.next().kind != nisa::nasm::Tok::Eof) ++n;
    benchmark::DoNotOptimize(n);
  }
  set_line_rate(state, src);
}
BENCHMARK(BM_LexFlat100k)->Unit(benchmark::kMillisecond)->MinTime(1.0);

void BM_ParseFlat100k(benchmark::State& state) {
  static const std::string src = flat_source();
  for (auto _ : state)
    benchmark::DoNotOptimize(nisa::nasm::parse_source("bench.nasm", src).stmts.size());
  set_line_rate(state, src);
}
BENCHMARK(BM_ParseFlat100k)->Unit(benchmark::kMillisecond)->MinTime(1.0);

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

// Whole kernels of kernels_asm (macros, loops, includes; the shapes of bench/torch_compare.py):
// what `nisa run KERNEL.nasm` pays before the machine starts (issue 16): s/inst = wall per
// instruction assembled (s/inst).
void run_kernel(benchmark::State& state, const char* file, const nisa::bench::Defines& d) {
  size_t insts = 0;
  for (auto _ : state) {
    nisa::Module m = nisa::bench::assemble_kernel(file, d);
    insts = 0;
    for (const auto& s : m.streams) insts += s.size();
    benchmark::DoNotOptimize(m.streams);
  }
  state.counters["insts"] = static_cast<double>(insts);
  state.counters["s/inst"] =
      benchmark::Counter(static_cast<double>(insts) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_AssembleDepthwise(benchmark::State& state) {
  run_kernel(state, "depthwise_conv1d.nasm",
             {{"N", "1"},
              {"C", "1024"},
              {"W", "1024"},
              {"S", "128"},
              {"PAD_L", "64"},
              {"PAD_R", "63"},
              {"DT", "fp32"}});
}
BENCHMARK(BM_AssembleDepthwise)->Unit(benchmark::kMillisecond)->MinTime(1.0);

void BM_AssembleAttention(benchmark::State& state) {
  run_kernel(state, "attention_block_tkg.nasm",
             {{"B", "4"},
              {"S", "1"},
              {"H", "4096"},
              {"QH", "8"},
              {"D", "128"},
              {"S_CTX", "8192"},
              {"ROPE", "half"},
              {"QK_NORM", "none"},
              {"FP8_KV", "0"},
              {"DT", "bf16"}});
}
BENCHMARK(BM_AssembleAttention)->Unit(benchmark::kMillisecond)->MinTime(1.0);

void BM_AssembleTopkReduce(benchmark::State& state) {
  run_kernel(state, "topk_reduce.nasm",
             {{"ROWS", "1024"}, {"T", "128"}, {"K", "8"}, {"H", "4096"}, {"DT", "bf16"}});
}
BENCHMARK(BM_AssembleTopkReduce)->Unit(benchmark::kMillisecond)->MinTime(1.0);

} // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--write-flat") == 0) {
    const int n = std::atoi(argv[2]);
    std::ofstream out(argv[3], std::ios::binary);
    if (n <= 0 || !(out << flat_source(n))) {
      fprintf(stderr, "bench_asm: --write-flat N FILE: N must be > 0 and FILE writable\n");
      return 2;
    }
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
