.sbuf a : fp32[128, 16]
.sbuf s : fp32[128, 2]
  dve.tensor_scalar a, a, op0=add, operand0=s ; CHECK: :[[@LINE]]:45: error: scalar operand 'operand0' must be one element per partition ([P, 1]), not 2
