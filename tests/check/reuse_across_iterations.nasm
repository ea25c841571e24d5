; nisa check: a double-buffer slot reloaded while the compute of two iterations back may still
; read it. The loads run on pool, which nothing else orders: iteration i's load of slot i % 2
; must wait for the compute of iteration i - 2 (`@wait(s_cmp >= max(0, i - 1))` on the load,
; as in wrong_count.nasm). With FIXED=1 it does.
.kernel reuse_across_iterations
.param N = 6
.param FIXED = 0
.hbm  x : fp32[N, 128, 64] input
.hbm  y : fp32[N, 128, 64] output
.sbuf a : fp32[128, 2, 64]
.sbuf b : fp32[128, 2, 64]
.sem  s_in, s_cmp, s_out
.for i in 0 .. N
  .if FIXED
        pool.dma q0, a[:, i % 2, :], x[i]  @wait(s_cmp >= max(0, i - 1))  @signal(s_in)
  .else
        pool.dma q0, a[:, i % 2, :], x[i]  @signal(s_in)
  .endif
        dve.tensor_scalar b[:, i % 2, :], a[:, i % 2, :], op0=mul, operand0=2.0  @wait(s_in >= i + 1, s_out >= max(0, i - 1))  @signal(s_cmp)
        sp.dma q1, y[i], b[:, i % 2, :]  @wait(s_cmp >= i + 1)  @signal(s_out)
.endfor
