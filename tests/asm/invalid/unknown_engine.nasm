.sbuf a : fp32[128, 16]
  dev.memset a, 0.0 ; CHECK: :[[@LINE]]:3: error: unknown engine 'dev'; did you mean 'dve'? (engines: pe, act, dve, pool, sp, cc)
