; fgcc.nasm: all-gather fused with matmul, the double-buffered ring of seed 000 section 2
; (fgcc.py allgather_compute_matmul): out = AllGather(lhs) @ rhs.
;
; Parameters: M (rows per rank), K, N (columns per rank), TP (ranks, = --ranks), NUM_GROUPS,
;             FORCE_HBM (0, 1), DT (bf16, fp32, fp16).
; Inputs:     lhs : DT[M, K], rhs : DT[K, N]
; Outputs:    out : DT[G*M, N] = (lhs of every rank of my group, concatenated in rank order)
;             @ rhs, G = TP / NUM_GROUPS (NUM_GROUPS groups of G consecutive ranks). Matmuls
;             accumulate in fp32 PSUM; the result is rounded to DT once.
; Envelope:   trn2 / trn3 (dma_transpose; the seed is "TRN2 only"); TP even in [2, 128];
;             NUM_GROUPS divides TP; M divisible by NS = 2 * RING_CH (lib/ring.inc); K <= 128
;             or a multiple of 128 (TILE_K); the RHS resident in SBUF: 2 * K * N * bytes within
;             the seed's 16 MiB RHS budget and the partition; SBUF path when !FORCE_HBM and
;             the lhs double buffer (2 * M * K * bytes) fits what the 24 MiB budget leaves.
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
.kernel fgcc
.param M = 256
.param K = 128
.param N = 256
.param TP = 4
.param NUM_GROUPS = 1
.param FORCE_HBM = 0
.param DT = bf16
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
.if 2 * K * N * BYTES > 16 * 1024 * 1024
  .error "fgcc: 2 * K * N * bytes exceeds the 16 MiB SBUF RHS budget (streamed RHS not implemented)"
.endif
.equ PART = 180224               ; usable SBUF bytes per partition (the smallest target's)
.equ FIXED = KT * N * BYTES + NS * 1024 * BYTES   ; rhs + output tiles, per partition
.equ BUFS = 2 * NS * KT * RS * BYTES              ; both lhs^T buffers, per partition
.if FIXED + NS * KT * RS * BYTES > PART
  .error "fgcc: rhs, output tiles and the lhs work tiles exceed the SBUF partition"
.endif
.equ IN_SBUF = FORCE_HBM == 0 && 2 * M * K * BYTES <= 24 * 1024 * 1024 - K * N * BYTES && FIXED + BUFS <= PART

.hbm lhs : DT[M, K] input
.hbm rhs : DT[K, N] input
.hbm out : DT[G * M, N] output
.view lhsv = lhs as DT[NS, RS, K]
.view rhsv = rhs as DT[KT, KP, N]
.view outv = out as DT[G * NS, RS, N]
.sbuf rhs_sb : DT[KP, KT, N]
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
.for kt in 0 .. KT
        pool.dma q15, rhs_sb[:, kt, :], rhsv[kt, :, :]  @signal(rh)
.endfor
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
    ; FULL: the buffer holds this step's data.
    .if s == 0
      .set FV = NLD
      .set FS = LD
    .else
      .set FV = s
      .set FS = RX
    .endif
    .if IN_SBUF
      .set STAT = SRC
      .set STATJ = j
    .else
      ; load the step's slice into the work tile once the previous step's matmuls are done
      .for kt in 0 .. KT
        pool.dma_transpose QL, wk[:, j, kt*RS : (kt+1)*RS], SRC[j, :, kt*KP : (kt+1)*KP]  @wait(FS >= FV, MM >= s * TPS) @signal(TR)
      .endfor
      .set STAT = wk
      .set FV = (s + 1) * KT
      .set FS = TR
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
        ring_slot s, j, NS
    .for mt in 0 .. MTN
      .set MT = min(128, RS - mt*128)
      .for nt in 0 .. NTN
        .set NT = min(512, N - nt*512)
        .set I = s*TPS + mt*NTN + nt
        .set OC = (I % 2) * 512
        .for kt in 0 .. KT
          .set C0 = kt*RS + mt*128
          .if KT == 1
        pe.matmul ps[0:MT, j, 0:NT], STAT[:, j, C0 : C0+MT], rhs_sb[:, kt, nt*512 : nt*512+NT], acc=overwrite  @wait(FS >= FV, CP >= I, rh >= KT) @signal(MM)
          .elif kt == 0
        pe.matmul ps[0:MT, j, 0:NT], STAT[:, j, C0 : C0+MT], rhs_sb[:, kt, nt*512 : nt*512+NT], acc=overwrite  @wait(FS >= FV, CP >= I, rh >= KT)
          .elif kt == KT - 1
        pe.matmul ps[0:MT, j, 0:NT], STAT[:, j, C0 : C0+MT], rhs_sb[:, kt, nt*512 : nt*512+NT], acc=accumulate  @signal(MM)
          .else
        pe.matmul ps[0:MT, j, 0:NT], STAT[:, j, C0 : C0+MT], rhs_sb[:, kt, nt*512 : nt*512+NT], acc=accumulate
          .endif
        .endfor
        act.activation osb[0:MT, j, OC : OC+NT], ps[0:MT, j, 0:NT], func=copy  @wait(MM >= I+1, ST >= max(0, I-1)) @signal(CP)
        sp.dma Q, outv[@r5, mt*128 : mt*128+MT, nt*512 : nt*512+NT], osb[0:MT, j, OC : OC+NT]  @wait(CP >= I+1) @signal(ST)
      .endfor
    .endfor
.Lskip:
  .endfor
.endfor
