.sbuf a : fp32[128, 16]
.sbuf b : fp32[128, 16]
  dve.tensor_tensor a[0:64, :], a[0:64, :], b, op=add ; CHECK: :[[@LINE]]:45: error: partition count mismatch: 'in1' has 128 partitions, dst has 64
