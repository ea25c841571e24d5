#include "tests/support/kernel_cases.h"

namespace nisa::kt {

std::vector<KernelCase> every_kernel() {
  return {
      {"cumsum", "cumsum.nasm", {{"ROWS", "200"}, {"COLS", "3000"}}, 1, 1},
      {"cumsum_double_buffered", "cumsum_double_buffered.nasm", {}, 1, 1},
      {"cumsum_after", "cumsum_after.nasm", {}, 1, 1},
      {"cumsum_auto", "cumsum_auto.nasm", {}, 1, 1},
      {"cascaded_max", "cascaded_max.nasm", {{"BXS", "6"}, {"V", "5000"}}, 2, 1},
      {"topk", "topk.nasm", {}, 2, 1},
      {"cross_entropy_fwd", "cross_entropy_fwd.nasm", {{"DT", "fp32"}}, 2, 1},
      {"cross_entropy_bwd", "cross_entropy_bwd.nasm", {{"DT", "fp32"}}, 2, 1},
      {"conv1d", "conv1d.nasm", {{"LNC_SHARD", "1"}}, 2, 1},
      {"depthwise_conv1d", "depthwise_conv1d.nasm", {}, 2, 1},
      {"fgcc", "fgcc.nasm", {}, 2, 4},
      {"fg_allgather", "fg_allgather.nasm", {}, 2, 4},
      {"sb2sb_allgather", "sb2sb_allgather.nasm", {{"TP", "4"}}, 2, 4},
      {"topk_reduce", "topk_reduce.nasm", {}, 2, 1},
      {"moe_fwd_shard_h", "moe_fwd_shard_h.nasm", {}, 2, 1},
      {"moe_bwd", "moe_bwd.nasm", {}, 2, 1},
      {"attention_block_tkg", "attention_block_tkg.nasm", {}, 2, 1},
      {"transformer_tkg", "transformer_tkg.nasm", {{"TP", "2"}}, 2, 2},
      // One core, large instructions: matmuls and elementwise rows split over the threads.
      {"conv1d_one_core_large",
       "conv1d.nasm",
       {{"CIN", "128"}, {"COUT", "128"}, {"L", "1024"}, {"DT", "fp32"}},
       1,
       1},
      {"cross_entropy_fwd_one_core_large",
       "cross_entropy_fwd.nasm",
       {{"NPOS", "128"}, {"V", "8192"}, {"DT", "fp32"}},
       1,
       1},
  };
}

} // namespace nisa::kt
