; cross_entropy_fwd.nasm: per-position cross-entropy loss and log-sum-exp over a large vocabulary.
;
; Parameters: NPOS (positions), V (vocabulary), PB (positions per batch, default 32),
;             CS (vocabulary chunk; 0 = default: 32768 for bf16, 16384 for fp32; clamped to V),
;             DT (bf16 | fp32), IGNORE_INDEX (default -100, as in PyTorch).
; Inputs:     logits : DT[NPOS, V], targets : int32[NPOS]
; Outputs:    loss : fp32[NPOS]  (= -log_softmax(logits[i])[targets[i]]; 0 where targets[i] == IGNORE_INDEX)
;             lse  : fp32[NPOS]  (log sum_j exp(logits[i, j]), saved for the backward)
; Envelope:   1 <= PB <= 128; 1 <= CS <= 65535 (F_MAX) with either DT, at any V (the kernel
;             splits a chunk into DMA tiles that fit the SBUF); NPOS * V < 2^31 (the gather
;             index is int32); |IGNORE_INDEX| < 2^24.
; Targets:    each is in [0, V) or IGNORE_INDEX. Any other target is a run-time fault (exit code
;             3) of the range-check DMA of its batch: "vector offset of row P = T is outside
;             [0, V)", T the target, P its row within the batch (position = batch start + P).
; Extremes:   as PyTorch. lse is torch.logsumexp: a row of -inf gives -inf, a row holding +inf
;             gives +inf. loss is F.cross_entropy(reduction='none') = -log_softmax[target],
;             computed as (m - x_t) + log(d) (never lse - x_t, which loses log V when m is huge:
;             every logit 1e30 gives log V): NaN for a row whose lse is +-inf (a row of -inf:
;             log_softmax = -inf - (-inf); a row with +inf: inf - inf), +inf when only the
;             target's logit is -inf; 0 for an ignored position whatever its logits.
;
; Idea (seed 000 section 4, docs/machine.md "Seed kernel envelopes"): streaming online log-sum-exp, positions on
; partitions (PB per batch), the vocabulary in tiles of at most TW columns on the free axis:
;     tile_max  = reduce_max(tile)                  (DVE tensor_reduce)
;     m_new     = clamp(max(m, tile_max), +-FLT_MAX); corr = exp(m - m_new)  (DVE; ACT exp)
;     d         = d * corr + sum(exp(tile - m_new))   (ACT exp with bias -m_new and its add-reduce
;                                                      register; DVE scalar_tensor_tensor)
;     lse       = m + log(d)                                      (ACT log; DVE add)
; The clamp keeps every exp argument free of inf - inf (a leading tile of -inf gives d = 0,
; not NaN; a later finite max gives corr = 0) and changes nothing for finite maxima; it is
; torch.logsumexp's rule (an infinite max is replaced) with +-FLT_MAX in place of 0. Every exp
; argument is <= 0 except +inf logits. Tiles: CS is the recurrence's chunk; a chunk wider than
; TWMAX = 204800 / (2 * sizeof(DT)) (25600 fp32, 51200 bf16: two buffers fit a partition) runs
; as NSUB near-equal sub-tiles, chunks narrower than TMIN = 512 are merged (whole chunks,
; <= 512 columns), and a short last tile is just narrower (no padding). The recurrence is the
; same at any tiling; only the fp32 rounding of the sums moves.
; The target logit is gathered by one indirect DMA per batch (a per-partition row index
; pos * V + target into the [NPOS * V, 1] view of the logits, built in exact int32 on GpSimd),
; after a range-check DMA that uses the target itself as the row of a [V, NPOS] view.
; Unlike the seed, m, d, lse and loss are fp32 tiles for any DT (the seed keeps them in DT).
; Tile buffers are double-buffered and the tile loop is software-pipelined: the DMA of tile
; g+1 and the DVE max of tile g+1 run under the ACT exp of tile g (running maxima in 3
; rotating columns, biases / corrections / sums in 2).
; Beyond the seed: IGNORE_INDEX (an ignored position gathers column 0 and gets loss 0).
; LNC: positions split contiguously, half 0 = the first ceil(NPOS/2) (core 0), half 1 = the rest
; (core 1); with --lnc 1 core 0 runs both (lib/lnc.inc, lib/ce.inc).
.kernel cross_entropy_fwd
.param NPOS = 64
.param V    = 1000
.param PB   = 32
.param CS   = 0
.param DT   = bf16
.param IGNORE_INDEX = -100
.include "lib/lnc.inc"
.include "lib/ce.inc"

.if DT != fp32 && DT != bf16
  .error "cross_entropy_fwd: DT must be fp32 or bf16"
.endif
.if NPOS < 1 || V < 1
  .error "cross_entropy_fwd: NPOS and V must be positive"
.endif
.if PB < 1 || PB > 128
  .error "cross_entropy_fwd: PB (positions per batch) must be in [1, 128]"
.endif
.if CS < 0 || CS > 65535
  .error "cross_entropy_fwd: CS (chunk size) must be in [1, 65535] (F_MAX), or 0 for the default"
.endif
.if DT == fp32
  .equ DB = 4
.else
  .equ DB = 2
.endif
.if CS == 0
  .if DT == fp32
    .equ C = min(V, 16384)
  .else
    .equ C = min(V, 32768)
  .endif
.else
  .equ C = min(V, CS)
.endif
.if NPOS * V > 2147483647
  .error "cross_entropy_fwd: NPOS * V must be < 2^31 (int32 gather index)"
.endif
.if abs(IGNORE_INDEX) >= 16777216
  .error "cross_entropy_fwd: |IGNORE_INDEX| must be < 2^24"
.endif

; DMA tiles: a chunk wider than the two-buffer SBUF budget (2 * TW * sizeof(DT) <= 204800
; bytes per partition) is split into NSUB near-equal sub-tiles; chunks narrower than TMIN are
; merged G at a time (per-tile overhead, and the program length, stay bounded for CS = 1).
.equ TWMAX = 204800 / (2 * DB)      ; 25600 fp32, 51200 bf16
.equ TMIN  = 512
.equ CE    = min(V, C * max(1, TMIN / C))   ; the recurrence's chunk: G whole chunks of C
.equ NSUB  = cdiv(CE, TWMAX)
.equ TW    = cdiv(CE, NSUB)         ; tile width (<= TWMAX)
.equ NC    = cdiv(V, CE)            ; chunks per batch
.equ H     = cdiv(NPOS, 2)          ; rows of half 0
.equ NH    = cdiv(NPOS, H)          ; halves: 1 or 2
.equ FMAX  = 3.4028234663852886e38  ; the running max is clamped to +-FMAX (see the header)

.hbm  logits  : DT[NPOS, V]   input
.hbm  targets : int32[NPOS]   input
.hbm  loss    : fp32[NPOS]    output
.hbm  lse     : fp32[NPOS]    output
.view lflat   = logits as DT[NPOS * V, 1]
.view lcheck  = logits as DT[V, NPOS]   ; row index = target: the [0, V) range check
.sbuf buf     : DT[PB, 2, TW]   ; tile g in buf[:, g % 2, :]
.sbuf mnb     : fp32[PB, 3]      ; clamped running max after tile g in column g % 3
.sbuf nmb     : fp32[PB, 2]      ; its negation (the exp bias), column g % 2
.sbuf ninf    : fp32[PB, 1]      ; -inf: the running max before the first tile
.sbuf zero    : fp32[PB, 1]
.sbuf cmax    : fp32[PB, 1]
.sbuf corr    : fp32[PB, 2]      ; exp(m_old - m_new), column g % 2
.sbuf csum    : fp32[PB, 2]      ; sum(exp(tile - m_new)), column g % 2
.sbuf d       : fp32[PB, 1]      ; running denominator
.sbuf ld      : fp32[PB, 1]
.sbuf lsev    : fp32[PB, 1]
.sbuf lossv   : fp32[PB, 1]
.sbuf tlf     : fp32[PB, 1]
.sbuf validf  : fp32[PB, 1]
.sbuf tl      : DT[PB, 1]
.sbuf tchk    : DT[PB, 1]        ; the range check's (discarded) element
.sbuf tg      : int32[PB, 1]
.sbuf valid   : int32[PB, 1]
.sbuf tcl     : int32[PB, 1]
.sbuf gi      : int32[PB, 1]
.sbuf iic     : int32[PB, 1]
; Counts: per batch s_tg, s_gi, s_tl, s_fin, s_log, s_out += 1, s_st += 2; per tile s_ld,
; s_m, s_exp += 1.
.sem  s_tg, s_gi, s_tl, s_ld, s_m, s_exp, s_fin, s_log, s_out, s_st, s_go

.set B  = 0          ; batches so far (global, both halves)
.set G  = 0          ; tiles so far

; fwd_tile_in R0, N, C0, W, GI, FIRST: columns C0 .. C0+W-1 (global tile GI; FIRST: the batch's
; first tile) of positions R0 .. R0+N-1: load, DVE running max (signals s_m), ACT exp with its
; add-reduce (signals s_exp).
.macro fwd_tile_in r0, n, c0, w, gi, first
  .set BI = gi % 2
        sp.dma q0, buf[0:n, BI, 0:w], logits[r0 : r0+n, c0 : c0+w]  @wait(s_exp >= max(0, gi - 1)) @signal(s_ld)
        dve.tensor_reduce cmax[0:n, :], buf[0:n, BI, 0:w], op=max  @wait(s_ld >= gi + 1)
  .if first
        dve.tensor_tensor mnb[0:n, gi % 3 : gi % 3 + 1], ninf[0:n, :], cmax[0:n, :], op=max
  .else
        dve.tensor_tensor mnb[0:n, gi % 3 : gi % 3 + 1], mnb[0:n, (gi - 1) % 3 : (gi - 1) % 3 + 1], cmax[0:n, :], op=max
  .endif
        dve.tensor_scalar mnb[0:n, gi % 3 : gi % 3 + 1], mnb[0:n, gi % 3 : gi % 3 + 1], op0=max, operand0=-FMAX, op1=min, operand1=FMAX
        dve.tensor_scalar nmb[0:n, BI : BI+1], mnb[0:n, gi % 3 : gi % 3 + 1], op0=multiply, operand0=-1.0  @signal(s_m)
  .if first
        act.activation corr[0:n, BI : BI+1], ninf[0:n, :], func=exp, bias=nmb[0:n, BI : BI+1]  @wait(s_m >= gi + 1)
  .else
        act.activation corr[0:n, BI : BI+1], mnb[0:n, (gi - 1) % 3 : (gi - 1) % 3 + 1], func=exp, bias=nmb[0:n, BI : BI+1]  @wait(s_m >= gi + 1)
  .endif
        act.activation buf[0:n, BI, 0:w], buf[0:n, BI, 0:w], func=exp, bias=nmb[0:n, BI : BI+1], reduce_cmd=reset_reduce, reduce_res=csum[0:n, BI : BI+1]  @signal(s_exp)
.endm

; fwd_tile_update N, GI: d = d * corr + csum of tile GI (DVE, after its ACT work).
.macro fwd_tile_update n, gi
        dve.scalar_tensor_tensor d[0:n, :], d[0:n, :], op0=multiply, operand0=corr[0:n, gi % 2 : gi % 2 + 1], op1=add, in1=csum[0:n, gi % 2 : gi % 2 + 1]  @wait(s_exp >= gi + 1)
.endm

; fwd_batch R0, N: positions R0 .. R0+N-1 on partitions 0 .. N-1.
.macro fwd_batch r0, n
        ; targets -> valid mask and gather row index (r0 + p) * V + target * valid
        sp.dma q2, tg[0:n, :], targets[r0 : r0+n]  @wait(s_gi >= B) @signal(s_tg)
        pool.nop  @wait(s_tg >= B + 1, s_tl >= B, s_out >= B)
        ce_valid tg, valid, validf, iic, n
        pool.tensor_tensor tcl[0:n, :], tg[0:n, :], valid[0:n, :], op=multiply
        pool.iota gi[0:n, :], [[0, 1]], offset=r0 * V, pmul=V
        pool.tensor_tensor gi[0:n, :], gi[0:n, :], tcl[0:n, :], op=add  @signal(s_gi)
        ; range check: row `target` of the [V, NPOS] view faults unless 0 <= target < V
        sp.dma q3, tchk[0:n, :], lcheck[@vec(tcl[0:n, 0:1]), 0:1]  @wait(s_gi >= B + 1)
        sp.dma q3, tl[0:n, :], lflat[@vec(gi[0:n, 0:1]), :]  @signal(s_tl)
        dve.memset d[0:n, :], 0.0
        ; software-pipelined: DVE reduces tile g+1 while ACT exponentiates tile g
  .set G0 = G
  .set GT = G
  .for k in 0 .. NC
    .set WC = min(CE, V - k * CE)
    .for s in 0 .. cdiv(WC, TW)
        fwd_tile_in r0, n, k * CE + s * TW, min(TW, WC - s * TW), GT, GT == G0
      .if GT > G0
        fwd_tile_update n, GT - 1
      .endif
      .set GT = GT + 1
    .endfor
  .endfor
        fwd_tile_update n, GT - 1
  .set G = GT
  .set GL = G - 1
        dve.nop  @signal(s_fin)
        act.activation ld[0:n, :], d[0:n, :], func=log  @wait(s_fin >= B + 1) @signal(s_log)
        ; lse = m + log d; loss = (m - x_t) + log d, plus 0 * lse (NaN when lse is +-inf, as
        ; PyTorch's log_softmax); 0 where ignored (a select: 0 * NaN would stay NaN)
        dve.tensor_tensor lsev[0:n, :], mnb[0:n, GL % 3 : GL % 3 + 1], ld[0:n, :], op=add  @wait(s_log >= B + 1, s_st >= 2 * B)
        dve.copy tlf[0:n, :], tl[0:n, :]  @wait(s_tl >= B + 1)
        dve.tensor_tensor lossv[0:n, :], mnb[0:n, GL % 3 : GL % 3 + 1], tlf[0:n, :], op=subtract
        dve.tensor_tensor lossv[0:n, :], lossv[0:n, :], ld[0:n, :], op=add
        dve.scalar_tensor_tensor lossv[0:n, :], lsev[0:n, :], op0=multiply, operand0=0.0, op1=add, in1=lossv[0:n, :]
        dve.copy_predicated lossv[0:n, :], zero[0:n, :], validf[0:n, :], reverse=1  @signal(s_out)
        sp.dma q4, loss[r0 : r0+n], lossv[0:n, :]  @wait(s_out >= B + 1) @signal(s_st)
        sp.dma q5, lse[r0 : r0+n], lsev[0:n, :]  @signal(s_st)
  .set B = B + 1
.endm

; fwd_rows R0, NR: positions R0 .. R0+NR-1 in batches of PB.
.macro fwd_rows r0, nr
  .for i in 0 .. cdiv(nr, PB)
        fwd_batch r0 + i * PB, min(PB, nr - i * PB)
  .endfor
.endm

        pool.memset iic, IGNORE_INDEX
        dve.memset ninf, -inf
        dve.memset zero, 0.0
        ce_lnc_enter sp
        ce_lnc_enter act
        ce_lnc_enter dve
        ce_lnc_enter pool
        fwd_rows 0, H
ce_skip0:
.if NH == 2
        ; a core that skipped half 0 (core 1 of --lnc 2) starts where half 0 leaves the semaphores
        sp.bz r1, ce_noset
        sp.sem_set s_tg, B
        sp.sem_set s_gi, B
        sp.sem_set s_tl, B
        sp.sem_set s_fin, B
        sp.sem_set s_log, B
        sp.sem_set s_out, B
        sp.sem_set s_st, 2 * B
        sp.sem_set s_ld, G
        sp.sem_set s_m, G
        sp.sem_set s_exp, G
ce_noset:
        ce_half1_gate s_go
        fwd_rows H, NPOS - H
.endif
ce_skip1:
