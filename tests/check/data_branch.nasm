; nisa check: control flow that depends on memory is outside what is proved (exit 6).
.kernel data_branch
.hbm  n : int32[1, 1] input
        sp.ld r1, n[0:1, 0:1]
        sp.bnz r1, skip
        sp.nop
skip:
