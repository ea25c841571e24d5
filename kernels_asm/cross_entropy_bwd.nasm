; cross_entropy_bwd.nasm: gradient of the cross-entropy loss with respect to the logits.
;
; Parameters: NPOS, V, PB (positions per batch, default 32), CS (vocabulary chunk; 0 = default
;             16384 for bf16, 12288 for fp32; clamped to V), DT (bf16 | fp32),
;             REDUCTION (mean | sum), IGNORE_INDEX (-100),
;             INPLACE (0 | 1; 1: grad is pinned over logits, as the seed's inplace=True, saving
;             NPOS * V * sizeof(DT) bytes of HBM; every chunk is loaded before it is overwritten).
; Inputs:     logits : DT[NPOS, V], targets : int32[NPOS], lse : fp32[NPOS] (from the forward)
; Outputs:    grad : DT[NPOS, V] = scale_i * (exp(logits[i, j] - lse[i]) - [j == targets[i]])
;             scale_i = valid_i / max(1, number of valid positions) (mean) or valid_i (sum);
;             valid_i = (targets[i] != IGNORE_INDEX): ignored positions get a zero gradient, and
;             `mean` divides by the positions that are not ignored (all ignored: all zero).
; Envelope:   1 <= PB <= 128; 1 <= CS <= 65535 with either DT, at any V < 2^24 (the fp32
;             one-hot compare is exact; chunks are split into DMA tiles that fit the SBUF:
;             (2 * sizeof(DT) + 8) * TW <= 204800 bytes, TW <= 12800 fp32 / 17066 bf16, and
;             chunks narrower than 512 are merged); |IGNORE_INDEX| < 2^24.
; Targets:    each is in [0, V) or IGNORE_INDEX. Any other target is a run-time fault (exit code
;             3) of the batch's range-check DMA, which reads row pos + NPOS of the targets:
;             "vector offset of row P = NPOS + POS is outside [0, NPOS)" (POS the position, P its
;             row in the batch). (Not a read of the logits as in the forward: with INPLACE the
;             other core may be overwriting them.)
; Extremes:   grad follows the saved lse: a row of -inf (lse -inf) gives NaN, as PyTorch's
;             autograd of cross_entropy.
;
; Idea (seed 000 section 4, docs/machine.md "Seed kernel envelopes"): per batch of PB positions (partitions) and vocabulary
; chunk of CS columns:
;     softmax = exp(logits - lse)        ACT exp with the per-partition bias -lse (from the saved
;                                        lse: the max and the sum are not re-derived)
;     mask    = iota(chunk_start ..) == target          (GpSimd iota into an fp32 tile; DVE
;                                                         tensor_scalar equal, times -scale)
;     grad    = softmax * scale + mask                 (DVE scalar_tensor_tensor, dense one-hot
;                                                       subtraction, no scatter)
; The mean's divisor is counted first by every core over all positions: per 128 targets a
; GpSimd integer compare and a ones-matmul that sums the valid flags over partitions and
; broadcasts the count to PB partitions, accumulated in PSUM. Chunk buffers are double-buffered
; and so is the mask (the load and the iota of chunk g+1 and the store of chunk g-1 run under
; the DVE work of chunk g).
; LNC: positions split contiguously as in the forward (lib/ce.inc).
.kernel cross_entropy_bwd
.param NPOS = 64
.param V    = 1000
.param PB   = 32
.param CS   = 0
.param DT   = bf16
.param REDUCTION = mean
.param IGNORE_INDEX = -100
.param INPLACE = 0
.include "lib/lnc.inc"
.include "lib/ce.inc"

.if DT != fp32 && DT != bf16
  .error "cross_entropy_bwd: DT must be fp32 or bf16"
.endif
.if REDUCTION != mean && REDUCTION != sum
  .error "cross_entropy_bwd: REDUCTION must be mean or sum"
.endif
.if NPOS < 1 || V < 1
  .error "cross_entropy_bwd: NPOS and V must be positive"
.endif
.if V >= 16777216
  .error "cross_entropy_bwd: V must be < 2^24 (exact fp32 one-hot compare)"
.endif
.if PB < 1 || PB > 128
  .error "cross_entropy_bwd: PB (positions per batch) must be in [1, 128]"
.endif
.if CS < 0 || CS > 65535
  .error "cross_entropy_bwd: CS (chunk size) must be in [1, 65535] (F_MAX), or 0 for the default"
.endif
.if DT == fp32
  .equ DB = 4
.else
  .equ DB = 2
.endif
.if CS == 0 && DT == fp32
  .equ C = min(V, 12288)
.elif CS == 0
  .equ C = min(V, 16384)
.else
  .equ C = min(V, CS)
.endif
; DMA tiles (as the forward): two DT buffers and two fp32 masks of TW columns fit a partition,
; (2 * sizeof(DT) + 8) * TW <= 204800 bytes; wider chunks run as NSUB near-equal sub-tiles,
; chunks narrower than TMIN are merged. The gradient is elementwise: the tiling never changes it.
.equ TWMAX = 204800 / (2 * DB + 8)  ; 12800 fp32, 17066 bf16
.equ TMIN  = 512
.equ CE    = min(V, C * max(1, TMIN / C))
.equ NSUB  = cdiv(CE, TWMAX)
.equ TW    = cdiv(CE, NSUB)
.if abs(IGNORE_INDEX) >= 16777216
  .error "cross_entropy_bwd: |IGNORE_INDEX| must be < 2^24"
.endif
.if INPLACE != 0 && INPLACE != 1
  .error "cross_entropy_bwd: INPLACE must be 0 or 1"
.endif

.equ NC = cdiv(V, CE)                ; chunks per batch
.equ H  = cdiv(NPOS, 2)              ; rows of half 0
.equ NH = cdiv(NPOS, H)              ; halves: 1 or 2
.equ NT = cdiv(NPOS, 128)            ; 128-target tiles of the count pass

.if INPLACE == 1
  .equ A_TG  = align_up(NPOS * V * DB, 64)
  .equ A_LSE = align_up(A_TG + NPOS * 4, 64)
.hbm  logits  : DT[NPOS, V]   input  @ 0
.hbm  grad    : DT[NPOS, V]   output @ 0
.hbm  targets : int32[NPOS]   input  @ A_TG
.hbm  lse     : fp32[NPOS]    input  @ A_LSE
.else
.hbm  logits  : DT[NPOS, V]   input
.hbm  targets : int32[NPOS]   input
.hbm  lse     : fp32[NPOS]    input
.hbm  grad    : DT[NPOS, V]   output
.endif
.view tview   = targets as int32[NPOS, 1]   ; the range check's rows
.sbuf buf0    : DT[PB, TW]
.sbuf buf1    : DT[PB, TW]
.sbuf mask    : fp32[PB, 2, TW]  ; tile g's one-hot in mask[:, g % 2, :]
.sbuf tchk    : int32[PB, 1]     ; the range check's (discarded) element
.sbuf bad     : int32[PB, 1]
.sbuf bad2    : int32[PB, 1]
.sbuf ci      : int32[PB, 1]
.sbuf ones    : fp32[128, PB]
.sbuf ct      : int32[128, 1]     ; count pass: targets, valid flags
.sbuf cv      : int32[128, 1]
.sbuf cvf     : fp32[128, 1]
.sbuf iic     : int32[128, 1]
.sbuf cnt     : fp32[PB, 1]
.sbuf rc      : fp32[PB, 1]       ; 1 / max(1, count) (mean) or 1 (sum)
.sbuf tg      : int32[PB, 1]
.sbuf valid   : int32[PB, 1]
.sbuf validf  : fp32[PB, 1]
.sbuf tf      : fp32[PB, 1]       ; target as fp32 (exact, V < 2^24)
.sbuf lsb     : fp32[PB, 1]
.sbuf nlse    : fp32[PB, 1]
.sbuf sc      : fp32[PB, 1]
.sbuf nsc     : fp32[PB, 1]
.psum cps     : fp32[PB, 1]
; Counts: count pass s_ct, s_cv, s_cm += 1 per tile, s_rc 1; per batch s_tg, s_lse, s_gi,
; s_ck, s_prep += 1; per tile s_ld, s_io, s_exp, s_dv, s_st += 1.
.sem  s_ct, s_cv, s_cm, s_rc, s_tg, s_lse, s_gi, s_ck, s_prep, s_ld, s_io, s_exp, s_dv, s_st, s_go

.set B = 0           ; batches so far (global, both halves)
.set G = 0           ; chunks so far

; bwd_batch R0, N: positions R0 .. R0+N-1 on partitions 0 .. N-1.
.macro bwd_batch r0, n
        sp.dma q2, tg[0:n, :], targets[r0 : r0+n]  @wait(s_gi >= B) @signal(s_tg)
        sp.dma q3, lsb[0:n, :], lse[r0 : r0+n]  @wait(s_prep >= B) @signal(s_lse)
        pool.nop  @wait(s_tg >= B + 1, s_prep >= B, s_ck >= B)
        ce_valid tg, valid, validf, iic, n
        ; range check: bad = valid * (target < 0 or target >= V); the DMA reads row
        ; r0 + p + bad * NPOS of the targets, which faults exactly for a bad target
        pool.tensor_scalar bad[0:n, :], tg[0:n, :], op0=less, operand0=0.0
        pool.tensor_scalar bad2[0:n, :], tg[0:n, :], op0=greater_equal, operand0=V
        pool.tensor_tensor bad[0:n, :], bad[0:n, :], bad2[0:n, :], op=add
        pool.tensor_tensor bad[0:n, :], bad[0:n, :], valid[0:n, :], op=multiply
        pool.tensor_scalar bad[0:n, :], bad[0:n, :], op0=multiply, operand0=NPOS
        pool.iota ci[0:n, :], [[0, 1]], offset=r0, pmul=1
        pool.tensor_tensor ci[0:n, :], ci[0:n, :], bad[0:n, :], op=add
        pool.copy tf[0:n, :], tg[0:n, :]  @signal(s_gi)
        sp.dma q3, tchk[0:n, :], tview[@vec(ci[0:n, 0:1]), :]  @wait(s_gi >= B + 1) @signal(s_ck)
        ; per-position constants: -lse, scale = valid * rc, -scale
        dve.tensor_scalar nlse[0:n, :], lsb[0:n, :], op0=multiply, operand0=-1.0  @wait(s_lse >= B + 1, s_gi >= B + 1, s_rc >= 1)
        dve.tensor_tensor sc[0:n, :], validf[0:n, :], rc[0:n, :], op=multiply
        dve.tensor_scalar nsc[0:n, :], sc[0:n, :], op0=multiply, operand0=-1.0  @signal(s_prep)
  .for k in 0 .. NC
    .set WC = min(CE, V - k * CE)
    .for su in 0 .. cdiv(WC, TW)
    .set W = min(TW, WC - su * TW)
    .set K0 = k * CE + su * TW
        pool.iota mask[0:n, G % 2, 0:W], [[1, W]], offset=K0  @wait(s_dv >= max(0, G - 1)) @signal(s_io)
    .if G % 2 == 0
        sp.dma q0, buf0[0:n, 0:W], logits[r0 : r0+n, K0 : K0+W]  @wait(s_st >= max(0, G - 1)) @signal(s_ld)
        act.activation buf0[0:n, 0:W], buf0[0:n, 0:W], func=exp, bias=nlse[0:n, :]  @wait(s_ld >= G + 1, s_prep >= B + 1) @signal(s_exp)
        dve.tensor_scalar mask[0:n, G % 2, 0:W], mask[0:n, G % 2, 0:W], op0=equal, operand0=tf[0:n, :], op1=multiply, operand1=nsc[0:n, :]  @wait(s_io >= G + 1)
        dve.scalar_tensor_tensor buf0[0:n, 0:W], buf0[0:n, 0:W], op0=multiply, operand0=sc[0:n, :], op1=add, in1=mask[0:n, G % 2, 0:W]  @wait(s_exp >= G + 1) @signal(s_dv)
        sp.dma q1, grad[r0 : r0+n, K0 : K0+W], buf0[0:n, 0:W]  @wait(s_dv >= G + 1) @signal(s_st)
    .else
        sp.dma q0, buf1[0:n, 0:W], logits[r0 : r0+n, K0 : K0+W]  @wait(s_st >= max(0, G - 1)) @signal(s_ld)
        act.activation buf1[0:n, 0:W], buf1[0:n, 0:W], func=exp, bias=nlse[0:n, :]  @wait(s_ld >= G + 1, s_prep >= B + 1) @signal(s_exp)
        dve.tensor_scalar mask[0:n, G % 2, 0:W], mask[0:n, G % 2, 0:W], op0=equal, operand0=tf[0:n, :], op1=multiply, operand1=nsc[0:n, :]  @wait(s_io >= G + 1)
        dve.scalar_tensor_tensor buf1[0:n, 0:W], buf1[0:n, 0:W], op0=multiply, operand0=sc[0:n, :], op1=add, in1=mask[0:n, G % 2, 0:W]  @wait(s_exp >= G + 1) @signal(s_dv)
        sp.dma q1, grad[r0 : r0+n, K0 : K0+W], buf1[0:n, 0:W]  @wait(s_dv >= G + 1) @signal(s_st)
    .endif
    .set G = G + 1
    .endfor
  .endfor
  .set B = B + 1
.endm

.macro bwd_rows r0, nr
  .for i in 0 .. cdiv(nr, PB)
        bwd_batch r0 + i * PB, min(PB, nr - i * PB)
  .endfor
.endm

        ; count pass (every core, all positions): cps[p] = number of valid targets, p < PB
        pool.memset iic, IGNORE_INDEX
        pool.memset ones, 1.0
.for j in 0 .. NT
  .set TN = min(128, NPOS - j * 128)
        sp.dma q2, ct[0:TN, :], targets[j*128 : j*128+TN]  @wait(s_cv >= j) @signal(s_ct)
        pool.nop  @wait(s_ct >= j + 1, s_cm >= j)
        ce_valid ct, cv, cvf, iic, TN
        pool.nop  @signal(s_cv)
  .if j == 0
        pe.matmul cps[0:PB, 0:1], ones[0:TN, 0:PB], cvf[0:TN, :], acc=overwrite  @wait(s_cv >= j + 1) @signal(s_cm)
  .else
        pe.matmul cps[0:PB, 0:1], ones[0:TN, 0:PB], cvf[0:TN, :], acc=accumulate  @wait(s_cv >= j + 1) @signal(s_cm)
  .endif
.endfor
.if REDUCTION == mean
        dve.tensor_scalar cnt, cps, op0=max, operand0=1.0  @wait(s_cm >= NT)
        dve.reciprocal rc, cnt  @signal(s_rc)
.else
        dve.memset rc, 1.0  @signal(s_rc)
.endif
        ce_lnc_enter sp
        ce_lnc_enter act
        ce_lnc_enter dve
        ce_lnc_enter pool
        bwd_rows 0, H
ce_skip0:
.if NH == 2
        sp.bz r1, ce_noset
        sp.sem_set s_tg, B
        sp.sem_set s_lse, B
        sp.sem_set s_gi, B
        sp.sem_set s_ck, B
        sp.sem_set s_prep, B
        sp.sem_set s_ld, G
        sp.sem_set s_io, G
        sp.sem_set s_exp, G
        sp.sem_set s_dv, G
        sp.sem_set s_st, G
ce_noset:
        ce_half1_gate s_go
        bwd_rows H, NPOS - H
.endif
ce_skip1:
