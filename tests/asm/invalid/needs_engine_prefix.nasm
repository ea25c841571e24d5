.sbuf a : fp32[128, 16]
  memset a, 0.0 ; CHECK: :[[@LINE]]:3: error: instruction 'memset' needs an engine prefix, e.g. 'dve.memset'
