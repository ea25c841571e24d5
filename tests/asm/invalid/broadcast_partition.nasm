.sbuf a : fp32[128, 4]
.sbuf b : fp32[1, 4]
.hbm  g : fp32[1, 4]
  dve.copy a, b[:128:0, :] ; CHECK: :[[@LINE]]:17: error: the partition dim of an on-chip tensor cannot be broadcast (partitions are contiguous); broadcast an HBM tensor's rows through a DMA
  sp.dma q0, a, g[1:128:0, :] ; CHECK: :[[@LINE]]:19: error: broadcast index 1 is outside the dimension of size 1
  sp.dma q0, a, g[0::0, :] ; CHECK: :[[@LINE]]:19: error: a broadcast slice a:b:0 needs its stop (element a repeated b - a times)
  sp.dma q0, a, g[:128:0, :]
