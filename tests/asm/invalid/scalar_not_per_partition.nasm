.sbuf a : fp32[128, 16]
.sbuf s : fp32[128, 2]
  dve.tensor_scalar a, a, op0=add, operand0=s ; CHECK: :[[@LINE]]:45: error: dve.tensor_scalar operand `operand0`: must be a [128, 1] per-partition tile, got 128 x 2
