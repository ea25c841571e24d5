.sbuf a : fp32[128, 16]
  dve.copy a ; CHECK: :[[@LINE]]:13: error: missing operand 'src' of dve.copy (operands: dst, src)
