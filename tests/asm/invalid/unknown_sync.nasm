.sem s
  sp.nop @wiat(s >= 1) ; CHECK: :[[@LINE]]:10: error: unknown sync clause '@wiat'; did you mean '@wait'?
