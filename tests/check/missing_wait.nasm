; nisa check: a missing wait (the DMA's completion never orders the read of a).
.kernel missing_wait
.hbm  x : fp32[128, 64] input
.hbm  y : fp32[128, 64] output
.sbuf a : fp32[128, 64]
.sbuf b : fp32[128, 64]
.sem  s_in, s_cmp
        sp.dma q0, a, x  @signal(s_in)
        dve.tensor_scalar b, a, op0=mul, operand0=2.0  @signal(s_cmp)
        sp.dma q1, y, b  @wait(s_cmp >= 1)
