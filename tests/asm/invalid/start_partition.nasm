.sbuf a : fp32[128, 64]
.sbuf b : fp32[128, 64]
  dve.copy b[1:33, :], a[0:32, :] ; CHECK: :[[@LINE]]:12: error: dve.copy operand `dst`: starts at partition 1, but an access of 32 partitions must start at partition 0, 32, 64 or 96
  dve.copy b[64:128, :], a[32:96, :] ; CHECK: :[[@LINE]]:26: error: dve.copy operand `src`: starts at partition 32, but an access of 64 partitions must start at partition 0 or 64
  dve.copy b[64:128, :], a[0:64, :]
  sp.dma q0, b[1:33, :], a[0:32, :]
