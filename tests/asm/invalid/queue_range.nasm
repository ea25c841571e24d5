.hbm  x : fp32[128, 16]
.sbuf t : fp32[128, 16]
  sp.dma q16, t, x ; CHECK: :[[@LINE]]:10: error: operand 'queue' must be a DMA queue q0..q15, not q16
