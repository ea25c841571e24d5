.sbuf a : fp32[128, 16]
  dve.memset a[0:4, 0:4, 0], 0.0 ; CHECK: :[[@LINE]]:26: error: too many indices: tensor 'a' has 2 dimension(s)
