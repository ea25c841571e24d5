.sbuf w : bf16[128, 128]
.sbuf x : fp32[128, 128]
.psum o : fp32[128, 128]
  pe.matmul o, w, x ; CHECK: :[[@LINE]]:19: error: pe.matmul operand `moving`: fp32 inputs pair only with fp32 (stationary bf16, moving fp32)
