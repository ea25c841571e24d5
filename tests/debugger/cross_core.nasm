; cross_core.nasm (tests/debugger): both cores of a logical core (--lnc 2) write row 0 of y.
; Core 0 writes first; core 1 must not start until core 0's transfer is done. BARRIER = 0
; leaves the cores unordered; WAIT = 0 orders only the DMA triggers (the barrier does not
; wait for core 0's transfer); both 1 is race-free. Same parameters and tensors as cumsum.nasm.
.kernel cross_core
.target trn2
.param ROWS = 128
.param COLS = 64
.param BARRIER = 1
.param WAIT = 1
.hbm  x : fp32[ROWS, COLS] input
.hbm  y : fp32[ROWS, COLS] output
.sem  s_done
        sp.sysreg r1, program_id
        sp.bnz r1, second
        sp.dma q0, y[0:1, 0:64], x[0:1, 0:64] @signal(s_done)
.if BARRIER && WAIT
        sp.core_barrier @wait(s_done >= 1)
.elif BARRIER
        sp.core_barrier
.endif
        sp.br done
second:
.if BARRIER
        sp.core_barrier
.endif
        sp.dma q0, y[0:1, 0:64], x[1:2, 0:64]
done:
        sp.nop
