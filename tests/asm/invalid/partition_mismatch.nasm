.sbuf a : fp32[128, 16]
.sbuf b : fp32[128, 16]
  dve.tensor_tensor a[0:64, :], a[0:64, :], b, op=add ; CHECK: :[[@LINE]]:45: error: dve.tensor_tensor operand `in1`: dst is 64 partitions x 16 elements but in1 is 128 x 16
