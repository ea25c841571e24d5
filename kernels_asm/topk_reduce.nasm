; topk_reduce.nasm: the MoE combine of seed 000 section 3 (topk_reduce.py) - despite the
; name, no top-K selection: for each token t, the rows of the all_to_all_v output whose
; packed token id is t (at most K of them) are gathered and summed.
;
; Parameters: ROWS, T, K, H, DT (bf16, fp16).
; Inputs:     inp : DT[ROWS, H+2]; the last two columns of a row hold one little-endian int32
;             token id (column H the low half), -1 in unused rows.
; Outputs:    out : DT[T, H], out[t] = sum of the rows whose id is t (0 for a token without
;             rows). Run with --ranks 1 (--lnc 1 or 2).
; Envelope:   T <= 128 (tokens on partitions), K <= 8 (one find_index8), H even (divisible by
;             the LNC count; it also keeps the int32 id 4-byte aligned), 1 <= ROWS <= 16384
;             (the find_index8 data limit; fewer than 8 rows are padded). At most K rows per
;             token (the router's top-K): rows of a token past its K-th are not summed, as in
;             the seed.
;
; Idea (as the seed): the id column pair of every row, reinterpreted as int32 (a view), is
; read into each of the T partitions by one DMA whose HBM row index is a vector offset of zeros
; (the seed's dma_transpose + stream_shuffle_broadcast); iota puts t into the 8 slots of
; partition t; find_index8 returns the first 8 positions of value t in the id row (all ones
; where absent; a row of fewer than 8 ids is padded with -1 to the 8 it searches); then K read-modify-write DMAs (dma_compute add, vector offset = position k,
; oob=skip drops absent positions) sum the gathered rows into a zeroed [T, H] tile (each add
; rounds to DT, as the seed's dma_compute). LNC: H is split in two halves; core c sums half c
; under --lnc 2, core 0 both under --lnc 1.
.kernel topk_reduce
.param ROWS = 64
.param T = 16
.param K = 4
.param H = 256
.param DT = bf16

.if DT != bf16 && DT != fp16
  .error "topk_reduce: DT must be bf16 or fp16"
.endif
.if T < 1 || T > 128
  .error "topk_reduce: T must be in [1, 128] (tokens on partitions)"
.endif
.if K < 1 || K > 8
  .error "topk_reduce: K must be in [1, 8] (one find_index8)"
.endif
.if H < 2 || H % 2 != 0
  .error "topk_reduce: H must be even (split over the LNC cores; int32 id alignment)"
.endif
.if ROWS < 1 || ROWS > 16384
  .error "topk_reduce: ROWS must be in [1, 16384] (the find_index8 data limit)"
.endif
.equ HW = H / 2                  ; columns per LNC half
.equ IC = (H + 2) / 2            ; int32 columns of a row
.equ IW = max(ROWS, 8)           ; the id row: find_index8 searches 8..16384 elements

.hbm inp : DT[ROWS, H + 2] input
.hbm out : DT[T, H] output
.view inpi = inp as int32[1, ROWS, IC]
.view outv = out as DT[T, 2, HW]
.sbuf z : uint32[128, 1]         ; vector offsets of zeros: every partition reads row 0
.sbuf ids : int32[128, IW]
.sbuf ar : int32[128, 8]
.sbuf pos : uint32[128, 8]
.sbuf red : DT[128, 2, HW]
.sem s_z, s_ar, s_id, s_pos, s_r0, s_r1, s_a0, s_a1

; r20 / r21: this core owns half 0 / half 1 (r20 = 1 - program_id,
; r21 = program_id - num_programs + 2).
        dve.sysreg r1, program_id
        dve.sysreg r2, num_programs
        dve.li r20, 1
        dve.sub r20, r20, r1
        dve.sub r21, r1, r2
        dve.add r21, r21, 2
        sp.sysreg r1, program_id
        sp.sysreg r2, num_programs
        sp.li r20, 1
        sp.sub r20, r20, r1
        sp.sub r21, r1, r2
        sp.add r21, r21, 2

        dve.memset z[0:T, :], 0.0  @signal(s_z)
        pool.iota ar[0:T, :], [[0, 8]], pmul=1  @signal(s_ar)
.if ROWS < 8
        dve.memset ids[0:T, ROWS:IW], -1.0   ; padding of a short id row: no token's id
.endif
        sp.dma q0, ids[0:T, 0:ROWS], inpi[@vec(z[0:T, 0:1]), :, H / 2]  @wait(s_z >= 1) @signal(s_id)
        dve.find_index8 pos[0:T, :], ids[0:T, :], ar[0:T, :]  @wait(s_id >= 1, s_ar >= 1) @signal(s_pos)
.view inpr = inp as DT[ROWS, H + 2]
.for hv in 0 .. 2
  .if hv == 0
    .set OWN = r20
    .set SR = s_r0
    .set SA = s_a0
    .set QA = q1
    .set QS = q3
  .else
    .set OWN = r21
    .set SR = s_r1
    .set SA = s_a1
    .set QA = q2
    .set QS = q4
  .endif
        dve.bz OWN, .Lskip
        sp.bz OWN, .Lskip
        dve.memset red[0:T, hv, :], 0.0  @signal(SR)
  .for k in 0 .. K
    .if k == 0 && K == 1
        sp.dma_compute QA, red[0:T, hv, :], inpr[@vec(pos[0:T, k:k+1]), hv*HW : (hv+1)*HW], red[0:T, hv, :], oob=skip  @wait(s_pos >= 1, SR >= 1) @signal(SA)
    .elif k == 0
        sp.dma_compute QA, red[0:T, hv, :], inpr[@vec(pos[0:T, k:k+1]), hv*HW : (hv+1)*HW], red[0:T, hv, :], oob=skip  @wait(s_pos >= 1, SR >= 1)
    .elif k == K - 1
        sp.dma_compute QA, red[0:T, hv, :], inpr[@vec(pos[0:T, k:k+1]), hv*HW : (hv+1)*HW], red[0:T, hv, :], oob=skip  @signal(SA)
    .else
        sp.dma_compute QA, red[0:T, hv, :], inpr[@vec(pos[0:T, k:k+1]), hv*HW : (hv+1)*HW], red[0:T, hv, :], oob=skip
    .endif
  .endfor
        sp.dma QS, outv[:, hv, :], red[0:T, hv, :]  @wait(SA >= 1)
.Lskip:
.endfor
