.sbuf w : bf16[128, 128]
.sbuf x : bf16[128, 1024]
.psum o : fp32[128, 1024]
  pe.matmul o, w, x ; CHECK: :[[@LINE]]:19: error: pe.matmul operand `moving`: has N = 1024 columns (at most 512 on trn2)
