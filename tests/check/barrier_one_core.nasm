; nisa check --lnc 2: a barrier on one core only (core 1 skips it): a deadlock, and core 1
; reads y before core 0's write of it is ordered. FIXED=1 gives core 1 its barrier.
.kernel barrier_one_core
.param FIXED = 0
.hbm  x : fp32[128, 64] input
.hbm  y : fp32[128, 64] output
.sbuf a : fp32[128, 64]
.sem  s
        sp.sysreg r1, program_id
        sp.bnz r1, core1
        sp.dma q0, y, x  @signal(s)
        sp.nop  @wait(s >= 1)
        sp.core_barrier
        sp.br done
core1:
.if FIXED
        sp.core_barrier
.endif
        sp.dma q0, a, y  @signal(s)
        sp.nop  @wait(s >= 1)
done:
