.sem s_in
  sp.nop @signal(done) ; CHECK: :[[@LINE]]:18: error: unknown semaphore 'done'
