.sbuf w : bf16[128, 128]
.sbuf x : bf16[128, 512]
.psum o : bf16[128, 512]
  pe.matmul o, w, x ; CHECK: :[[@LINE]]:13: error: pe.matmul operand `dst`: must be fp32, not bf16
