; conv1d.nasm: 1-D cross-channel convolution (cross-correlation), bias and activation fused.
;
; Parameters: B, CIN, COUT, L, K, STRIDE (1), PAD_L (0), PAD_R (0), DIL (1), BIAS (0 | 1),
;             ACT (none | relu | silu | gelu | gelu_apprx_tanh | sigmoid | tanh),
;             LNC_SHARD (0 | 1), DT (bf16 | fp32).
; Inputs:     x : DT[B, CIN, L], filters : DT[K, CIN, COUT] (tap-major, as the seed),
;             bias : DT[COUT] (only when BIAS = 1)
; Outputs:    y : DT[B, COUT, LOUT], LOUT = (L + PAD_L + PAD_R - DIL * (K - 1) - 1) / STRIDE + 1
;             y[b, o, l] = act(bias[o]
;                              + sum_{c, k} filters[k, c, o] * x[b, c, l*STRIDE + k*DIL - PAD_L])
;             (x outside [0, L) is zero).
; Envelope:   1 <= K <= 128; 1 <= CIN, COUT, L <= 4096; B >= 1; STRIDE, DIL >= 1; PAD_L, PAD_R in
;             [0, 4096]; LOUT >= 1 (the SBUF tiles then always fit).
;
; Idea (seed 000 section 4, docs/machine.md "Seed kernel envelopes"): matmuls whose contraction (partition) dim packs C_in
; and stacked taps. K-replication: C_in <= 32 stacks KREP = min(K, 4) taps at partition stride
; PS = 32, C_in <= 64 stacks min(K, 2) at stride 64, else one tap per matmul (C_in tiles of 128).
; Per (batch, L_out tile of <= 512, C_out group of <= 8 PSUM banks of 128 channels), for every
; (C_in tile, tap group) step: the input window is DMAed into SBUF (zero padding by memset where
; the window leaves [0, L)); im2col by scatter: one strided copy per tap (alternating DVE / ACT)
; puts the window shifted by k * DIL, every STRIDE-th element, into partition block k of the
; moving tile; the stacked filters [KREP * PS, group] are DMAed into the stationary tile; the gap
; partitions of both stay zero (memset once). The PSUM tiles accumulate over all steps
; (acc=overwrite on the first). The PSUM -> SBUF copy is one ACT activation per 128 channels with
; the per-partition fp32 bias fused (func(psum + bias)), then the DMA out. The inputs of the next
; two steps (window, filters, scatter) are built while step s multiplies (3 buffer slots).
; LNC_SHARD = 1: C_out split ceil(COUT/2) per core (core 0 the first half, core 1 the rest, no
; cross-core reduction); --lnc 1 runs both halves on core 0. LNC_SHARD = 0: core 0 computes
; everything, core 1 (if any) idles.
.kernel conv1d
.param B = 1
.param CIN = 16
.param COUT = 32
.param L = 64
.param K = 3
.param STRIDE = 1
.param PAD_L = 0
.param PAD_R = 0
.param DIL = 1
.param BIAS = 0
.param ACT = none
.param LNC_SHARD = 0
.param DT = bf16
.include "lib/lnc.inc"

.if DT != fp32 && DT != bf16
  .error "conv1d: DT must be fp32 or bf16"
.endif
.if ACT != none && ACT != relu && ACT != silu && ACT != gelu && ACT != gelu_apprx_tanh && ACT != sigmoid && ACT != tanh
  .error "conv1d: ACT must be none, relu, silu, gelu, gelu_apprx_tanh, sigmoid or tanh"
.endif
.if BIAS != 0 && BIAS != 1
  .error "conv1d: BIAS must be 0 or 1"
.endif
.if LNC_SHARD != 0 && LNC_SHARD != 1
  .error "conv1d: LNC_SHARD must be 0 or 1"
.endif
.if K < 1 || K > 128
  .error "conv1d: K must be in [1, 128]"
.endif
.if CIN < 1 || CIN > 4096
  .error "conv1d: CIN must be in [1, 4096]"
.endif
.if COUT < 1 || COUT > 4096
  .error "conv1d: COUT must be in [1, 4096]"
.endif
.if L < 1 || L > 4096
  .error "conv1d: L must be in [1, 4096]"
.endif
.if B < 1
  .error "conv1d: B must be positive"
.endif
.if STRIDE < 1 || DIL < 1
  .error "conv1d: STRIDE and DIL must be positive"
.endif
.if PAD_L < 0 || PAD_R < 0 || PAD_L > 4096 || PAD_R > 4096
  .error "conv1d: PAD_L and PAD_R must be in [0, 4096]"
.endif
.equ LOUT = (L + PAD_L + PAD_R - DIL * (K - 1) - 1) / STRIDE + 1
.if L + PAD_L + PAD_R - DIL * (K - 1) - 1 < 0
  .error "conv1d: the dilated kernel is longer than the padded input (LOUT < 1)"
.endif
.if DT == fp32
  .equ DB = 4
.else
  .equ DB = 2
.endif
.if CIN <= 32
  .equ KREP = min(K, 4)
  .equ PS = 32
.elif CIN <= 64
  .equ KREP = min(K, 2)
  .equ PS = 64
.else
  .equ KREP = 1
  .equ PS = 128
.endif
.equ NCI  = cdiv(CIN, 128)         ; C_in tiles
.equ KG   = cdiv(K, KREP)          ; tap groups
.equ LT   = min(512, LOUT)         ; L_out tile (one fp32 PSUM bank)
.equ NLT  = cdiv(LOUT, LT)
.equ SPAN = (LT - 1) * STRIDE + (KREP - 1) * DIL + 1   ; input window of one step
.equ GW   = 1024                   ; C_out group: 8 PSUM banks of 128 channels
.equ NBUF = 3                   ; steps in flight (hides the 2 us DMA latency)
; SBUF: the window is at most L + PAD_L + PAD_R <= 12288 elements inside the envelope, so the
; tiles take at most (3 * 12288 + 3 * 512 + 3 * 1024 + 8 * 512) * 4 = 178 KiB per partition.
.if LNC_SHARD == 1
  .equ H = cdiv(COUT, 2)
.else
  .equ H = COUT
.endif
.equ NH = cdiv(COUT, H)

.hbm  x       : DT[B, CIN, L]     input
.hbm  filters : DT[K, CIN, COUT]  input
.if BIAS == 1
.hbm  bias    : DT[COUT]          input
.endif
.hbm  y       : DT[B, COUT, LOUT] output
.sbuf xw      : DT[128, NBUF, SPAN]   ; input windows, step s in slot s % NBUF
.sbuf xs      : DT[128, NBUF, LT]     ; stacked (im2col) moving tiles
.sbuf ws      : DT[128, NBUF, GW]     ; stacked filters (stationary)
.sbuf ot      : DT[128, 8, LT]
.sbuf bg      : fp32[128, 8]
.psum ps      : fp32[128, 8, 512]
; Counts: per step s_xw, s_mm += 1; s_ms per padded window; s_wd per tap, s_cpd / s_cpa per even / odd tap; s_ev, s_out,
; s_b per 128-channel tile of a group.
.sem  s_init, s_ms, s_xw, s_wd, s_cpd, s_cpa, s_mm, s_ev, s_out, s_b, s_go

.set S   = 0         ; steps so far
.set MS  = 0         ; window memsets
.set WD  = 0         ; filter DMAs
.set CPD = 0         ; scatter copies on dve (even taps) and act (odd taps): one count each,
.set CPA = 0         ; since one engine's copies may complete before the other's (nisa check)
.set EV  = 0         ; evacuations
.set OUT = 0         ; output DMAs
.set NB  = 0         ; bias DMAs

; One step: C_in tile CI, tap group KGI of (batch BI, L_out tile from L0, width LW) for the
; C_out group G0 .. G0+GWID-1 (NJ tiles), into buffers X (0 / 1); FIRST: the first step of the
; group (PSUM overwrite).
.macro conv_step bi, l0, lw, g0, gwid, nj, ci, kgi, first
  .set SL = S % NBUF
  .set FREE = max(0, S - NBUF + 1)   ; the matmuls of step S-NBUF (the slot's last reader) done
  .set CI0 = ci * 128
  .set CT = min(128, CIN - CI0)
  .set K0 = kgi * KREP
  .set KR = min(KREP, K - K0)
  .set KC = (KR - 1) * PS + CT
  .set P0 = l0 * STRIDE + K0 * DIL - PAD_L
  .set SW = (lw - 1) * STRIDE + (KR - 1) * DIL + 1
  .set A0 = max(0, -P0)
  .set E0 = min(SW, L - P0)
  .if A0 > 0 || E0 < SW
    .set MS = MS + 1
        pool.memset xw[0:CT, SL, 0:SW], 0.0  @wait(s_mm >= FREE) @signal(s_ms)
  .endif
  .if E0 > A0
        sp.dma q0, xw[0:CT, SL, A0:E0], x[bi, CI0:CI0+CT, P0+A0 : P0+E0]  @wait(s_mm >= FREE, s_ms >= MS) @signal(s_xw)
  .else
        sp.nop  @wait(s_mm >= FREE, s_ms >= MS) @signal(s_xw)
  .endif
  .for r in 0 .. KR
        sp.dma q1, ws[r*PS : r*PS+CT, SL, 0:gwid], filters[K0 + r, CI0:CI0+CT, g0 : g0+gwid]  @wait(s_mm >= FREE, s_init >= 1) @signal(s_wd)
    .if r % 2 == 0
        dve.copy xs[r*PS : r*PS+CT, SL, 0:lw], xw[0:CT, SL, r*DIL : r*DIL + (lw-1)*STRIDE + 1 : STRIDE]  @wait(s_xw >= S + 1, s_mm >= FREE, s_init >= 1) @signal(s_cpd)
    .else
        act.activation xs[r*PS : r*PS+CT, SL, 0:lw], xw[0:CT, SL, r*DIL : r*DIL + (lw-1)*STRIDE + 1 : STRIDE], func=copy  @wait(s_xw >= S + 1, s_mm >= FREE, s_init >= 1) @signal(s_cpa)
    .endif
  .endfor
  .set WD = WD + KR
  .set CPD = CPD + (KR + 1) / 2
  .set CPA = CPA + KR / 2
  .for j in 0 .. nj
    .set MJ = min(128, gwid - j * 128)
    .if j == 0 && first
        pe.matmul ps[0:MJ, j, 0:lw], ws[0:KC, SL, j*128 : j*128+MJ], xs[0:KC, SL, 0:lw], acc=overwrite  @wait(s_cpd >= CPD, s_cpa >= CPA, s_wd >= WD, s_ev >= EV)
    .elif j == 0
        pe.matmul ps[0:MJ, j, 0:lw], ws[0:KC, SL, j*128 : j*128+MJ], xs[0:KC, SL, 0:lw], acc=accumulate  @wait(s_cpd >= CPD, s_cpa >= CPA, s_wd >= WD)
    .elif first
        pe.matmul ps[0:MJ, j, 0:lw], ws[0:KC, SL, j*128 : j*128+MJ], xs[0:KC, SL, 0:lw], acc=overwrite
    .else
        pe.matmul ps[0:MJ, j, 0:lw], ws[0:KC, SL, j*128 : j*128+MJ], xs[0:KC, SL, 0:lw], acc=accumulate
    .endif
  .endfor
        pe.nop  @signal(s_mm)
  .set S = S + 1
.endm

; The C_out group G0 .. G0+GWID-1 of (batch BI, L_out tile L0, width LW).
.macro conv_group bi, l0, lw, g0, gwid
  .set NJ = cdiv(gwid, 128)
  .set EVP = EV
  .if BIAS == 1
    .for j in 0 .. NJ
        sp.dma q3, bg[0 : min(128, gwid - j*128), j:j+1], bias[g0 + j*128 : g0 + j*128 + min(128, gwid - j*128)]  @wait(s_ev >= EVP) @signal(s_b)
    .endfor
    .set NB = NB + NJ
  .endif
  .for ci in 0 .. NCI
    .for kgi in 0 .. KG
        conv_step bi, l0, lw, g0, gwid, NJ, ci, kgi, ci == 0 && kgi == 0
    .endfor
  .endfor
  .for j in 0 .. NJ
    .set MJ = min(128, gwid - j * 128)
    .if BIAS == 1
      .if ACT == none
        act.activation ot[0:MJ, j, 0:lw], ps[0:MJ, j, 0:lw], func=copy, bias=bg[0:MJ, j:j+1]  @wait(s_mm >= S, s_out >= OUT, s_b >= NB) @signal(s_ev)
      .else
        act.activation ot[0:MJ, j, 0:lw], ps[0:MJ, j, 0:lw], func=ACT, bias=bg[0:MJ, j:j+1]  @wait(s_mm >= S, s_out >= OUT, s_b >= NB) @signal(s_ev)
      .endif
    .else
      .if ACT == none
        act.activation ot[0:MJ, j, 0:lw], ps[0:MJ, j, 0:lw], func=copy  @wait(s_mm >= S, s_out >= OUT) @signal(s_ev)
      .else
        act.activation ot[0:MJ, j, 0:lw], ps[0:MJ, j, 0:lw], func=ACT  @wait(s_mm >= S, s_out >= OUT) @signal(s_ev)
      .endif
    .endif
        sp.dma q2, y[bi, g0 + j*128 : g0 + j*128 + MJ, l0 : l0+lw], ot[0:MJ, j, 0:lw]  @wait(s_ev >= EV + j + 1) @signal(s_out)
  .endfor
  .set EV = EV + NJ
  .set OUT = OUT + NJ
.endm

; Output channels CO0 .. CO0+NCO-1, every batch and L_out tile.
.macro conv_range co0, nco
  .for bi in 0 .. B
    .for lt in 0 .. NLT
      .for q in 0 .. cdiv(nco, GW)
        conv_group bi, lt * LT, min(LT, LOUT - lt * LT), co0 + q * GW, min(GW, nco - q * GW)
      .endfor
    .endfor
  .endfor
.endm

        ; the gap partitions of the stacked tiles must be zeros (not the NaN poison): 0 * NaN
        pool.memset xs, 0.0
        pool.memset ws, 0.0  @signal(s_init)
        lnc_regs sp
        lnc_regs act
        lnc_regs dve
        lnc_regs pool
        lnc_regs pe
        sp.bnz r1, skip0
        act.bnz r1, skip0
        dve.bnz r1, skip0
        pool.bnz r1, skip0
        pe.bnz r1, skip0
        conv_range 0, H
skip0:
.if NH == 2
        sp.bz r1, noset
        sp.sem_set s_ms, MS
        sp.sem_set s_xw, S
        sp.sem_set s_wd, WD
        sp.sem_set s_cpd, CPD
        sp.sem_set s_cpa, CPA
        sp.sem_set s_mm, S
        sp.sem_set s_ev, EV
        sp.sem_set s_out, OUT
        sp.sem_set s_b, NB
noset:
        sp.nop  @signal(s_go)
        act.nop  @wait(s_go >= 1)
        dve.nop  @wait(s_go >= 1)
        pool.nop  @wait(s_go >= 1)
        pe.nop  @wait(s_go >= 1)
        sp.bnz r3, skip1
        act.bnz r3, skip1
        dve.bnz r3, skip1
        pool.bnz r3, skip1
        pe.bnz r3, skip1
        conv_range H, COUT - H
.endif
skip1:
