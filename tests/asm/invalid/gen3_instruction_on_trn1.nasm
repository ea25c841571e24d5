; RUN: --target trn1
.hbm  x : bf16[128, 128]
.sbuf t : bf16[128, 128]
  sp.dma_transpose q0, t, x ; CHECK: :[[@LINE]]:3: error: instruction 'sp.dma_transpose' is not available on trn1 (available on: trn2, trn3)
