; nisa check: write-after-read across DMA queues (q2 overwrites a while q1 may still store it).
.kernel war_queues
.hbm  x  : fp32[128, 64] input
.hbm  x2 : fp32[128, 64] input
.hbm  y  : fp32[128, 64] output
.hbm  y2 : fp32[128, 64] output
.sbuf a  : fp32[128, 64]
.sem  s1, s2, s3
        sp.dma q0, a, x  @signal(s1)
        act.dma q1, y, a  @wait(s1 >= 1)  @signal(s2)
        sp.dma q2, a, x2  @wait(s1 >= 1)  @signal(s3)
        act.dma q3, y2, a  @wait(s3 >= 1)
