; deadlock.nasm (tests/debugger): a wait-for cycle between dve and pool, for the debugger's
; deadlock stop. Same parameters and tensors as cumsum.nasm so the tests bind the same input.
.kernel deadlock
.param ROWS = 128
.param COLS = 64
.hbm  x : fp32[ROWS, COLS] input
.hbm  y : fp32[ROWS, COLS] output
.sbuf t : fp32[128, 64]
.sem  s_dve, s_pool
        sp.dma q0, t[0:128, 0:64], x[0:128, 0:64]
        dve.memset t[0:128, 0:32], 1.0  @wait(s_pool >= 1)   ; pool signals only after it
        dve.memset t[0:128, 32:64], 2.0 @signal(s_dve)
        pool.memset t[0:64, 0:8], 3.0   @wait(s_dve >= 1)
        pool.memset t[64:128, 0:8], 4.0 @signal(s_pool)
