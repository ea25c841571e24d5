; cc_missing_wait.nasm (tests/debugger): a DMA writes `a` while an all_reduce reads it. With
; WAIT=1 the all_reduce waits for the DMA's signal; with WAIT=0 the two are unordered: a race
; on a collective's source, which `nisa run --check-races` and the debugger must report.
;
; Parameters: WAIT (0 | 1), N (columns). Run with --ranks 2.
; Inputs: x : fp32[4, N]      Outputs: y : fp32[4, N] (the sum over the two ranks of x)
.kernel cc_missing_wait
.param WAIT = 1
.param N = 64
.hbm x : fp32[4, N] input
.hbm a : fp32[4, N]
.hbm y : fp32[4, N] output
.group g = rank_groups(2, 1)
.sem ld, cc

        sp.dma q0, a[:, :], x[:, :]  @signal(ld)
.if WAIT
        cc.all_reduce y[:, :], a[:, :], g  @wait(ld >= 1) @signal(cc)
.else
        cc.all_reduce y[:, :], a[:, :], g  @signal(cc)
.endif
        sp.nop  @wait(cc >= 1)
