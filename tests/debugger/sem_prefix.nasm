; sem_prefix.nasm (tests/debugger): a wait orders only the signals it needs. dve signals s
; twice; act waits for s >= 1 only, so dve's second write of t is unordered with act's read of
; it, even when act happens to issue after the second signal (it is busy with a long copy
; first). EXACT = 1 waits for s >= 2: race-free. Same parameters and tensors as cumsum.nasm.
.kernel sem_prefix
.param ROWS = 128
.param COLS = 64
.param EXACT = 0
.hbm  x : fp32[ROWS, COLS] input
.hbm  y : fp32[ROWS, COLS] output
.sbuf t : fp32[128, 64]
.sbuf u : fp32[128, 2048]
.sbuf v : fp32[128, 2048]
.sbuf w : fp32[128, 64]
.sem  s
        dve.memset t[0:128, 0:32], 1.0 @signal(s)
        dve.memset t[0:128, 32:64], 2.0 @signal(s)
        act.copy v, u                            ; long: act reads t after both signals
.if EXACT
        act.copy w, t @wait(s >= 2)
.else
        act.copy w, t @wait(s >= 1)
.endif
