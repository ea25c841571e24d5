.hbm  x : fp32[128, 16]
.sbuf t : fp32[128, 16]
  sp.dma q0, t[:, 0:8], x ; CHECK: :[[@LINE]]:25: error: sp.dma operand `src`: element counts differ: dst has 1024 (128 x 8), src has 2048 (128 x 16)
