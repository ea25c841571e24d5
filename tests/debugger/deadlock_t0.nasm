; deadlock_t0.nasm (tests/debugger): every engine waits from t = 0, so the run deadlocks before
; its first event; the debugger must still show the report. Same tensors as cumsum.nasm.
.kernel deadlock_t0
.param ROWS = 128
.param COLS = 64
.hbm  x : fp32[ROWS, COLS] input
.hbm  y : fp32[ROWS, COLS] output
.sem  s_a, s_b
        act.nop @wait(s_b >= 1) @signal(s_a)
        pool.nop @wait(s_a >= 1) @signal(s_b)
