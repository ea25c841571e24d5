; depthwise_conv1d.nasm: per-channel (depthwise) 1-D convolution by implicit GEMM.
;
; Parameters: N, C, W, S (filter width), STRIDE (1), PAD_L (0), PAD_R (0), DT (bf16 | fp32).
; Inputs:     img : DT[N, C, 1, W], filter : DT[C, 1, 1, S]
; Outputs:    out : DT[N, C, 1, Q], Q = (W + PAD_L + PAD_R - S) / STRIDE + 1
;             out[n, c, 0, q] = sum_s filter[c, 0, 0, s] * img[n, c, 0, q*STRIDE + s - PAD_L]
;             (img outside [0, W) is zero; cross-correlation, no channel sum).
; Envelope:   N, C, W >= 1; 1 <= S <= 1024; STRIDE >= 1; PAD_L, PAD_R in [0, 4096]; Q >= 1;
;             all HBM tensors together below 2^31 bytes.
;
; Idea (seed 000 section 4, docs/machine.md "Seed kernel envelopes"): per channel tile of <= 128 channels the filters
; [C_t, S] are loaded once and transposed on PE (transpose -> PSUM -> DVE copy) into [S_t, C_t]
; tiles (S tiles of <= 128 taps). Per (image, channel, Q tile of <= 512) the output row is a
; degenerate (1 x S) . (S x Q) matmul: stationary = the channel's filter column [S_t, 1],
; moving = the implicit im2col tile [S_t, Q_t], accumulated in PSUM over the S tiles
; (acc=overwrite on the first). The im2col tile is never unfolded in memory: ONE DMA per S tile
; reads it with an access pattern whose partition (row) stride is one element and whose free
; stride is STRIDE (consecutive partitions read consecutive, overlapping windows), so any stride
; works (the seed uses a strided on-chip copy for stride > 1). Zero padding: the channel tile's
; rows are first copied into a zero-padded HBM scratch xp[N, C, PAD_L + W + PAD_R] (DMA of img,
; DMAs of a zero tile into the pads), so every window is a plain rectangle. DVE and ACT take
; turns to copy a PSUM row to SBUF and trigger its output DMA. im2col tiles, PSUM rows and
; output rows rotate over 4 slots (4 units in flight hide the 2 us DMA latency).
; LNC: channels split contiguously, ceil(C/2) on core 0 and the rest on core 1 (--lnc 1: core 0
; runs both); unlike the seed C need not be even.
.kernel depthwise_conv1d
.param N = 1
.param C = 8
.param W = 64
.param S = 3
.param STRIDE = 1
.param PAD_L = 0
.param PAD_R = 0
.param DT = bf16
.include "lib/lnc.inc"

.if DT != fp32 && DT != bf16
  .error "depthwise_conv1d: DT must be fp32 or bf16"
.endif
.if N < 1 || C < 1 || W < 1
  .error "depthwise_conv1d: N, C and W must be positive"
.endif
.if S < 1 || S > 1024
  .error "depthwise_conv1d: S must be in [1, 1024]"
.endif
.if STRIDE < 1
  .error "depthwise_conv1d: STRIDE must be positive"
.endif
.if PAD_L < 0 || PAD_R < 0 || PAD_L > 4096 || PAD_R > 4096
  .error "depthwise_conv1d: PAD_L and PAD_R must be in [0, 4096]"
.endif
.if W + PAD_L + PAD_R - S < 0
  .error "depthwise_conv1d: the filter is wider than the padded input (Q < 1)"
.endif
.if DT == fp32
  .equ DB = 4
.else
  .equ DB = 2
.endif
.equ Q  = (W + PAD_L + PAD_R - S) / STRIDE + 1
.equ WP = PAD_L + W + PAD_R           ; padded row
.equ NS = cdiv(S, 128)                ; S tiles
.equ QT = min(512, Q)                 ; Q tile (one fp32 PSUM bank)
.equ NQ = cdiv(Q, QT)
.equ ZW = max(1, PAD_L, PAD_R)
.equ NBUF = 4                         ; units in flight (hides the 2 us DMA latency)
; HBM layout pinned, so the im2col access pattern can name the scratch's byte address.
.equ A_IMG = 0
.equ A_FLT = align_up(A_IMG + N * C * W * DB, 64)
.equ A_OUT = align_up(A_FLT + C * S * DB, 64)
.equ A_XP  = align_up(A_OUT + N * C * Q * DB, 64)
.if A_XP + N * C * WP * DB >= 2147483648
  .error "depthwise_conv1d: the HBM tensors must stay below 2^31 bytes"
.endif
.equ H  = cdiv(C, 2)
.equ NH = cdiv(C, H)

.hbm  img    : DT[N, C, 1, W]  input   @ A_IMG
.hbm  filter : DT[C, 1, 1, S]  input   @ A_FLT
.hbm  out    : DT[N, C, 1, Q]  output  @ A_OUT
.hbm  xp     : DT[N, C, WP]    scratch @ A_XP
.view img3   = img as DT[N, C, W]
.view flt2   = filter as DT[C, S]
.view out3   = out as DT[N, C, Q]
.sbuf fl     : DT[128, S]           ; filters of a channel tile, channels on partitions
.sbuf ft     : DT[128, NS, 128]     ; transposed: taps on partitions
.sbuf xc     : DT[128, NBUF, NS, QT]  ; im2col tiles, unit u in slot u % NBUF
.sbuf ob     : DT[1, NBUF, QT]
.sbuf zt     : DT[128, ZW]
.psum pt     : DT[128, 128]
.psum po     : fp32[1, NBUF, 512]     ; one PSUM bank per slot
; Counts: per channel tile s_fl += 1; per transpose s_tp, s_ftc += 1; per (image, tile) s_pd
; += the pad DMAs; per unit (image, channel, Q tile) s_xc += NS, s_mm += 1, s_ce / s_co and s_oe / s_oo += 1 for an
; even / odd unit (their copies run on dve / act and their stores on two queues: one count could be
; reached by the other engine or queue first, which `nisa check` reports).
.sem  s_z, s_fl, s_tp, s_ftc, s_pd, s_xc, s_mm, s_ce, s_co, s_oe, s_oo, s_go

.set T   = 0         ; channel tiles so far
.set TP  = 0         ; transposes so far
.set PD  = 0         ; padding DMAs so far
.set U   = 0         ; units so far

; One unit: image NI, channel CH (column CL of the tile), Q tile from QS, width QW.
.macro dw_unit ni, ch, cl, qs, qw
  .set SL = U % NBUF
  .for k in 0 .. NS
    .set ST = min(128, S - k * 128)
        sp.dma q0, xc[0:ST, SL, k, 0:qw], ap(hbm, DT, 0, ST, A_XP + ((ni * C + ch) * WP + k * 128 + qs * STRIDE) * DB, [[STRIDE, qw]], pstride=1)  @wait(s_mm >= max(0, U - NBUF + 1), s_pd >= PD)  @signal(s_xc)
  .endfor
  .for k in 0 .. NS
    .set ST = min(128, S - k * 128)
    .if k == 0
        pe.matmul po[0:1, SL, 0:qw], ft[0:ST, k, cl:cl+1], xc[0:ST, SL, k, 0:qw], acc=overwrite  @wait(s_xc >= (U + 1) * NS, s_ce >= max(0, (U - NBUF + 2) / 2), s_co >= max(0, (U - NBUF + 1) / 2), s_ftc >= TP)
    .else
        pe.matmul po[0:1, SL, 0:qw], ft[0:ST, k, cl:cl+1], xc[0:ST, SL, k, 0:qw], acc=accumulate
    .endif
  .endfor
        pe.nop  @signal(s_mm)
  .if U % 2 == 0
        dve.copy ob[0:1, SL, 0:qw], po[0:1, SL, 0:qw]  @wait(s_mm >= U + 1, s_oe >= max(0, (U - NBUF + 2) / 2), s_oo >= max(0, (U - NBUF + 1) / 2)) @signal(s_ce)
        dve.dma q1, out3[ni, ch:ch+1, qs:qs+qw], ob[0:1, SL, 0:qw]  @signal(s_oe)
  .else
        act.activation ob[0:1, SL, 0:qw], po[0:1, SL, 0:qw], func=copy  @wait(s_mm >= U + 1, s_oe >= max(0, (U - NBUF + 2) / 2), s_oo >= max(0, (U - NBUF + 1) / 2)) @signal(s_co)
        act.dma q6, out3[ni, ch:ch+1, qs:qs+qw], ob[0:1, SL, 0:qw]  @signal(s_oo)
  .endif
  .set U = U + 1
.endm

; Channels C0 .. C0+NCH-1 (one tile, NCH <= 128), every image.
.macro dw_tile c0, nch
        ; filters: load, transpose per S tile (the previous tile's transposes have read fl)
        act.dma q2, fl[0:nch, :], flt2[c0:c0+nch, :]  @wait(s_tp >= TP) @signal(s_fl)
  .for k in 0 .. NS
    .set ST = min(128, S - k * 128)
        pe.transpose pt[0:ST, 0:nch], fl[0:nch, k*128 : k*128+ST]  @wait(s_fl >= T + 1, s_ftc >= TP) @signal(s_tp)
        dve.copy ft[0:ST, k, 0:nch], pt[0:ST, 0:nch]  @wait(s_tp >= TP + 1, s_mm >= U) @signal(s_ftc)
    .set TP = TP + 1
  .endfor
  .for ni in 0 .. N
        ; zero-padded rows of this tile in the scratch
        act.dma q3, xp[ni, c0:c0+nch, PAD_L : PAD_L+W], img3[ni, c0:c0+nch, :]  @wait(s_z >= 1) @signal(s_pd)
    .set PD = PD + 1
    .if PAD_L > 0
        act.dma q4, xp[ni, c0:c0+nch, 0:PAD_L], zt[0:nch, 0:PAD_L]  @signal(s_pd)
      .set PD = PD + 1
    .endif
    .if PAD_R > 0
        act.dma q5, xp[ni, c0:c0+nch, PAD_L+W : WP], zt[0:nch, 0:PAD_R]  @signal(s_pd)
      .set PD = PD + 1
    .endif
    .for cl in 0 .. nch
      .for qi in 0 .. NQ
        dw_unit ni, c0 + cl, cl, qi * QT, min(QT, Q - qi * QT)
      .endfor
    .endfor
  .endfor
  .set T = T + 1
.endm

.macro dw_range c0, nc
  .for t in 0 .. cdiv(nc, 128)
        dw_tile c0 + t * 128, min(128, nc - t * 128)
  .endfor
.endm

        pool.memset zt, 0.0  @signal(s_z)
        lnc_regs sp
        lnc_regs act
        lnc_regs dve
        lnc_regs pe
        sp.bnz r1, skip0
        act.bnz r1, skip0
        dve.bnz r1, skip0
        pe.bnz r1, skip0
        dw_range 0, H
skip0:
.if NH == 2
        sp.bz r1, noset
        sp.sem_set s_fl, T
        sp.sem_set s_tp, TP
        sp.sem_set s_ftc, TP
        sp.sem_set s_pd, PD
        sp.sem_set s_xc, U * NS
        sp.sem_set s_mm, U
        sp.sem_set s_ce, (U + 1) / 2
        sp.sem_set s_co, U / 2
        sp.sem_set s_oe, (U + 1) / 2
        sp.sem_set s_oo, U / 2
noset:
        sp.nop  @signal(s_go)
        act.nop  @wait(s_go >= 1)
        dve.nop  @wait(s_go >= 1)
        pe.nop  @wait(s_go >= 1)
        sp.bnz r3, skip1
        act.bnz r3, skip1
        dve.bnz r3, skip1
        pe.bnz r3, skip1
        dw_range H, C - H
.endif
skip1:
