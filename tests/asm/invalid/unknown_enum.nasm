.sbuf a : fp32[128, 16]
  dve.tensor_tensor a, a, a, op=mull ; CHECK: :[[@LINE]]:33: error: unknown AluOp 'mull' for operand 'op'; did you mean 'mul'?
