.sem s_in, s_out
  sp.nop @wait(s_inn >= 1) ; CHECK: :[[@LINE]]:16: error: unknown semaphore 's_inn'; did you mean 's_in'?
