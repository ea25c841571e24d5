; nisa check: the earlier access signals nothing (dve writes b[:, i, :] without a @signal, act
; reads it with no wait for it). The fix needs a semaphore of its own: declare one, signal it
; from the dve line and wait on the act line for the count of dve writes up to iteration i.
.kernel no_signal
.param N = 4
.hbm  x : fp32[128, 64] input
.hbm  y : fp32[N, 128, 64] output
.sbuf a : fp32[128, 64]
.sbuf b : fp32[128, N, 64]
.sbuf c : fp32[128, N, 64]
.sem  s_in, s_act
        sp.dma q0, a, x  @signal(s_in)
.for i in 0 .. N
        dve.tensor_scalar b[:, i, :], a, op0=mul, operand0=2.0  @wait(s_in >= 1)
        act.activation c[:, i, :], b[:, i, :], func=copy  @wait(s_in >= 1)  @signal(s_act)
        sp.dma q1, y[i], c[:, i, :]  @wait(s_act >= i + 1)
.endfor
