; topk.nasm: the K largest values of each row and their indices.
;
; Parameters: BXS (rows), V (vocabulary), K, SORTED (0 | 1), DT (bf16 | fp32),
;             METHOD (scanning | rotational | cascaded | auto),
;             GEN (3: trn2/trn3 forms, default; 2: trn1 forms, see below).
; Inputs:     x : DT[BXS, V]
; Outputs:    values : DT[BXS, K], indices : uint32[BXS, K]
; Envelope:   1 <= BXS <= 1024, 1 <= K <= min(V, 2048), V <= 151936 (seed); finite inputs.
;             scanning: V <= 16384 (the max8 / match_replace8 search limit).
; Order:      the strike-out yields the values in descending order, so every method's
;             output is sorted (SORTED = 0 allows any order, SORTED = 1 asks for it), except
;             the K == V shortcut with SORTED = 0, which returns the row as it is.
; GEN:        the assembler has no way to ask the target, and match_replace8 idx= (the fused
;             form) does not exist on trn1: assemble with -D GEN=2 for trn1.
;
; Idea (seed 002, "rotational_topk" / "naive_scanning_topk" / router_topk):
;   strike-out core (lib/topk.inc topk_core): per group of 8, max8 gives the next 8 largest,
;   match_replace8 overwrites them with -inf and writes their positions (idx=); a ragged last
;   group (K % 8) uses max8 + find_index8 and keeps K % 8 columns.
;   scanning: rows on partitions (tiles of <= 128 rows), topk_core over the whole row; DVE
;   cost ceil(K/8) * 2 * (V + 144) cycles per row tile.
;   K <= 8: the router path, one max8 + find_index8.
;   K == V (unsorted): the input itself and iota indices.
; LNC: rows split ceil(BXS/2) per core (lib/lnc.inc); with --lnc 1 core 0 runs both halves.
.kernel topk
.param BXS    = 4
.param V      = 1000
.param K      = 16
.param SORTED = 1
.param METHOD = auto
.param DT     = fp32
.param GEN    = 3
.include "lnc.inc"
.include "topk.inc"

.if DT != fp32 && DT != bf16
  .error "topk: DT must be fp32 or bf16"
.endif
.if METHOD != scanning && METHOD != rotational && METHOD != cascaded && METHOD != auto
  .error "topk: METHOD must be scanning, rotational, cascaded or auto"
.endif
.if SORTED != 0 && SORTED != 1
  .error "topk: SORTED must be 0 or 1"
.endif
.if GEN != 2 && GEN != 3
  .error "topk: GEN must be 2 (trn1) or 3 (trn2, trn3)"
.endif
.if BXS < 1 || BXS > 1024
  .error "topk: BXS must be in [1, 1024]"
.endif
.if V < 1 || V > 151936
  .error "topk: V must be in [1, 151936]"
.endif
.if K < 1 || K > 2048
  .error "topk: K must be in [1, 2048]"
.endif
.if K > V
  .error "topk: K must be <= V"
.endif

.set M = METHOD
.if M == auto
  .set M = scanning
.endif
.set SHORTCUT = K == V && SORTED == 0
.if M == rotational || M == cascaded
  .error "topk: METHOD rotational / cascaded: not implemented yet"
.endif
.if M == scanning && V > 16384 && !SHORTCUT
  .error "topk: scanning needs V <= 16384 (the max8 / match_replace8 search limit)"
.endif

.equ H  = cdiv(BXS, 2)              ; rows per half (one LNC2 core's share)
.equ NH = cdiv(BXS, H)              ; halves: 1 or 2
.equ W  = max(V, 8)                 ; max8 reads at least 8 elements: pad with -inf

.hbm  x       : DT[BXS, V]     input
.hbm  values  : DT[BXS, K]     output
.hbm  indices : uint32[BXS, K] output

; ---- scanning: one row tile of NR rows (ROW0 ..), J-th tile of its half -----------------------
.macro scan_tile row0, nr, j, data, vals, inds, t8v, t8i, ld, dn, st
  ; dn counts finished tiles (data free, vals/inds ready), ld loads, st stores (2 per tile)
  .if W > V
        dve.memset data[0:nr, V:W], -inf
  .endif
        sp.dma q0, data[0:nr, 0:V], x[row0 : row0+nr, :]  @wait(dn >= j) @signal(ld)
        dve.nop  @wait(ld >= j+1, st >= 2*j)
  .if K <= 8
        top8_tail data, nr, vals, inds, 0, K, t8v, t8i
  .else
        topk_core data, nr, K, vals, inds, t8v, t8i, GEN
  .endif
        dve.nop  @signal(dn)
        sp.dma q1, values[row0 : row0+nr, :], vals[0:nr, :]  @wait(dn >= j+1) @signal(st)
        sp.dma q2, indices[row0 : row0+nr, :], inds[0:nr, :]  @signal(st)
.endm

; ---- K == V, unsorted: the row itself, indices 0 .. V-1 ----------------------------------------
.macro same_tile row0, nr, j, data, vals, inds, t8v, t8i, ld, dn, st
        sp.dma q1, values[row0 : row0+nr, :], x[row0 : row0+nr, :]  @signal(st)
  .if j == 0
        pool.iota inds[:, :], [[1, K]]  @signal(ld)
  .endif
        sp.dma q2, indices[row0 : row0+nr, :], inds[0:nr, :]  @wait(ld >= 1) @signal(st)
.endm

; One half: rows ROW0 .. ROW0+NR-1 in tiles of <= 128 rows.
.macro topk_half row0, nr, data, vals, inds, t8v, t8i, ld, dn, st
  .for j in 0 .. cdiv(nr, 128)
    .set TR = min(128, nr - j*128)
    .if SHORTCUT
        same_tile row0 + j*128, TR, j, data, vals, inds, t8v, t8i, ld, dn, st
    .else
        scan_tile row0 + j*128, TR, j, data, vals, inds, t8v, t8i, ld, dn, st
    .endif
  .endfor
.endm

.equ PR = min(128, H)               ; partitions per tile
.for h in 0 .. 2
  .if h == 0
.sbuf data0 : DT[PR, W]
.sbuf vals0 : DT[PR, K]
.sbuf inds0 : uint32[PR, K]
.sbuf t8v0  : DT[PR, 8]
.sbuf t8i0  : uint32[PR, 8]
.sem  ld0, dn0, st0
  .elif NH == 2
.sbuf data1 : DT[PR, W]
.sbuf vals1 : DT[PR, K]
.sbuf inds1 : uint32[PR, K]
.sbuf t8v1  : DT[PR, 8]
.sbuf t8i1  : uint32[PR, 8]
.sem  ld1, dn1, st1
  .endif
.endfor

        lnc_regs sp
        lnc_regs dve
        lnc_regs pool
        sp.bnz r1, skip0
        dve.bnz r1, skip0
        pool.bnz r1, skip0
        topk_half 0, H, data0, vals0, inds0, t8v0, t8i0, ld0, dn0, st0
skip0:
.if NH == 2
        sp.bnz r3, skip1
        dve.bnz r3, skip1
        pool.bnz r3, skip1
        topk_half H, BXS - H, data1, vals1, inds1, t8v1, t8i1, ld1, dn1, st1
.endif
skip1:
