; Semaphores (waits >= and ==, signals with increments), replica groups and collectives.
.kernel sync
.hbm  x  : fp32[128, 64] input
.hbm  y  : fp32[128, 64] output
.sbuf t  : fp32[128, 64]
.sem  ready, done = 2, tick
.group pairs = [[0, 1], [2, 3]]
  sp.dma q0, t, x @signal(ready)
  dve.tensor_scalar t, t, op0=add, operand0=1.0 @wait(ready >= 1) @signal(done += 3, tick)
  cc.all_reduce y, x, pairs, op=max @wait(done == 5)
  act.activation t, t, func=gelu_apprx_tanh, scale=0.5 @wait(tick >= 1, ready >= 1)
  pool.sem_set tick, 0
