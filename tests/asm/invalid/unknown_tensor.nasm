.sbuf data : fp32[128, 16]
  dve.memset dat[:, 0:4], 0.0 ; CHECK: :[[@LINE]]:14: error: unknown tensor 'dat'; did you mean 'data'?
