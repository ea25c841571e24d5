; A rank whose input holds a bad row index faults (rank 2 in tests/mpi): the fault report must
; be the one a single process gives, whichever process runs the rank.
.kernel bad_index
.hbm idx : int32[1, 1] input
.hbm x : fp32[8, 16] input
.hbm y : fp32[8, 16] output
.sbuf t : fp32[1, 16]
.group g = rank_groups(4, 1)
.sem got, sent
        sp.ld r1, idx[0:1, 0:1]
        sp.dma q0, t, x[@r1, :] @signal(got)
        cc.permute_implicit y, x, g, channel=0 @wait(got >= 1) @signal(sent)
        sp.nop @wait(sent >= 1)
