; topk.nasm: the K largest values of each row and their indices.
;
; Parameters: BXS (rows), V (vocabulary), K, SORTED (0 | 1), DT (bf16 | fp32),
;             METHOD (scanning | rotational | cascaded | auto),
;             NONFINITE (all | ninf | none: which non-finite inputs the caller allows; below),
; Inputs:     x : DT[BXS, V]
; Outputs:    values : DT[BXS, K], indices : uint32[BXS, K]
; Envelope:   1 <= BXS <= 1024, 1 <= K <= min(V, 2048), V <= 151936 (seed). Any input values,
;             +-inf and NaN included, except the two largest finite magnitudes of DT (|x| >=
;             HI1, the next below the DT's max: reserved as the keys of NaN and +-inf, below).
;             scanning: V <= 16384 (the max8 / match_replace8 search limit); rotational /
;             cascaded: a tile configuration within 128 partitions and that limit must exist
;             (see the configuration below).
; Non-finite: PyTorch's torch.topk order: NaN above +inf above every finite value above -inf;
;             the K indices are always distinct and the value at each is returned (NaN as NaN).
;             The search runs on finite keys (lib/topk.inc topk_keys): NaN -> HI (DT max), +inf
;             -> HI1, -inf -> -HI1, finite values unchanged; the K winners are mapped back. So a
;             struck-out element (-inf) ranks below every key, including a masked -inf, and
;             find_index8 / match_replace8 / n_gather never meet a NaN, and the folded methods'
;             permutation matmul never multiplies an infinity by 0. The folded padding is -HI
;             (not the seed's -9948.0): below every key. Cost: three DVE passes over the row
;             (~5 cycles per element) and a few over the K winners.
;             NONFINITE (default all: any values) lets a caller trade the envelope for speed:
;             ninf: -inf allowed (a router's mask), no NaN / +inf; one max pass (1 cycle per
;             element). none: finite inputs only; no map (the seed's cost). Inputs outside the
;             promise give wrong indices or a fault (n_gather of index 4294967295), as before.
; Order:      SORTED = 1: descending. SORTED = 0: any order; the scanning strike-out and the
;             final sort are descending anyway, the rotational unfolded store (when its padded
;             K equals K) gives each stage's 8-aligned group, and K == V returns the row as is.
;             Equal values: any of their indices (each index once).
; Target:     the assembler's predefined GEN (2 on trn1, 3 on trn2, 4 on trn3) picks the forms:
;             match_replace8 idx= (the fused form) on gen3+; on trn1 the seed's gen2 form,
;             find_index8 then match_replace8 (also used by the final sort, as the seed).
;
; Idea (seed 002, "rotational_topk", "naive_scanning_topk", router_topk):
;   strike-out core (lib/topk.inc topk_core), on the finite keys: per group of 8, max8 gives
;   the next 8 largest, match_replace8 overwrites them with -inf and writes their positions
;   (idx=); a ragged last group (K % 8) uses max8 + find_index8 and keeps K % 8 columns.
;   scanning: rows on partitions (tiles of <= 128 rows), topk_core over the whole row; DVE
;     cost ceil(K/8) * 2 * (V + 144) cycles per row tile.
;   K <= 8 (V <= 16384): the router path, one max8 + find_index8.
;   K == V, unsorted: the input itself and iota indices.
;   rotational: V folded over S partitions per row (p = row*S + stage; memset -HI + the
;     folded load), a global index map (iota + doubling DMA copies), then S stages: strike-out
;     top-KP over the stage's growing window, n_gather of the winners' global indices, a PE
;     permutation matmul kron(I_T, circulant shift-by-1 of S) moving every stage's winners to
;     the next stage of the same row (values in DT, indices in fp32), and ScalarE copies
;     inserting them as new window columns. The last stage's S*KP winners per row hold the
;     top-K: unsorted and S*KP == K -> unfolded store; else the seed's private-HBM round trip
;     to [rows, S*KP] and a final strike-out sort with n_gather. (The seed's rotation is
;     kron(I_S, circulant(BxS)), which moves winners between rows of this layout and is the
;     identity for BxS = 1; ours rotates within a row, so BXS = 1 needs no special case.)
;   cascaded (the seed's registry wires cascaded_2_stage_topk, with no readable source; our
;     design): the same fold, one local top-KP (KP = min(align8(K), C)) per chunk, then the
;     rotational's final combine (HBM round trip + strike-out + n_gather). S by the cost model.
;   auto: scanning when V <= 16384, else rotational.
; LNC: rows split ceil(BXS/2) per core (lib/lnc.inc); with --lnc 1 core 0 runs both halves.
;   The folded methods share one buffer set: a core that skips half 0 moves the semaphores
;   to where half 0 leaves them (sp sem_set) before half 1.
.kernel topk
.param BXS    = 4
.param V      = 1000
.param K      = 16
.param SORTED = 1
.param METHOD = auto
.param DT     = fp32
.param NONFINITE = all
.include "lib/lnc.inc"
.include "lib/topk.inc"
.include "lib/fold.inc"

.if DT != fp32 && DT != bf16
  .error "topk: DT must be fp32 or bf16"
.endif
.if METHOD != scanning && METHOD != rotational && METHOD != cascaded && METHOD != auto
  .error "topk: METHOD must be scanning, rotational, cascaded or auto"
.endif
.if NONFINITE != all && NONFINITE != ninf && NONFINITE != none
  .error "topk: NONFINITE must be all, ninf or none"
.endif
.if SORTED != 0 && SORTED != 1
  .error "topk: SORTED must be 0 or 1"
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

.equ H  = cdiv(BXS, 2)              ; rows per half (one LNC2 core's share)
.equ NH = cdiv(BXS, H)              ; halves: 1 or 2
.set SHORTCUT = K == V && SORTED == 0

; ---- configuration of the folded methods, computed here at assembly time ----------------------
; rotational (seed _calculate_rotational_constants): for T rows per tile,
;   n_stages S = max(min(128 / T, ceil(min(K, V) / 8)), ceil(V / 16384)),
;   k per stage KP = align_up(ceil(K / S), 8), chunk C = ceil(V / S),
;   valid if S*T <= 128, C + S*KP <= 16384 (the max8 operand), KP <= C.
; cascaded (our two-stage design): local top-KP (KP = min(align_up(K, 8), C)) of each of S
;   chunks, then the top-K of the S*KP candidates; valid if S*T <= 128, C <= 16384,
;   S*KP <= 16384; S is chosen by the cost below.
; Cost (DVE cycles, seed _estimate_dve_cost): stages * ceil(KP/8) * 2 * (width + 144), plus
; the final sort/combine ceil(K/8) * 2 * (S*KP + 144), divided by T / 128 (it wants all 128
; channels); times the number of row tiles. Per-core rows R <= 128 use T = R when valid (as
; the seed); otherwise T is searched over 1..min(128, R) (seed _find_optimal_tile_size).
.equ R     = H
.equ MINHW = cdiv(V, 16384)
.set CFG_T = 0
.set CFG_COST = 0
.macro try_config t, m
  .set TS = 0
  .set TKP = 0
  .set TCOST = 0
  .if m == rotational
    .set TS = max(min(128 / t, cdiv(min(K, V), 8)), MINHW)
    .set TKP = align_up(cdiv(K, TS), 8)
    .set TC = cdiv(V, TS)
    .if TS >= 2 && TS * t <= 128 && TC + TS * TKP <= 16384 && TKP <= TC
      .set TCOST = TS * cdiv(TKP, 8) * 2 * (TC + 144)
      .if SORTED || TS * TKP != K
        .set TCOST = TCOST + cdiv(K, 8) * 2 * (TS * TKP + 144) * 128 / t
      .endif
    .endif
  .else
    .for s in max(2, MINHW) .. 128 / t + 1
      .set SC = cdiv(V, s)
      .set SKP = min(align_up(K, 8), SC)
      .if SC <= 16384 && s * SKP <= 16384 && SKP >= 8 && K <= s * SKP
        .set SCOST = cdiv(SKP, 8) * 2 * (SC + 144) + cdiv(K, 8) * 2 * (s * SKP + 144) * 128 / t
        .if TCOST == 0 || SCOST < TCOST
          .set TCOST = SCOST
          .set TS = s
          .set TKP = SKP
        .endif
      .endif
    .endfor
  .endif
  .if TCOST > 0
    .set TCOST = TCOST * cdiv(R, t)
    .if CFG_T == 0 || TCOST < CFG_COST
      .set CFG_T = t
      .set CFG_COST = TCOST
      .set CFG_S = TS
      .set CFG_KP = TKP
    .endif
  .endif
.endm

.set M = METHOD
.if M == auto                       ; scanning when a row fits the search limit
  .set M = rotational
  .if V <= 16384
    .set M = scanning
  .endif
.endif
.if SHORTCUT || (K <= 8 && V <= 16384)
  .set M = scanning                 ; the K == V shortcut and the router path (seed)
.endif
.if M == rotational || M == cascaded
  .if R <= 128
    try_config R, M
  .endif
  .if CFG_T == 0
    .for t in 1 .. min(128, R) + 1
      try_config t, M
    .endfor
  .endif
  .if CFG_T == 0 && V <= 16384
    .set M = scanning               ; one stage (e.g. K <= 8): the seed falls back to scanning
  .elif CFG_T == 0
    .error "topk: rotational / cascaded: no tile of rows fits 128 partitions and the 16384-element search limit (reduce V, K or BXS)"
  .endif
.endif
.if M == scanning && V > 16384 && !SHORTCUT
  .error "topk: scanning needs V <= 16384 (the max8 / match_replace8 search limit)"
.endif

.equ W  = max(V, 8)                 ; max8 reads at least 8 elements: pad with -inf
.if DT == fp32                      ; the key sentinels (lib/topk.inc topk_keys)
  .equ KHI  = 3.4028234663852886e38 ; largest finite fp32
  .equ KHI1 = 3.4028232635611926e38 ; the next below
.else
  .equ KHI  = 3.3895313892515355e38 ; largest finite bf16
  .equ KHI1 = 3.3762391092936863e38
.endif
.equ KB = 512                       ; column block of the key scratch tiles

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
        topk_keys data, nr, V, ktmp, khi, KB, KHI1, NONFINITE
  .if K <= 8
        top8_tail data, nr, W, vals, inds, 0, K, t8v, t8i
  .else
        topk_core data, nr, W, K, vals, inds, t8v, t8i, GEN
  .endif
        topk_unkey vals, nr, K, ktmp, knan, kpinf, kninf, KB, KHI, KHI1, NONFINITE
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

.if M == scanning
.equ PR = min(128, H)               ; partitions per tile
.for h in 0 .. 2
  .if h == 0
.sbuf data0 : DT[PR, W]
.sbuf vals0 : DT[PR, K]
.sbuf inds0 : uint32[PR, K]
.sbuf t8v0  : DT[PR, 8]
.sbuf t8i0  : uint32[PR, 8]
.sem  ld0, dn0, st0
.if NONFINITE != none
.sbuf ktmp  : DT[PR, KB]            ; key scratch and constants (lib/topk.inc)
.sbuf kninf : DT[PR, KB]
.endif
.if NONFINITE == all
.sbuf khi   : DT[PR, KB]
.sbuf knan  : DT[PR, KB]
.sbuf kpinf : DT[PR, KB]
.endif
  .elif NH == 2
.sbuf data1 : DT[PR, W]
.sbuf vals1 : DT[PR, K]
.sbuf inds1 : uint32[PR, K]
.sbuf t8v1  : DT[PR, 8]
.sbuf t8i1  : uint32[PR, 8]
.sem  ld1, dn1, st1
  .endif
.endfor

  .if NONFINITE == all
        dve.memset khi, KHI
        dve.memset knan, nan
        dve.memset kpinf, inf
  .endif
  .if NONFINITE != none
        dve.memset kninf, -inf
  .endif
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
.elif CFG_T > 0                     ; (no configuration: the .error above)
; ==== rotational / cascaded ========================================================================
.equ T    = CFG_T                   ; rows per tile
.equ S    = CFG_S                   ; n_stages (fold factor)
.equ KP   = CFG_KP                  ; top-k per stage (rotational) / per chunk (cascaded)
.equ C    = cdiv(V, S)              ; stage chunk
.equ NP   = T * S                   ; partitions per tile (p = row * S + stage)
.equ NSTG = 1 + (M == rotational) * (S - 1)   ; stages: S (rotational) or 1
.equ WV   = C + (NSTG - 1) * KP     ; the window after all inserts
.equ WB   = max(WV, S * KP)         ; also holds the S*KP candidates of the final sort
.equ SORT = M == cascaded || SORTED || S * KP != K
.equ FILL = -KHI                    ; padding: below every key, above the strike-out (-inf)
.equ PC0  = V - (S - 1) * C        ; first column that holds padding (lib/fold.inc layout)
.equ PW0  = C - PC0                 ; padding columns (< S)
.equ PADFIX = NONFINITE != none && PW0 > 0   ; the key map lifts FILL: put it back
.equ PW   = KP + (KP > 512) * (align_up(KP, 512) - KP)   ; PSUM: whole banks beyond one

.view x3 = x as DT[BXS, 1, V]       ; row slices stay one HBM row (lib/fold.inc)
.sbuf vb  : DT[NP, WB]              ; folded values, then the inserted winners; final candidates
.sbuf ib  : fp32[NP, WB]            ; global indices of vb (exact in fp32 below 2^24)
.sbuf lv  : DT[NP, KP]              ; a stage's winners
.sbuf li  : uint32[NP, KP]          ; their positions in the window
.sbuf gi  : fp32[NP, KP]            ; their global indices (n_gather through ib)
.sbuf gu  : uint32[NP, KP]
.sbuf t8v : DT[NP, 8]
.sbuf t8i : uint32[NP, 8]
.sbuf ov  : DT[T, K]
.sbuf oi  : uint32[T, K]
.sbuf og  : fp32[T, K]
.sbuf ou  : uint32[T, K]
.sbuf pf  : fp32[NP, NP]            ; rotation: kron(I_T, circulant shift-by-1 of S)
.sbuf pv  : DT[NP, NP]
.psum psv : fp32[NP, PW]
.psum psi : fp32[NP, PW]
.if SORT
.hbm  scr_v : DT[BXS, S * KP]   scratch   ; the seed's private-HBM reshape round trip
.hbm  scr_i : fp32[BXS, S * KP] scratch
.endif
.sem  go, rp, rf, rl, rm, rc, rg, rr, ri, rw, rw2, rst
.if NONFINITE != none
.sbuf ktmp  : DT[NP, KB]            ; key scratch and constants (lib/topk.inc)
.sbuf kninf : DT[NP, KB]
.endif
.if NONFINITE == all
.sbuf khi   : DT[NP, KB]
.sbuf knan  : DT[NP, KB]
.sbuf kpinf : DT[NP, KB]
.endif
.if PADFIX
.sbuf kfill : DT[NP, PW0]
.sbuf pb    : fp32[NP, PW0]         ; global index of the padding columns
.sbuf kpad  : DT[NP, PW0]           ; 1 where padding
.sem  kp
.endif

; Rotation matrix (every core): pf[k, m] = 1 iff m is the next stage of k's row,
; (r, s) -> (r, (s + 1) mod S), i.e. kron(I_T, circulant shift-by-1 of S). Compute engines
; address partition ranges from 0 (or a quadrant), so it is built on all NP partitions with
; affine_select over the columns viewed as (r', s'): the superdiagonal m == k + 1, then the
; columns s' == 0 (a row's first stage) are rewritten: 1 where m == k - (S - 1), else 0.
.if NSTG > 1
.sbuf pone : fp32[NP, T]
.view pf3 = pf as fp32[NP, T, S]
        pool.memset pf[0:NP, 0:NP], 1.0
        pool.memset pone[0:NP, 0:T], 1.0
        pool.affine_select pf3[0:NP, :, :], pf3[0:NP, :, :], [[S, T], [1, S]], offset=-1, pmul=-1, cmp=eq, on_false=0.0
        pool.affine_select pf3[0:NP, :, 0], pone[0:NP, 0:T], [[S, T]], offset=S-1, pmul=-1, cmp=eq, on_false=0.0
        pool.copy pv[0:NP, 0:NP], pf[0:NP, 0:NP]  @signal(rp)
.endif

; One tile: rows ROW0 .. ROW0+NR-1 (NR <= T); J = this core's tile counter. Every semaphore
; counts per tile: rf 1; rm 1 + NDBL; rl the loads; rc, rg NSTG + 1; rr, ri NSTG - 1;
; rw, rw2, rst 2.
.set LB = 0                         ; loads signalled up to the current tile
.set MB = 0                         ; rm signals (index map steps) up to the current step
.equ NDBL = log2(2 * T - 1)         ; doubling steps: ceil(log2(T))
.macro rot_tile j, row0, nr, half
  .set NLD = 1
  .if V != S * C
    .set NLD = nr * (1 + (S > 1))
  .endif
  .set LB = LB + NLD
  .set CF = j * (NSTG + 1) + NSTG
        dve.memset vb[0:NP, 0:C], FILL  @wait(go >= half + 1) @signal(rf)
        folded_load vb, x3, row0, nr, V, S, C, rf, j + 1, rl
  ; global index map ib[r*S + s, c] = s*C + c: one iota for row 0 (partitions 0 .. S-1),
  ; then DMA copies doubling the rows (DMAs address any partition; compute engines do not)
        pool.iota ib[0:S, 0:C], [[1, C]], pmul=C  @wait(go >= half + 1) @signal(rm)
  .set MB = MB + 1
  .for dd in 0 .. NDBL
    .set D0 = 1 << dd
    .set D1 = min(T, 2 * D0)
        sp.dma q1, ib[D0*S : D1*S, 0:C], ib[0 : (D1-D0)*S, 0:C]  @wait(rm >= MB) @signal(rm)
    .set MB = MB + 1
  .endfor
  .for i in 0 .. NSTG
    .set CS = j * (NSTG + 1) + i
    .set WI = C + i * KP
    .if i == 0 && SORT
        dve.nop  @wait(rl >= LB, rw >= 2*j)
        pool.nop  @wait(rw >= 2*j)
    .elif i == 0
        dve.nop  @wait(rl >= LB, rst >= 2*j)
    .else
        dve.nop  @wait(ri >= j*(NSTG-1) + i, rg >= CS)
        pool.nop  @wait(ri >= j*(NSTG-1) + i)
    .endif
    .if i == 0
        ; finite keys (lib/topk.inc); the padding (global index >= V, only in the columns
        ; from PC0 on: the last stage's tail) back to FILL
        topk_keys vb, NP, C, ktmp, khi, KB, KHI1, NONFINITE
      .if PADFIX
        dve.copy_predicated vb[0:NP, PC0:C], kfill[0:NP, 0:PW0], kpad[0:NP, 0:PW0]  @wait(kp >= NDBL + 1)
      .endif
    .endif
        topk_core vb, NP, WI, KP, lv, li, t8v, t8i, GEN
        dve.nop  @signal(rc)
        pool.n_gather gi[0:NP, :], ib[0:NP, 0:WI], li[0:NP, :]  @wait(rc >= CS + 1, rm >= MB) @signal(rg)
    .if i < NSTG - 1
      ; rotate the winners one stage on (PE permutation matmul, 512 columns per bank)
      .for c0 in 0 .. KP step 512
        .set CE = min(KP, c0 + 512)
        pe.matmul psv[0:NP, c0:CE], pv[0:NP, 0:NP], lv[0:NP, c0:CE], acc=overwrite  @wait(rc >= CS + 1, rp >= 1)
        pe.matmul psi[0:NP, c0:CE], pf[0:NP, 0:NP], gi[0:NP, c0:CE], acc=overwrite  @wait(rg >= CS + 1)
      .endfor
        pe.nop  @signal(rr)
      ; insert them as the next columns of the window (ScalarE copies, as the seed)
        act.copy vb[0:NP, WI : WI+KP], psv[0:NP, 0:KP]  @wait(rr >= j*(NSTG-1) + i + 1)
        act.copy ib[0:NP, WI : WI+KP], psi[0:NP, 0:KP]  @signal(ri)
    .endif
  .endfor
  .if SORT
        ; flatten [NR*S, KP] -> [NR, S*KP] through HBM, then top-K of the candidates
        sp.dma q0, scr_v[row0 : row0+nr, :], lv[0 : nr*S, :]  @wait(rc >= CF) @signal(rw)
        sp.dma q1, scr_i[row0 : row0+nr, :], gi[0 : nr*S, :]  @wait(rg >= CF) @signal(rw)
        sp.dma q0, vb[0:nr, 0 : S*KP], scr_v[row0 : row0+nr, :]  @wait(rw >= 2*j + 2) @signal(rw2)
        sp.dma q1, ib[0:nr, 0 : S*KP], scr_i[row0 : row0+nr, :]  @signal(rw2)
        dve.nop  @wait(rw2 >= 2*j + 2, rst >= 2*j)
        topk_core vb, nr, S*KP, K, ov, oi, t8v, t8i, GEN
        topk_unkey ov, nr, K, ktmp, knan, kpinf, kninf, KB, KHI, KHI1, NONFINITE
        dve.nop  @signal(rc)
        pool.n_gather og[0:nr, :], ib[0:nr, 0 : S*KP], oi[0:nr, :]  @wait(rc >= CF + 1, rst >= 2*j)
        pool.copy ou[0:nr, :], og[0:nr, :]  @signal(rg)
        sp.dma q2, values[row0 : row0+nr, :], ov[0:nr, :]  @wait(rc >= CF + 1) @signal(rst)
        sp.dma q3, indices[row0 : row0+nr, :], ou[0:nr, :]  @wait(rg >= CF + 1) @signal(rst)
  .else
        ; unfolded store: partition (r, s) holds columns s*KP .. of row r
        topk_unkey lv, NP, KP, ktmp, knan, kpinf, kninf, KB, KHI, KHI1, NONFINITE
        dve.nop  @signal(rc)
        pool.copy gu[0:NP, :], gi[0:NP, :]  @wait(rst >= 2*j) @signal(rg)
        sp.dma q2, values[row0 : row0+nr, :], lv[0 : nr*S, :]  @wait(rc >= CF) @signal(rst)
        sp.dma q3, indices[row0 : row0+nr, :], gu[0 : nr*S, :]  @wait(rg >= CF + 1) @signal(rst)
  .endif
.endm

.set TJ = 0                         ; tiles of this core so far
.macro rot_half half, row0, nr
        sp.nop  @signal(go)
  .for jj in 0 .. cdiv(nr, T)
        rot_tile TJ, row0 + jj*T, min(T, nr - jj*T), half
    .set TJ = TJ + 1
  .endfor
.endm

  .if NONFINITE == all
        dve.memset khi, KHI
        dve.memset knan, nan
        dve.memset kpinf, inf
  .endif
  .if NONFINITE != none
        dve.memset kninf, -inf
  .endif
.if PADFIX
        dve.memset kfill, FILL
        ; the padding mask of the fold (the same for every tile): global index >= V in the
        ; padding columns, from an iota of row 0 doubled over the rows (as the index map)
        pool.iota pb[0:S, 0:PW0], [[1, PW0]], offset=PC0, pmul=C  @signal(kp)
  .for dd in 0 .. NDBL
    .set D0 = 1 << dd
    .set D1 = min(T, 2 * D0)
        sp.dma q1, pb[D0*S : D1*S, 0:PW0], pb[0 : (D1-D0)*S, 0:PW0]  @wait(kp >= dd + 1) @signal(kp)
  .endfor
        dve.tensor_scalar kpad[0:NP, 0:PW0], pb[0:NP, 0:PW0], op0=greater_equal, operand0=V  @wait(kp >= NDBL + 1)
.endif
        lnc_regs sp
        lnc_regs dve
        lnc_regs pool
        lnc_regs pe
        lnc_regs act
        sp.bnz r1, skip0
        dve.bnz r1, skip0
        pool.bnz r1, skip0
        pe.bnz r1, skip0
        act.bnz r1, skip0
        rot_half 0, 0, H
skip0:
  ; a core that skipped half 0 moves the semaphores to where half 0 leaves them
        sp.bz r1, noset0
        sp.sem_set rf, TJ
        sp.sem_set rl, LB
        sp.sem_set rm, MB
        sp.sem_set rc, TJ * (NSTG + 1)
        sp.sem_set rg, TJ * (NSTG + 1)
        sp.sem_set rr, TJ * (NSTG - 1)
        sp.sem_set ri, TJ * (NSTG - 1)
        sp.sem_set rw, 2 * TJ * SORT
        sp.sem_set rw2, 2 * TJ * SORT
        sp.sem_set rst, 2 * TJ
        sp.sem_set go, 1
noset0:
  .if NH == 2
        sp.bnz r3, skip1
        dve.bnz r3, skip1
        pool.bnz r3, skip1
        pe.bnz r3, skip1
        act.bnz r3, skip1
        rot_half 1, H, BXS - H
  .endif
skip1:
.endif
