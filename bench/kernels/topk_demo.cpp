// Demo (issue 4): the rotational top-K on a generated vocabulary-sized input (V = 151936),
// checked against std::partial_sort; prints the first rows' values / indices and the --stats
// table. Usage: topk_demo [BXS [K]] (defaults 4 and 256). Exit code 1 on a mismatch.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "asm/asm.h"
#include "interp/machine.h"
#include "interp/scheduler.h"
#include "interp/stats.h"

int main(int argc, char** argv) {
  const int64_t bxs = argc > 1 ? std::atoll(argv[1]) : 4, v = 151936;
  const int64_t k = argc > 2 ? std::atoll(argv[2]) : 256;
  nisa::nasm::AsmOptions o;
  o.defines = {{"BXS", std::to_string(bxs)}, {"V", std::to_string(v)}, {"K", std::to_string(k)},
               {"METHOD", "rotational"},     {"SORTED", "1"},          {"DT", "fp32"}};
  o.include_dirs = {std::string(NISA_SOURCE_DIR) + "/kernels_asm/lib"};
  auto a = nisa::nasm::assemble_file(std::string(NISA_SOURCE_DIR) + "/kernels_asm/topk.nasm", o);
  if (!a.ok()) {
    std::cerr << a.diagnostics_text();
    return 1;
  }
  std::mt19937 rng(2024);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(size_t(bxs * v));
  for (float& e : x) e = nd(rng);

  nisa::interp::MachineOptions mo;
  mo.lnc = 2;
  nisa::interp::Machine m(*a.module, mo);
  m.write_tensor(*m.find_tensor("x"), reinterpret_cast<const uint8_t*>(x.data()));
  const nisa::interp::RunResult r = nisa::interp::run(m);
  if (r.status != nisa::interp::RunStatus::ok) {
    std::cerr << r.report;
    return 1;
  }
  std::vector<float> vals(size_t(bxs * k));
  std::vector<uint32_t> idx(size_t(bxs * k));
  std::memcpy(vals.data(), m.hbm_tensor(0, *m.find_tensor("values")), vals.size() * 4);
  std::memcpy(idx.data(), m.hbm_tensor(0, *m.find_tensor("indices")), idx.size() * 4);

  int bad = 0;
  std::vector<uint32_t> order(static_cast<size_t>(v));
  for (int64_t b = 0; b < bxs; ++b) {
    const float* row = &x[size_t(b * v)];
    std::iota(order.begin(), order.end(), 0u);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [row](uint32_t p, uint32_t q) { return row[p] > row[q]; });
    for (int64_t j = 0; j < k; ++j) {
      const size_t o2 = size_t(b * k + j);
      if (vals[o2] != row[order[size_t(j)]] || idx[o2] >= uint32_t(v) || row[idx[o2]] != vals[o2])
        ++bad;
    }
  }
  std::printf("rotational top-%lld of %lld x %lld (fp32, trn2, --lnc 2): %s\n", (long long)k,
              (long long)bxs, (long long)v, bad ? "MISMATCH" : "matches std::partial_sort");
  for (int64_t b = 0; b < std::min<int64_t>(bxs, 2); ++b) {
    std::printf("row %lld:", (long long)b);
    for (int64_t j = 0; j < 6; ++j)
      std::printf("  %.5f@%u", double(vals[size_t(b * k + j)]), idx[size_t(b * k + j)]);
    std::printf("  ...\n");
  }
  nisa::interp::print_stats(std::cout, m, r.stats);
  return bad ? 1 : 0;
}
