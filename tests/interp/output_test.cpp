// Stats, timeline (Chrome trace JSON) and the file-level run (run_module).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <unistd.h>

#include "builders.h"
#include "interp/core/cost.h"
#include "interp/observe/stats_report.h"
#include "interp/run/run.h"

namespace nisa::test {
namespace {

using interp::Machine;
using interp::RunStatus;

// ---- a minimal JSON parser (objects, arrays, strings, numbers, literals) ------------------
struct Json {
  enum T { Null, Bool, Num, Str, Arr, Obj } t = Null;
  double num = 0;
  std::string str;
  std::vector<Json> arr;
  std::map<std::string, Json> obj;
};

struct Parser {
  std::string_view s;
  size_t i = 0;
  void ws() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  [[noreturn]] void fail(const char* why) {
    throw std::runtime_error(std::string(why) + " at offset " + std::to_string(i));
  }
  char peek() {
    ws();
    if (i >= s.size()) fail("unexpected end");
    return s[i];
  }
  void expect(char c) {
    if (peek() != c) fail("unexpected character");
    ++i;
  }
  std::string string() {
    expect('"');
    std::string o;
    while (true) {
      if (i >= s.size()) fail("unterminated string");
      char c = s[i++];
      if (c == '"') return o;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c == '\\') {
        if (i >= s.size()) fail("bad escape");
        char e = s[i++];
        if (e == 'u') {
          if (i + 4 > s.size()) fail("bad \\u escape");
          o += '?';
          i += 4;
        } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
          fail("bad escape");
        } else {
          o += e;
        }
      } else {
        o += c;
      }
    }
  }
  Json value() {
    Json j;
    char c = peek();
    if (c == '{') {
      j.t = Json::Obj;
      ++i;
      if (peek() == '}') {
        ++i;
        return j;
      }
      while (true) {
        std::string k = string();
        expect(':');
        j.obj[k] = value();
        if (peek() == ',') {
          ++i;
          continue;
        }
        expect('}');
        return j;
      }
    }
    if (c == '[') {
      j.t = Json::Arr;
      ++i;
      if (peek() == ']') {
        ++i;
        return j;
      }
      while (true) {
        j.arr.push_back(value());
        if (peek() == ',') {
          ++i;
          continue;
        }
        expect(']');
        return j;
      }
    }
    if (c == '"') {
      j.t = Json::Str;
      j.str = string();
      return j;
    }
    for (const char* lit : {"true", "false", "null"})
      if (s.substr(i, std::strlen(lit)) == lit) {
        i += std::strlen(lit);
        j.t = lit[0] == 'n' ? Json::Null : Json::Bool;
        return j;
      }
    size_t start = i;
    while (i < s.size() && std::string_view("+-0123456789.eE").find(s[i]) != std::string_view::npos)
      ++i;
    if (start == i) fail("unexpected character");
    j.t = Json::Num;
    j.num = std::stod(std::string(s.substr(start, i - start)));
    return j;
  }
  Json parse() {
    Json j = value();
    ws();
    if (i != s.size()) fail("trailing characters");
    return j;
  }
};

TEST(Output, JsonParserRejectsBadJson) {
  for (const char* bad : {"{", "[1,]", "{\"a\" 1}", "\"abc", "{} x", "[tru]"}) {
    Parser p{bad};
    EXPECT_THROW(p.parse(), std::runtime_error) << bad;
  }
  Parser ok{R"({"a":[1,2.5e3,"x\"y"],"b":{"c":null,"d":true}})"};
  Json j = ok.parse();
  EXPECT_EQ(j.obj["a"].arr[1].num, 2500);
  EXPECT_EQ(j.obj["a"].arr[2].str, "x\"y");
}

// x -> sbuf (sp q0), max8 on dve over F elements, sbuf -> y (act q1).
KB pipeline(uint32_t F) {
  KB k;
  int x = k.hbm("x", DType::fp32, {8, F}, Role::input);
  int y = k.hbm("y", DType::fp32, {8, 8}, Role::output);
  uint16_t s0 = k.sem("loaded"), s1 = k.sem("found");
  k.add(Engine::sp,
        with_signal(dma(Engine::sp, 0, sbuf_ap(0, 8, 0, DType::fp32, F), hbm_ap(k.m.tensors[x])),
                    s0));
  Inst mx = make_inst(Opcode::max8, Engine::dve);
  mx.ops[0].ap = sbuf_ap(0, 8, 65536, DType::fp32, 8);
  mx.ops[1].ap = sbuf_ap(0, 8, 0, DType::fp32, F);
  k.add(Engine::dve, with_signal(with_wait(mx, s0, 1), s1));
  k.add(Engine::act,
        with_wait(dma(Engine::act, 1, hbm_ap(k.m.tensors[y]), sbuf_ap(0, 8, 65536, DType::fp32, 8)),
                  s1, 1));
  return k;
}

TEST(Output, StatsCountInstructionsCyclesBytesAndWaits) {
  const uint32_t F = 1000;
  KB k = pipeline(F);
  Machine m(k.m, {});
  auto in = random_floats(8 * F, 5);
  m.write_tensor(k.m.tensors[0], as_bytes(in).data());
  auto r = interp::run(m);
  ASSERT_EQ(r.status, RunStatus::ok) << r.report;
  const auto& c = r.stats.cores[0];
  const auto& tp = interp::target_params(Target::trn2);
  EXPECT_EQ(r.stats.total_insts(), 3u);
  EXPECT_EQ(c.eng[int(Engine::dve)].insts, 1u);
  EXPECT_EQ(c.eng[int(Engine::dve)].cycles, F + 144);
  EXPECT_EQ(c.eng[int(Engine::dve)].busy_ticks, (F + 144) * tp.ticks_per_cycle[int(Engine::dve)]);
  EXPECT_EQ(c.queue[0].bytes, 8u * F * 4);
  EXPECT_EQ(c.queue[1].bytes, 8u * 8 * 4);
  EXPECT_EQ(c.queue[0].transfers, 1u);
  // dve waited from 0 until the load completed: trigger + transfer.
  auto t = interp::dma_transfer(tp, 8u * F * 4, 8);
  int64_t trigger = tp.dma_trigger_cycles * tp.ticks_per_cycle[int(Engine::sp)];
  EXPECT_EQ(c.eng[int(Engine::dve)].wait_ticks, trigger + t.data_ticks + t.latency_ticks);
  // Makespan: act's DMA completes last.
  auto t2 = interp::dma_transfer(tp, 8u * 8 * 4, 8);
  int64_t act_start =
      trigger + t.data_ticks + t.latency_ticks + (F + 144) * tp.ticks_per_cycle[int(Engine::dve)];
  EXPECT_EQ(r.stats.makespan_ticks, act_start + trigger + t2.data_ticks + t2.latency_ticks);
  std::ostringstream os;
  interp::print_stats(os, m, r.stats);
  EXPECT_NE(os.str().find("dve"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("makespan"), std::string::npos);
  // The values computed: 8 largest per row.
  auto out = read_f32(m, k.m.tensors[1]);
  for (int p = 0; p < 8; ++p) {
    std::vector<float> row(in.begin() + p * F, in.begin() + (p + 1) * F);
    std::sort(row.rbegin(), row.rend());
    for (int j = 0; j < 8; ++j) EXPECT_EQ(out[p * 8 + j], row[j]);
  }
}

TEST(Output, TimelineIsJsonWithOneTrackPerEngine) {
  KB k = pipeline(64);
  interp::MachineOptions mo;
  mo.lnc = 2;
  Machine m(k.m, mo);
  auto in = random_floats(8 * 64, 6);
  m.write_tensor(k.m.tensors[0], as_bytes(in).data());
  auto r = interp::run(m, {interp::ScheduleMode::fixed, 0, true});
  ASSERT_EQ(r.status, RunStatus::ok) << r.report;
  std::ostringstream os;
  interp::write_timeline(os, m, r.timeline);
  std::string text = os.str();
  Parser p{text};
  Json j = p.parse();
  ASSERT_EQ(j.t, Json::Obj);
  const auto& ev = j.obj["traceEvents"].arr;
  std::map<std::pair<int, int>, std::string> threads;
  int slices = 0, waits = 0, dmas = 0;
  std::map<std::string, std::vector<double>> counters;
  for (const Json& e : ev) {
    auto ph = e.obj.at("ph").str;
    if (ph == "C" && e.obj.at("pid").num == 0)
      counters[e.obj.at("name").str].push_back(e.obj.at("args").obj.at("value").num);
    if (ph == "M" && e.obj.at("name").str == "thread_name")
      threads[{int(e.obj.at("pid").num), int(e.obj.at("tid").num)}] =
          e.obj.at("args").obj.at("name").str;
    if (ph == "X") {
      ++slices;
      EXPECT_TRUE(e.obj.at("args").obj.count("source"));
      EXPECT_GE(e.obj.at("dur").num, 0);
      std::string cat = e.obj.at("cat").str;
      waits += cat == "wait";
      dmas += cat == "dma";
      if (cat == "inst" && e.obj.at("name").str == "max8") {
        EXPECT_EQ(e.obj.at("args").obj.at("source").str, "k.nasm:201:1");
      }
    }
  }
  for (int core = 0; core < 2; ++core) {
    for (int e = 0; e < kNumEngines; ++e)
      EXPECT_EQ(threads[std::make_pair(core, e)], std::string(name_of(Engine(e))));
    EXPECT_EQ(threads[std::make_pair(core, kNumEngines + 0)], "dma q0");
    EXPECT_EQ(threads[std::make_pair(core, kNumEngines + 1)], "dma q1");
  }
  EXPECT_EQ(threads.size(), 2u * (kNumEngines + 2));
  EXPECT_EQ(slices, 2 * (3 + 2 + 2)); // per core: 3 instructions, 2 waits, 2 transfers
  EXPECT_EQ(waits, 4);
  EXPECT_EQ(dmas, 4);
  // Semaphore value changes of core 0: loaded 0 -> 1 (DMA), found 0 -> 1 (max8).
  EXPECT_EQ(counters["sem loaded"], (std::vector<double>{0, 1}));
  EXPECT_EQ(counters["sem found"], (std::vector<double>{0, 1}));
}

TEST(Output, SchedulerStepsOneEventAtATime) {
  KB k = pipeline(32);
  auto in = random_floats(8 * 32, 8);
  Machine m(k.m, {});
  m.write_tensor(k.m.tensors[0], as_bytes(in).data());
  interp::Scheduler s(m);
  std::vector<interp::StepEvent> seen;
  int64_t last = 0;
  while (true) {
    auto next = s.peek();
    bool more = s.step();
    if (next) {
      EXPECT_GE(next->time, last);
      last = next->time;
      seen.push_back(*next);
    }
    if (!more) break;
  }
  ASSERT_TRUE(s.finished());
  EXPECT_EQ(s.result().status, RunStatus::ok) << s.result().report;
  // Events in time order: sp's trigger, its transfer on q0, max8, act's trigger, q1 transfer.
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen[0].engine, Engine::sp); // the trigger
  EXPECT_EQ(seen[0].dma_queue, -1);
  EXPECT_EQ(seen[1].engine, Engine::sp); // its transfer
  EXPECT_EQ(seen[1].dma_queue, 0);
  EXPECT_EQ(seen[2].engine, Engine::dve);
  EXPECT_EQ(seen[2].pc, 0);
  EXPECT_EQ(seen[3].engine, Engine::act);
  EXPECT_EQ(seen[3].dma_queue, -1);
  EXPECT_EQ(seen[4].dma_queue, 1);
  EXPECT_EQ(s.now(), seen[4].time);
  // Same final state and makespan as an uninterrupted run.
  Machine m2(k.m, {});
  m2.write_tensor(k.m.tensors[0], as_bytes(in).data());
  auto r = interp::run(m2);
  EXPECT_EQ(s.result().stats.makespan_ticks, r.stats.makespan_ticks);
  EXPECT_EQ(read_f32(m, k.m.tensors[1]), read_f32(m2, k.m.tensors[1]));
  EXPECT_FALSE(s.step());
}

TEST(Output, RunModuleBindsInputsAndWritesOutputs) {
  TmpDir d;
  KB k = pipeline(16);
  auto in = random_floats(8 * 16, 7);
  interp::write_npy(d / "x.npy", DType::fp32, {8, 16}, as_bytes(in).data());
  interp::RunConfig cfg;
  cfg.inputs = {{"x", d / "x.npy"}};
  cfg.outputs = {{"y", d / "y.npy"}};
  cfg.stats = true;
  cfg.timeline_path = d / "t.json";
  std::ostringstream out, err;
  ASSERT_EQ(interp::run_module(k.m, cfg, out, err), 0) << err.str();
  interp::NpyArray y = interp::read_npy(d / "y.npy");
  EXPECT_EQ(y.shape, (std::vector<int64_t>{8, 8}));
  std::vector<float> got(64);
  std::memcpy(got.data(), y.data.data(), 256);
  for (int p = 0; p < 8; ++p)
    EXPECT_EQ(got[p * 8], *std::max_element(in.begin() + p * 16, in.begin() + (p + 1) * 16));
  EXPECT_NE(out.str().find("makespan"), std::string::npos);
  std::ifstream tf(d / "t.json");
  std::stringstream ts;
  ts << tf.rdbuf();
  std::string text = ts.str();
  Parser p{text};
  EXPECT_NO_THROW(p.parse());
}

int run_expect_error(const KB& k, interp::RunConfig cfg, const std::string& msg) {
  std::ostringstream out, err;
  int rc = interp::run_module(k.m, cfg, out, err);
  EXPECT_NE(err.str().find(msg), std::string::npos) << err.str();
  return rc;
}

TEST(Output, RunModuleInputErrorsExitOne) {
  TmpDir d;
  KB k = pipeline(16);
  std::vector<float> in(8 * 16, 1.0f), small(4 * 16, 1.0f);
  interp::write_npy(d / "x.npy", DType::fp32, {8, 16}, as_bytes(in).data());
  interp::write_npy(d / "small.npy", DType::fp32, {4, 16}, as_bytes(small).data());
  std::vector<uint16_t> b(8 * 16, 0x3f80);
  interp::write_npy(d / "bf.npy", DType::bf16, {8, 16}, reinterpret_cast<uint8_t*>(b.data()));
  interp::RunConfig cfg;
  cfg.outputs = {{"y", d / "y.npy"}};
  EXPECT_EQ(run_expect_error(k, cfg, "input 'x' is not bound (use --in x=FILE.npy)"), 1);
  cfg.inputs = {{"x", d / "x.npy"}, {"z", d / "x.npy"}};
  EXPECT_EQ(run_expect_error(k, cfg, "--in z: the kernel has no tensor 'z'"), 1);
  cfg.inputs = {{"y", d / "x.npy"}};
  EXPECT_EQ(run_expect_error(k, cfg, "--in y: tensor 'y' is output, not an input"), 1);
  cfg.inputs = {{"x", d / "small.npy"}};
  EXPECT_EQ(run_expect_error(k, cfg,
                             "small.npy: shape (4, 16) does not match tensor 'x' of shape (8, 16)"),
            1);
  cfg.inputs = {{"x", d / "bf.npy"}};
  EXPECT_EQ(run_expect_error(k, cfg, "bf.npy: dtype '<u2' does not match tensor 'x' of dtype fp32"),
            1);
  cfg.inputs = {{"x", d / "missing.npy"}};
  EXPECT_EQ(run_expect_error(k, cfg, "missing.npy: cannot open file"), 1);
  cfg.inputs = {{"x", d / "x.npy"}};
  cfg.outputs = {{"w", d / "w.npy"}};
  EXPECT_EQ(run_expect_error(k, cfg, "--out w: the kernel has no tensor 'w'"), 1);
  EXPECT_FALSE(std::filesystem::exists(d / "w.npy"));
}

} // namespace
} // namespace nisa::test
