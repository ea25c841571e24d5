; copy_transpose.nasm (tests/debugger): two PE transposes read b, then a dve copy overwrites b
; with no wait on them. The race checker must report the direct pair (the first transpose and
; the copy), not only the later transpose. Same parameters and input as cumsum.nasm.
.kernel copy_transpose
.param ROWS = 128
.param COLS = 64
.hbm  x  : fp32[ROWS, COLS] input
.hbm  y  : fp32[32, 32] output
.sbuf a  : fp32[32, 16384]
.sbuf b  : fp32[32, 32]
.sbuf c  : fp32[32, 32]
.psum p  : fp32[32, 32]
.psum p2 : fp32[32, 32]
.sem  s, t, u, v
        sp.dma q0, b, x[0:32, 0:32]  @signal(s)
        pe.transpose p, b  @wait(s >= 1)
        pe.transpose p2, b  @signal(t)
        dve.memset a, 0.0
        dve.copy b, a[:, 0:32]  @wait(s >= 1)  @signal(v)
        act.copy c, p  @wait(t >= 1)  @signal(u)
        sp.dma q1, y, c  @wait(u >= 1, v >= 1)
