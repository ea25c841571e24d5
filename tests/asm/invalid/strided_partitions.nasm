.sbuf a : fp32[128, 16]
  dve.memset a[0:128:2, :], 0.0 ; CHECK: :[[@LINE]]:16: error: the partition dim cannot be strided (partitions are contiguous)
