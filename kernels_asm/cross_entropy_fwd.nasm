; cross_entropy_fwd.nasm: per-position cross-entropy loss and log-sum-exp over a large vocabulary.
;
; Parameters: NPOS (positions), V (vocabulary), PB (positions per batch, default 32),
;             CS (vocabulary chunk; 0 = default: 32768 for bf16, 16384 for fp32; clamped to V),
;             DT (bf16 | fp32), IGNORE_INDEX (default -100, as in PyTorch).
; Inputs:     logits : DT[NPOS, V], targets : int32[NPOS]
; Outputs:    loss : fp32[NPOS]  (= lse - logits[i, targets[i]]; 0 where targets[i] == IGNORE_INDEX)
;             lse  : fp32[NPOS]  (log sum_j exp(logits[i, j]), saved for the backward)
; Envelope:   1 <= PB <= 128; 1 <= CS <= 65535 (F_MAX); two DT chunk buffers per partition fit
;             the SBUF (2 * CS * sizeof(DT) <= 204800 bytes); PB * CS * sizeof(DT) <= 24 MiB;
;             NPOS * V < 2^31 (the gather index is int32); |IGNORE_INDEX| < 2^24. Every target
;             is in [0, V) or IGNORE_INDEX (otherwise the gather DMA faults naming the row).
;
; Idea (seed 000 section 4, isa-facts 5.5): streaming online log-sum-exp, positions on
; partitions (PB per batch), vocabulary chunks of CS columns on the free axis:
;     chunk_max = reduce_max(chunk)                 (DVE tensor_reduce)
;     m_new     = max(m, chunk_max); corr = exp(m - m_new)        (DVE; ACT exp)
;     d         = d * corr + sum(exp(chunk - m_new))  (ACT exp with bias -m_new and its add-reduce
;                                                      register; DVE scalar_tensor_tensor)
;     lse       = m + log(d)                                      (ACT log; DVE add)
; Every exp argument is <= 0. A short last chunk is padded with -inf (memset), so exp gives 0.
; The target logit is gathered by one indirect DMA per batch (a per-partition row index
; pos * V + target into the [NPOS * V, 1] view of the logits, built in exact int32 on GpSimd);
; loss = (lse - target_logit) * valid. Unlike the seed, m, d, lse and loss are fp32 tiles for any
; DT (the seed keeps them in DT). Chunk buffers are double-buffered and the chunk loop is
; software-pipelined: the DMA of chunk g+1 and the DVE max of chunk g+1 run under the ACT exp of
; chunk g (running maxima in 3 rotating columns, biases / corrections / sums in 2).
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
.if 2 * C * DB > 204800
  .error "cross_entropy_fwd: SBUF budget: 2 * CS * sizeof(DT) must be <= 204800 bytes per partition"
.endif
.if PB * C * DB > 24 * 1024 * 1024
  .error "cross_entropy_fwd: PB * CS * sizeof(DT) must be <= 24 MiB"
.endif
.if NPOS * V > 2147483647
  .error "cross_entropy_fwd: NPOS * V must be < 2^31 (int32 gather index)"
.endif
.if abs(IGNORE_INDEX) >= 16777216
  .error "cross_entropy_fwd: |IGNORE_INDEX| must be < 2^24"
.endif

.equ NC = cdiv(V, C)                 ; chunks per batch
.equ H  = cdiv(NPOS, 2)              ; rows of half 0
.equ NH = cdiv(NPOS, H)              ; halves: 1 or 2

.hbm  logits  : DT[NPOS, V]   input
.hbm  targets : int32[NPOS]   input
.hbm  loss    : fp32[NPOS]    output
.hbm  lse     : fp32[NPOS]    output
.view lflat   = logits as DT[NPOS * V, 1]
.sbuf buf     : DT[PB, 2, C]   ; chunk g in buf[:, g % 2, :]
.sbuf mnb     : fp32[PB, 3]      ; running max after chunk g in column g % 3
.sbuf nmb     : fp32[PB, 2]      ; its negation (the exp bias), column g % 2
.sbuf ninf    : fp32[PB, 1]      ; -inf: the running max before the first chunk
.sbuf cmax    : fp32[PB, 1]
.sbuf corr    : fp32[PB, 2]      ; exp(m_old - m_new), column g % 2
.sbuf csum    : fp32[PB, 2]      ; sum(exp(chunk - m_new)), column g % 2
.sbuf d       : fp32[PB, 1]      ; running denominator
.sbuf ld      : fp32[PB, 1]
.sbuf lsev    : fp32[PB, 1]
.sbuf lossv   : fp32[PB, 1]
.sbuf tlf     : fp32[PB, 1]
.sbuf validf  : fp32[PB, 1]
.sbuf tl      : DT[PB, 1]
.sbuf tg      : int32[PB, 1]
.sbuf valid   : int32[PB, 1]
.sbuf tcl     : int32[PB, 1]
.sbuf gi      : int32[PB, 1]
.sbuf iic     : int32[PB, 1]
; Counts: per batch s_tg, s_gi, s_tl, s_fin, s_log, s_out += 1, s_st += 2; per chunk s_ld,
; s_m, s_exp += 1; per padded chunk s_pad += 1.
.sem  s_tg, s_gi, s_tl, s_ld, s_pad, s_m, s_exp, s_fin, s_log, s_out, s_st, s_go

.set B  = 0          ; batches so far (global, both halves)
.set G  = 0          ; chunks so far
.set NP = 0          ; padded chunks so far

; fwd_chunk_in R0, N, K, GI: chunk K (global number GI) of positions R0 .. R0+N-1: load (and
; -inf pad), DVE running max (signals s_m), ACT exp with its add-reduce (signals s_exp).
.macro fwd_chunk_in r0, n, k, gi
  .set W = min(C, V - k * C)
  .set BI = gi % 2
        sp.dma q0, buf[0:n, BI, 0:W], logits[r0 : r0+n, k*C : k*C+W]  @wait(s_exp >= max(0, gi - 1)) @signal(s_ld)
  .if W < C
    .set NP = NP + 1
        pool.memset buf[0:n, BI, W:C], -inf  @wait(s_exp >= max(0, gi - 1)) @signal(s_pad)
  .endif
        dve.tensor_reduce cmax[0:n, :], buf[0:n, BI, :], op=max  @wait(s_ld >= gi + 1, s_pad >= NP)
  .if k == 0
        dve.tensor_tensor mnb[0:n, gi % 3 : gi % 3 + 1], ninf[0:n, :], cmax[0:n, :], op=max
  .else
        dve.tensor_tensor mnb[0:n, gi % 3 : gi % 3 + 1], mnb[0:n, (gi - 1) % 3 : (gi - 1) % 3 + 1], cmax[0:n, :], op=max
  .endif
        dve.tensor_scalar nmb[0:n, BI : BI+1], mnb[0:n, gi % 3 : gi % 3 + 1], op0=multiply, operand0=-1.0  @signal(s_m)
  .if k == 0
        act.activation corr[0:n, BI : BI+1], ninf[0:n, :], func=exp, bias=nmb[0:n, BI : BI+1]  @wait(s_m >= gi + 1)
  .else
        act.activation corr[0:n, BI : BI+1], mnb[0:n, (gi - 1) % 3 : (gi - 1) % 3 + 1], func=exp, bias=nmb[0:n, BI : BI+1]  @wait(s_m >= gi + 1)
  .endif
        act.activation buf[0:n, BI, :], buf[0:n, BI, :], func=exp, bias=nmb[0:n, BI : BI+1], reduce_cmd=reset_reduce, reduce_res=csum[0:n, BI : BI+1]  @signal(s_exp)
.endm

; fwd_chunk_update N, GI: d = d * corr + csum of chunk GI (DVE, after its ACT work).
.macro fwd_chunk_update n, gi
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
        sp.dma q3, tl[0:n, :], lflat[@vec(gi[0:n, 0:1]), :]  @wait(s_gi >= B + 1) @signal(s_tl)
        dve.memset d[0:n, :], 0.0
        ; software-pipelined: DVE reduces chunk c+1 while ACT exponentiates chunk c
  .set G0 = G
  .for k in 0 .. NC
        fwd_chunk_in r0, n, k, G0 + k
    .if k > 0
        fwd_chunk_update n, G0 + k - 1
    .endif
  .endfor
        fwd_chunk_update n, G0 + NC - 1
  .set G = G0 + NC
  .set GL = G - 1
        dve.nop  @signal(s_fin)
        act.activation ld[0:n, :], d[0:n, :], func=log  @wait(s_fin >= B + 1) @signal(s_log)
        dve.tensor_tensor lsev[0:n, :], mnb[0:n, GL % 3 : GL % 3 + 1], ld[0:n, :], op=add  @wait(s_log >= B + 1, s_st >= 2 * B)
        dve.copy tlf[0:n, :], tl[0:n, :]  @wait(s_tl >= B + 1)
        dve.tensor_tensor lossv[0:n, :], lsev[0:n, :], tlf[0:n, :], op=subtract
        dve.tensor_tensor lossv[0:n, :], lossv[0:n, :], validf[0:n, :], op=multiply  @signal(s_out)
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
        sp.sem_set s_pad, NP
ce_noset:
        ce_half1_gate s_go
        fwd_rows H, NPOS - H
.endif
ce_skip1:
