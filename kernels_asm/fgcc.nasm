; fgcc.nasm: all-gather fused with matmul, the double-buffered ring of seed 000 section 2
; (fgcc.py allgather_compute_matmul): out = AllGather(lhs) @ rhs.
;
; Parameters: M (rows per rank), K, N (columns per rank), TP (ranks; `.ranks TP`), NUM_GROUPS,
;             FORCE_HBM (0, 1), DT (bf16, fp32, fp16); FORCE_RHS_STREAM (0, 1: a test knob,
;             streams the RHS even when it fits the budget).
; Inputs:     lhs : DT[M, K], rhs : DT[K, N]
; Outputs:    out : DT[G*M, N] = (lhs of every rank of my group, concatenated in rank order)
;             @ rhs, G = TP / NUM_GROUPS (NUM_GROUPS groups of G consecutive ranks). Matmuls
;             accumulate in fp32 PSUM; the result is rounded to DT once.
; Envelope:   trn2 / trn3 (dma_transpose; the seed is "TRN2 only"); TP even in [2, 128];
;             NUM_GROUPS divides TP; M divisible by NS = 2 * RING_CH (lib/ring.inc); K <= 128
;             or a multiple of 128 (TILE_K); the RHS resident in SBUF when 2 * K * N * bytes is
;             within the seed's 16 MiB RHS budget, else streamed from HBM by N tiles of 512
;             (two K x 512 tiles in SBUF); rhs, output tiles and work tiles within the
;             partition; SBUF path when !FORCE_HBM, the lhs double buffer (2 * M * K * bytes)
;             fits what the 24 MiB budget leaves after the RHS (resident, or its two N tiles)
;             and the buffers fit the partition.
;
; Idea: lib/ring.inc's slices and channels. SBUF path: each slice's buffers hold lhs^T
; ([K, RS]: the matmul's stationary side), loaded once by dma_transpose; at ring step s the
; PE multiplies the buffer holding ring_rank(s)'s slice by the resident rhs (M tiles <= 128,
; N tiles <= 512, K tiles of 128 accumulated in PSUM), ACT copies PSUM to an SBUF tile (two
; per slice, alternating), SP stores it into that rank's rows of `out` (register scalar
; offset), while collective_permute_implicit passes the buffer on. The permute of step s waits
; for the matmuls of step s - 1 (its destination is then free): it runs under this step's
; matmuls. HBM path: the buffers are HBM rows; each step first loads (dma_transpose) the
; buffer into an SBUF work tile of the slice.
; Streamed RHS (over the 16 MiB budget, the seed's rhs_in_sbuf = False): the step's loop runs
; N tile outer, slice and M tile inner; POOL loads each ring step's N tile nt of rhs (K x 512)
; into one of two SBUF tiles, shared by the slices of the core, once the matmuls of the tile
; before the previous one are done: the load of tile t + 1 (the next step's first one after
; a step's last) runs under the matmuls of tile t, as the permutes do (the stream moves
; K * N * bytes per step and core, re-read every step: the ring's buffers are not kept).
.kernel fgcc
.param M = 256
.param K = 128
.param N = 256
.param TP = 4
.param NUM_GROUPS = 1
.param FORCE_HBM = 0
.param DT = bf16
.param FORCE_RHS_STREAM = 0
.include "lib/ring.inc"

.if GEN < 3
  .error "fgcc: needs trn2 or trn3 (dma_transpose)"
.endif
.if DT != bf16 && DT != fp32 && DT != fp16
  .error "fgcc: DT must be bf16, fp32 or fp16"
.endif
.if TP < 2 || TP > 128 || TP % 2 != 0
  .error "fgcc: TP must be even and in [2, 128]"
.endif
.ranks TP                ; one rank per shard: run and check default to --ranks TP
.if NUM_GROUPS < 1 || TP % NUM_GROUPS != 0
  .error "fgcc: NUM_GROUPS must divide TP"
.endif
.if M < 1 || K < 1 || N < 1
  .error "fgcc: M, K and N must be positive"
.endif
.if K > 128 && K % 128 != 0
  .error "fgcc: K must be <= 128 or a multiple of 128 (TILE_K)"
.endif
ring_channels TP
.equ G = TP / NUM_GROUPS
.equ NS = 2 * RING_CH
.if M % NS != 0
  .error "fgcc: M must be divisible by 2 * channels (the LNC x channel slices)"
.endif
.equ RS = M / NS                 ; rows of a slice
.equ KP = min(K, 128)            ; K on partitions
.equ KT = K / KP                 ; K tiles
.equ MTN = cdiv(RS, 128)         ; M tiles of a slice
.equ NTN = cdiv(N, 512)          ; N tiles
.equ TPS = MTN * NTN             ; output tiles of a slice per ring step
.if DT == fp32
  .equ BYTES = 4
.else
  .equ BYTES = 2
.endif
.equ STREAM = FORCE_RHS_STREAM != 0 || 2 * K * N * BYTES > 16 * 1024 * 1024
.equ TN = min(N, 512)            ; columns of an N tile
.if STREAM
  .equ RHS_SB = 2 * K * TN * BYTES   ; the two streamed N tiles
.else
  .equ RHS_SB = K * N * BYTES        ; the resident rhs
.endif
.equ PART = 180224               ; usable SBUF bytes per partition (the smallest target's)
.equ FIXED = RHS_SB / KP + NS * 1024 * BYTES      ; rhs + output tiles, per partition
.equ BUFS = 2 * NS * KT * RS * BYTES              ; both lhs^T buffers, per partition
.if FIXED + NS * KT * RS * BYTES > PART
  .error "fgcc: rhs, output tiles and the lhs work tiles exceed the SBUF partition"
.endif
.equ IN_SBUF = FORCE_HBM == 0 && 2 * M * K * BYTES <= 24 * 1024 * 1024 - RHS_SB && FIXED + BUFS <= PART

.hbm lhs : DT[M, K] input
.hbm rhs : DT[K, N] input
.hbm out : DT[G * M, N] output
.view lhsv = lhs as DT[NS, RS, K]
.view rhsv = rhs as DT[KT, KP, N]
.view outv = out as DT[G * NS, RS, N]
.if STREAM
.sbuf rhs_sb : DT[KP, 2, KT, TN]  ; N tile t of the stream in slot t % 2
.else
.sbuf rhs_sb : DT[KP, KT, N]
.endif
.sbuf osb : DT[128, NS, 1024]    ; two output tiles of 512 columns per slice
.psum ps : fp32[128, NS, 512]    ; one bank per slice
.if IN_SBUF
.sbuf buf0 : DT[KP, NS, KT * RS]  ; lhs^T of a slice: K tile kt at columns kt*RS ..
.sbuf buf1 : DT[KP, NS, KT * RS]
.else
.hbm buf0 : DT[NS, RS, K] scratch
.hbm buf1 : DT[NS, RS, K] scratch
.sbuf wk : DT[KP, NS, KT * RS]    ; the step's slice, transposed
.endif
.group g = rank_groups(TP, NUM_GROUPS)
.sem rh, tr0, tr1, tr2, tr3, tr4, tr5, tr6, tr7

; TR_J: slice j's work-tile loads (HBM path).
; fgcc_full S, J: the matmuls' stationary side of slice J at ring step S (STAT) and when it
; holds the step's data (FS >= FV); RXS >= RXV: the ring buffer holds it (HBM path).
.macro fgcc_full s0, j0
  .if s0 == 0
    .set RXV = NLD
    .set RXS = LD
  .else
    .set RXV = s0
    .set RXS = RX
  .endif
  .if IN_SBUF
    .set STAT = SRC
    .set FV = RXV
    .set FS = RXS
  .else
    .set STAT = wk
    .set FV = (s0 + 1) * KT
    .set FS = TR
  .endif
.endm

; fgcc_tile J, MT, NT, I, T: output tile (MT, NT) of slice J, its I-th; K tiles accumulated
; in PSUM, copied by ACT, stored by SP into the rows of ring_slot's rank. Streamed RHS: the N
; tile is the T-th of the stream (slot T % 2), each K tile waits for its load.
.macro fgcc_tile j0, mt0, nt0, i0, t0
  .set MT = min(128, RS - mt0*128)
  .set NT = min(512, N - nt0*512)
  .set OC = (i0 % 2) * 512
  .for kt in 0 .. KT
    .set C0 = kt*RS + mt0*128
    .if STREAM
      .set RW = t0*KT + kt + 1
      .if KT == 1
        pe.matmul ps[0:MT, j0, 0:NT], STAT[:, j0, C0 : C0+MT], rhs_sb[:, t0 % 2, kt, 0:NT], acc=overwrite  @wait(FS >= FV, CP >= i0, rh >= RW) @signal(MM)
      .elif kt == 0
        pe.matmul ps[0:MT, j0, 0:NT], STAT[:, j0, C0 : C0+MT], rhs_sb[:, t0 % 2, kt, 0:NT], acc=overwrite  @wait(FS >= FV, CP >= i0, rh >= RW)
      .elif kt == KT - 1
        pe.matmul ps[0:MT, j0, 0:NT], STAT[:, j0, C0 : C0+MT], rhs_sb[:, t0 % 2, kt, 0:NT], acc=accumulate  @wait(rh >= RW) @signal(MM)
      .else
        pe.matmul ps[0:MT, j0, 0:NT], STAT[:, j0, C0 : C0+MT], rhs_sb[:, t0 % 2, kt, 0:NT], acc=accumulate  @wait(rh >= RW)
      .endif
    .elif KT == 1
        pe.matmul ps[0:MT, j0, 0:NT], STAT[:, j0, C0 : C0+MT], rhs_sb[:, kt, nt0*512 : nt0*512+NT], acc=overwrite  @wait(FS >= FV, CP >= i0, rh >= KT) @signal(MM)
    .elif kt == 0
        pe.matmul ps[0:MT, j0, 0:NT], STAT[:, j0, C0 : C0+MT], rhs_sb[:, kt, nt0*512 : nt0*512+NT], acc=overwrite  @wait(FS >= FV, CP >= i0, rh >= KT)
    .elif kt == KT - 1
        pe.matmul ps[0:MT, j0, 0:NT], STAT[:, j0, C0 : C0+MT], rhs_sb[:, kt, nt0*512 : nt0*512+NT], acc=accumulate  @signal(MM)
    .else
        pe.matmul ps[0:MT, j0, 0:NT], STAT[:, j0, C0 : C0+MT], rhs_sb[:, kt, nt0*512 : nt0*512+NT], acc=accumulate
    .endif
  .endfor
        act.activation osb[0:MT, j0, OC : OC+NT], ps[0:MT, j0, 0:NT], func=copy  @wait(MM >= i0+1, ST >= max(0, i0-1)) @signal(CP)
        sp.dma Q, outv[@r5, mt0*128 : mt0*128+MT, nt0*512 : nt0*512+NT], osb[0:MT, j0, OC : OC+NT]  @wait(CP >= i0+1) @signal(ST)
.endm

; fgcc_rhs_load U: POOL loads N tile U of the RHS stream (ring step U / NTN, columns of N tile
; U % NTN) into slot U % 2 once the matmuls of tile U - 2 are done on every slice of the core:
; PE runs them in slice order, so the core's last slice (NS - 1 if it owns the odd slices,
; else NS - 2) finishing them is enough.
.macro fgcc_rhs_load u
  .set RC = (u % NTN) * 512
  .set RN = min(512, N - RC)
  .if u < 2
        pool.dma q15, rhs_sb[:, u % 2, 0, 0:RN], rhsv[0, :, RC : RC+RN]  @signal(rh)
  .else
    .set FREE = ((u - 2) / NTN) * TPS + ((u - 2) % NTN + 1) * MTN
        pool.bz r21, .Leven
        ring_slice NS - 1
        pool.dma q15, rhs_sb[:, u % 2, 0, 0:RN], rhsv[0, :, RC : RC+RN]  @wait(MM >= FREE) @signal(rh)
        pool.br .Ldone
.Leven:
        ring_slice NS - 2
        pool.dma q15, rhs_sb[:, u % 2, 0, 0:RN], rhsv[0, :, RC : RC+RN]  @wait(MM >= FREE) @signal(rh)
.Ldone:
  .endif
  .for kt in 1 .. KT
        pool.dma q15, rhs_sb[:, u % 2, kt, 0:RN], rhsv[kt, :, RC : RC+RN]  @signal(rh)
  .endfor
.endm

.macro tr_sem j
  .if j == 0
    .set TR = tr0
  .elif j == 1
    .set TR = tr1
  .elif j == 2
    .set TR = tr2
  .elif j == 3
    .set TR = tr3
  .elif j == 4
    .set TR = tr4
  .elif j == 5
    .set TR = tr5
  .elif j == 6
    .set TR = tr6
  .else
    .set TR = tr7
  .endif
.endm

        ring_regs sp
        ring_regs cc
        ring_regs pe
        ring_regs act
        ring_regs pool
        ring_group_base G
; The resident rhs (every core its own copy).
.if !STREAM
  .for kt in 0 .. KT
        pool.dma q15, rhs_sb[:, kt, :], rhsv[kt, :, :]  @signal(rh)
  .endfor
.endif
; Step 0's data: the local slice (transposed into the SBUF buffer, or copied to the HBM one).
.for j in 0 .. NS
        ring_slice j
        pool.bz OWN, .Lskip
  .if IN_SBUF
    .for kt in 0 .. KT
        pool.dma_transpose QL, buf0[:, j, kt*RS : (kt+1)*RS], lhsv[j, :, kt*KP : (kt+1)*KP]  @signal(LD)
    .endfor
  .else
        pool.dma QL, buf0[j, :, :], lhsv[j, :, :]  @signal(LD)
  .endif
.Lskip:
.endfor
.if IN_SBUF
  .equ NLD = KT
.else
  .equ NLD = 1
.endif

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
        tr_sem j
        pool.bz OWN, .Lskip
        pe.bz OWN, .Lskip
        act.bz OWN, .Lskip
        sp.bz OWN, .Lskip
        cc.bz OWN, .Lskip
    fgcc_full s, j
    .if !IN_SBUF
      ; load the step's slice into the work tile once the previous step's matmuls are done
      .for kt in 0 .. KT
        pool.dma_transpose QL, wk[:, j, kt*RS : (kt+1)*RS], SRC[j, :, kt*KP : (kt+1)*KP]  @wait(RXS >= RXV, MM >= s * TPS) @signal(TR)
      .endfor
    .endif
    ; the ring: pass the buffer on once my other buffer's consumers are done
    .if s < G - 1
      .if IN_SBUF
        .set FREEV = s * TPS
        .set FREES = MM
      .else
        .set FREEV = s * KT
        .set FREES = TR
      .endif
      .if s == 0
        .set PW = LD
        .set PV = NLD
      .else
        .set PW = RX
        .set PV = s
      .endif
      .if IN_SBUF
        cc.permute_implicit DST[:, j, :], SRC[:, j, :], g, channel=CHJ  @wait(PW >= PV, FREES >= FREEV) @signal(RX)
      .else
        cc.permute_implicit DST[j, :, :], SRC[j, :, :], g, channel=CHJ  @wait(PW >= PV, FREES >= FREEV) @signal(RX)
      .endif
    .endif
    .if !STREAM
        ring_slot s, j, NS
      .for mt in 0 .. MTN
        .for nt in 0 .. NTN
        fgcc_tile j, mt, nt, s*TPS + mt*NTN + nt, 0
        .endfor
      .endfor
    .endif
.Lskip:
  .endfor
  .if STREAM
    .for nt in 0 .. NTN
      .set T = s*NTN + nt
      .if T == 0
        fgcc_rhs_load 0
      .endif
      .if T + 1 < G * NTN
        fgcc_rhs_load T + 1
      .endif
      .for j in 0 .. NS
        ring_slice j
        tr_sem j
        pe.bz OWN, .Lskip
        act.bz OWN, .Lskip
        sp.bz OWN, .Lskip
        fgcc_full s, j
        ring_slot s, j, NS
        .for mt in 0 .. MTN
        fgcc_tile j, mt, nt, s*TPS + nt*MTN + mt, T
        .endfor
.Lskip:
      .endfor
    .endfor
  .endif
.endfor
