.sbuf a : fp32[128, 16]
.sbuf b : fp32[128, 16]
  dve.copy a, b, a ; CHECK: :[[@LINE]]:18: error: too many operands: dve.copy takes 2 (dst, src)
