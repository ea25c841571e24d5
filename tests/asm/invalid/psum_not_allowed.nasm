.hbm  x : fp32[128, 16]
.psum p : fp32[128, 16]
  sp.dma q0, x, p ; CHECK: :[[@LINE]]:17: error: operand 'src' of sp.dma cannot be in psum (allowed: hbm or sbuf)
