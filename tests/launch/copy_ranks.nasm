.kernel copy
.ranks 3
.lnc 2
.hbm x : fp32[4, 8] input
.hbm y : fp32[4, 8] output
.sbuf t : fp32[4, 8]
.sem s
        sp.sysreg r1, program_id
        sp.bnz r1, done
        sp.dma q0, t, x @signal(s)
        sp.dma q1, y, t @wait(s >= 1)
done:
