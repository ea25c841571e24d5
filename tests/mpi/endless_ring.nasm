; A ring that never ends (a permute per iteration, forever): tests/mpi kills one process
; while it runs and the whole job must end.
.kernel endless_ring
.hbm x : fp32[4, 8] input
.hbm y : fp32[4, 8] output
.group g = rank_groups(4, 1)
.sem done
loop:
        cc.permute_implicit y, x, g, channel=0 @signal(done)
        cc.nop @wait(done >= 1)
        cc.sem_set done, 0
        cc.br loop
