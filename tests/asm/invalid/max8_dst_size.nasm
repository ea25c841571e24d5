.sbuf d : fp32[128, 16]
.sbuf s : fp32[128, 1024]
  dve.max8 d, s ; CHECK: :[[@LINE]]:12: error: dst of dve.max8 must hold 8 elements per partition, not 16
