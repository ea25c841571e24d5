; nisa check: a race that the fixed schedule and random schedules hide. Two queues signal s;
; the compute waits for s >= 1 meaning "x is in a", but the big load's signal could come
; first. It never does in the model (the big load takes ~12 us, the small one ~2 us, and
; random schedules stretch each by at most 100%), so `--check-races` sees none.
.kernel hidden_two_queues
.hbm  x   : fp32[128, 16] input
.hbm  big : fp32[128, 8192] input
.hbm  y   : fp32[128, 16] output
.sbuf a   : fp32[128, 16]
.sbuf b   : fp32[128, 8192]
.sem  s, t
        sp.dma q0, a, x  @signal(s)
        sp.dma q1, b, big  @signal(s)
        dve.tensor_scalar a, a, op0=mul, operand0=2.0  @wait(s >= 1)  @signal(t)
        sp.dma q2, y, a  @wait(t >= 1)
        pool.nop  @wait(s >= 2)
