.hbm  x : fp32[128, 16]
.sbuf t : fp32[128, 16]
  sp.dma q0, t[:, 0:8], x ; CHECK: :[[@LINE]]:25: error: DMA size mismatch: 'src' has 2048 elements, dst has 1024
