; nisa check: the bug of a double-buffered matmul + bias + GELU written with explicit
; semaphores: tile i's load (sp) overwrites slot i % 2 while the matmul of tile i - 2 (pe) may
; still read it. Nothing orders the load after that matmul (the stores run on pool), so the
; wait belongs on the load: `@wait(s_mm >= max(0, i - 1))`, the count of matmuls done once
; tile i - 2's is. With FIXED=1 the load has it.
.kernel matmul_slot_reuse
.param T = 5
.param FIXED = 0
.hbm  x    : bf16[T, 128, 128] input
.hbm  w    : bf16[128, 256] input
.hbm  bias : fp32[128, 1] input
.hbm  y    : fp32[T, 128, 256] output
.sbuf xs   : bf16[128, 2, 128]
.sbuf ws   : bf16[128, 256]
.sbuf bs   : fp32[128, 1]
.psum ps   : fp32[128, 2, 256]
.sbuf ys   : fp32[128, 2, 256]
.sem  s_w, s_x, s_mm, s_act, s_st
        act.dma q2, ws, w  @signal(s_w)
        act.dma q3, bs, bias  @signal(s_w)
.for i in 0 .. T
  .if FIXED
        sp.dma q0, xs[:, i % 2, :], x[i]  @wait(s_mm >= max(0, i - 1))  @signal(s_x)
  .else
        sp.dma q0, xs[:, i % 2, :], x[i]  @signal(s_x)
  .endif
        pe.matmul ps[:, i % 2, :], xs[:, i % 2, :], ws, acc=overwrite  @wait(s_w >= 2, s_x >= i + 1, s_act >= max(0, i - 1))  @signal(s_mm)
        act.activation ys[:, i % 2, :], ps[:, i % 2, :], func=gelu_apprx_tanh, bias=bs  @wait(s_mm >= i + 1, s_st >= max(0, i - 1))  @signal(s_act)
        pool.dma q1, y[i], ys[:, i % 2, :]  @wait(s_act >= i + 1)  @signal(s_st)
.endfor
