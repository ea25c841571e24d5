.hbm  x : fp32[256, 64]
.sbuf t : fp32[128, 64]
  sp.dma q0, t, x[200:328, :] ; CHECK: :[[@LINE]]:19: error: slice 200:328 is outside the dimension of size 256
