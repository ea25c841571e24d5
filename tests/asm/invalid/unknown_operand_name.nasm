.sbuf a : fp32[128, 16]
  dve.tensor_scalar a, a, op0=add, operand00=1.0 ; CHECK: :[[@LINE]]:36: error: dve.tensor_scalar has no operand 'operand00'; did you mean 'operand0'? (operands: dst, src, op0, operand0=, rev0=, op1=, operand1=, rev1=)
