; fg_allgather.nasm: fine-grained all-gather, the double-buffered ring of seed 000 section 2
; (fg_allgather.py) without the matmul of fgcc.
;
; Parameters: M (rows per rank), K, TP (ranks; `.ranks TP`), NUM_GROUPS, FORCE_HBM (0, 1),
;             DT (bf16, fp32, fp16).
; Inputs:     lhs : DT[M, K]        Outputs: out : DT[G*M, K], G = TP / NUM_GROUPS: the lhs of
;             every rank of my replica group (NUM_GROUPS groups of G consecutive ranks),
;             concatenated in rank order.
; Envelope:   TP even, 2 <= TP <= 128 (the seed); NUM_GROUPS divides TP; M divisible by the
;             NS = 2 * RING_CH slices (the seed's M divisible by LNC_N * CHANNEL_N, taken at
;             LNC 2 whatever --lnc), slice rows RS = M / NS <= 128 or a multiple of 128;
;             SBUF path when !FORCE_HBM and both buffers (2 * M * K * bytes) fit the seed's
;             24 MiB budget and the SBUF, else the HBM path.
;
; Idea: RANK_N = G ring steps per slice (lib/ring.inc: slices, channels, cores). Step 0 copies
; the local slice into buf0 and stores it; at step s the buffer holding the data of
; ring_rank(s) is stored into that rank's slot of `out` (a register as the DMA's scalar
; offset) while collective_permute_implicit passes it on to the successor's other buffer. A
; permute waits for the store of the previous step (its destination is then free), so the
; next permute overlaps this step's store.
.kernel fg_allgather
.param M = 256
.param K = 128
.param TP = 4
.param NUM_GROUPS = 1
.param FORCE_HBM = 0
.param DT = bf16
.include "lib/ring.inc"

.if DT != bf16 && DT != fp32 && DT != fp16
  .error "fg_allgather: DT must be bf16, fp32 or fp16"
.endif
.if TP < 2 || TP > 128 || TP % 2 != 0
  .error "fg_allgather: TP must be even and in [2, 128]"
.endif
.ranks TP                ; one rank per shard: run and check default to --ranks TP
.if NUM_GROUPS < 1 || TP % NUM_GROUPS != 0
  .error "fg_allgather: NUM_GROUPS must divide TP"
.endif
.if M < 1 || K < 1
  .error "fg_allgather: M and K must be positive"
.endif
ring_channels TP
.equ G = TP / NUM_GROUPS
.equ NS = 2 * RING_CH
.if M % NS != 0
  .error "fg_allgather: M must be divisible by 2 * channels (the LNC x channel slices)"
.endif
.equ RS = M / NS
.if RS > 128 && RS % 128 != 0
  .error "fg_allgather: slice rows M / (2 * channels) must be <= 128 or a multiple of 128"
.endif
.equ PP = min(RS, 128)            ; partitions of a slice buffer
.equ W = RS / PP * K              ; elements per partition (RS / PP rows side by side)
.if DT == fp32
  .equ BYTES = 4
.else
  .equ BYTES = 2
.endif
.equ SBUF_OK = 2 * M * K * BYTES <= 24 * 1024 * 1024 && 2 * NS * W * BYTES <= 180224
.equ IN_SBUF = FORCE_HBM == 0 && SBUF_OK

.hbm lhs : DT[M, K] input
.hbm out : DT[G * M, K] output
.view lhsv = lhs as DT[NS, PP, W]
.view outv = out as DT[G * NS, PP, W]
.if IN_SBUF
.sbuf buf0 : DT[PP, NS, W]
.sbuf buf1 : DT[PP, NS, W]
.else
.hbm buf0 : DT[PP, NS, W] scratch
.hbm buf1 : DT[PP, NS, W] scratch
.endif
.group g = rank_groups(TP, NUM_GROUPS)

        ring_regs sp
        ring_regs cc
        ring_group_base G
; Step 0's data: the local slice.
.for j in 0 .. NS
        ring_slice j
        sp.bz OWN, .Lskip
        sp.dma Q, buf0[:, j, :], lhsv[j, :, :]  @signal(LD)
.Lskip:
.endfor
.for s in 0 .. G
  .if s % 2 == 0
    .set SRC = buf0
    .set DST = buf1
  .else
    .set SRC = buf1
    .set DST = buf0
  .endif
  .for j in 0 .. NS
        ring_slice j
        sp.bz OWN, .Lskip
        cc.bz OWN, .Lskip
        ring_slot s, j, NS
    .if s == 0
        sp.dma Q, outv[@r5, :, :], SRC[:, j, :]  @wait(LD >= 1) @signal(CP)
    .else
        sp.dma Q, outv[@r5, :, :], SRC[:, j, :]  @wait(RX >= s) @signal(CP)
    .endif
    .if s < G - 1
      .if s == 0
        cc.permute_implicit DST[:, j, :], SRC[:, j, :], g, channel=CHJ  @wait(LD >= 1) @signal(RX)
      .else
        cc.permute_implicit DST[:, j, :], SRC[:, j, :], g, channel=CHJ  @wait(RX >= s, CP >= s) @signal(RX)
      .endif
    .endif
.Lskip:
  .endfor
.endfor
