.sbuf d : fp32[128, 16]
.sbuf s : fp32[128, 1024]
  dve.max8 d, s ; CHECK: :[[@LINE]]:12: error: dve.max8 operand `dst`: must be 128 partitions x 8 elements, got 128 x 16
