; nisa check: a wrong count (iteration i waits for i loads instead of i + 1).
.kernel wrong_count
.param N = 4
.param OK = 0
.hbm  x : fp32[N, 128, 64] input
.hbm  y : fp32[N, 128, 64] output
.sbuf a : fp32[128, 2, 64]
.sbuf b : fp32[128, 2, 64]
.sem  s_in, s_cmp, s_out
.for i in 0 .. N
        sp.dma q0, a[:, i % 2, :], x[i]  @wait(s_cmp >= max(0, i - 1))  @signal(s_in)
        dve.tensor_scalar b[:, i % 2, :], a[:, i % 2, :], op0=mul, operand0=2.0  @wait(s_in >= i + OK, s_out >= max(0, i - 1))  @signal(s_cmp)
        sp.dma q1, y[i], b[:, i % 2, :]  @wait(s_cmp >= i + 1)  @signal(s_out)
.endfor
