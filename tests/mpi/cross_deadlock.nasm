; Rank 3 never reaches the permute that the other ranks wait on: a deadlock spanning the
; processes of tests/mpi, reported as one process reports it.
.kernel cross_deadlock
.hbm x : fp32[4, 8] input
.hbm y : fp32[4, 8] output
.group g = rank_groups(4, 1)
.sem done
        cc.sysreg r1, rank_id
        cc.sub r1, r1, 3
        cc.bz r1, skip
        cc.permute_implicit y, x, g, channel=1 @signal(done)
skip:
        sp.nop @wait(done >= 1)
