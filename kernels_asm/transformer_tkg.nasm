; transformer_tkg.nasm: LAYERS dense decode layers in one instruction stream (seed 000 section 3,
; docs/machine.md "Seed kernel envelopes"): per layer the attention block (lib/attn.inc, as attention_block_tkg), the
; tensor-parallel all-reduce and residual, RMSNorm + SwiGLU MLP (lib/tkg.inc), all-reduce and
; residual. It runs on TP ranks (`.ranks TP`: the default of --ranks).
;
; Parameters: LAYERS, TP (ranks; `.ranks TP`), SBUF_RESIDUAL (0: the residual and the all-reduces go
;             through HBM; 1: they stay in SBUF), B, S, H, QH (query heads per rank), D, S_CTX,
;             I (MLP intermediate size per rank), ROPE (half | interleaved), EPS (1e-6),
;             DT (bf16 | fp32).
; Inputs (per rank; a .npy without the leading rank axis is given to every rank):
;             x : DT[B, S, H] (the same on every rank), attn_norm_w, mlp_norm_w : DT[LAYERS, H],
;             w_qkv : DT[LAYERS, H, (QH+2)*D] (this rank's heads and its KV head),
;             w_o : DT[LAYERS, QH*D, H], w_gate_up : DT[LAYERS, H, 2, I], w_down : DT[LAYERS, I, H],
;             cos, sin : fp32[B, S, D/2], k_cache, v_cache : DT[LAYERS, B, S_CTX, D],
;             mask : uint8[B, S, S_CTX], pos : uint32[B] (as attention_block_tkg).
; Outputs:    out : DT[B, S, H] (identical on every rank); k_cache, v_cache updated in place.
; Math, per layer l: a = attention_block(x) (this rank's heads, its partial o-projection);
;             h = x + AllReduce_sum(a); z = rmsnorm(h) * mlp_norm_w[l]; [g, u] = z @ w_gate_up[l];
;             f = (silu(g) * u) @ w_down[l]; x = h + AllReduce_sum(f). out = x after the last.
; Envelope:   trn2 or later; attention_block_tkg's (docs/machine.md "Seed kernel envelopes":
;             B*S*QH <= 128, S <= 8, D even <= 128, H a multiple of 128, S_CTX >= 1: no limit of
;             its own on S_CTX or QH*D, the cache attended in chunks sized to fit), LAYERS >= 1, TP in
;             [1, 64], I even in [2, 4096] (the fp32 gate/up sums and the peer's stay in SBUF); an
;             .error names each limit. The tiles must also fit the SBUF partition together (the
;             residual tiles take 3 * H * bytes, the gate/up sums 8 * (2I+1)); the attention's cache
;             chunk shrinks to fit beside them (AXTRA below). Fit (bf16): Llama-70B per-rank shards
;             (H 8192, D 128, QH 64/TP, I 28672/TP, B 128/(64/TP)) at TP 8 / 16 / 32 and any
;             S_CTX (36864 assembled; TP 8's shard run end to end on 2 ranks); B*S = 8, I = 4096,
;             H = 8192 at S_CTX 8192; H = 16384 with I = 3584 at B*S = 16 (when the includer's
;             tiles pass 128 KiB, lib/attn.inc narrows its weight groups and o-projection chunks
;             to 8 KiB each, and the gate/up exchange goes in 2048-column pieces: the same bits).
;             Not fit: fp32 at H = 8192, I = 3584 (the residual + MLP tiles, 3 * 32 KiB + 2 * 28
;             KiB + 14 KiB, leave no room beside the attention's); the assembler names the tile
;             ("SBUF over capacity: tensor ...").
;
; Decisions (docs/decisions.md):
; * --lnc 2: as attention_block_tkg, core c owns the H columns c*H/2 .. (c+1)*H/2-1 of x, h, a
;   and f. Both projections that contract over H (QKV, gate/up) reduce this core's slice and
;   exchange the fp32 partial sums with the peer (send_recv + add), and both projections that
;   produce H (o-projection, down) write this core's columns only; so a core never needs the
;   peer's columns of the residual, and the seed's send_recv swap of the H shards after the
;   SB2SB all-reduce is not needed: each core all-reduces its own shard over the TP ranks
;   (collectives pair the same core of every rank) and keeps it.
; * SBUF_RESIDUAL=1 keeps x, h, a, f and the all-reduces in SBUF (SB2SB all_reduce); HBM is read
;   for x once, the weights, the caches, and written for the caches and `out` only.
;   SBUF_RESIDUAL=0 round-trips every layer through HBM scratch (a, its sum, h, x): the
;   attention and the MLP read their inputs from HBM, the all-reduces run HBM to HBM. Both give
;   the same bits (the same arithmetic in the same order; the test checks it).
; * Each core is one dependency chain (semaphore sc) as in attention_block_tkg, except that the
;   QKV, gate/up and down weights stream one group ahead of their matmuls (wstream), and what
;   lib/attn.inc takes off the chain (the constant and input loads, the first w_o chunk, the
;   cache writes, the score pipeline). With SBUF_RESIDUAL=1 the first attn_proj's x^T transposes
;   (from t_x) may be triggered before the t_x load completes: both are sp transfers on q0, which
;   run in order.
.kernel transformer_tkg
.param LAYERS = 1
.param TP = 1
.param SBUF_RESIDUAL = 0
.param B = 2
.param S = 1
.param H = 256
.param QH = 2
.param D = 64
.param S_CTX = 128
.param I = 192
.param ROPE = half
.param EPS = 1e-6
.param DT = bf16

.if DT != fp32 && DT != bf16
  .error "transformer_tkg: DT must be fp32 or bf16"
.endif
.if GEN < 3
  .error "transformer_tkg: needs trn2 or later (dma_transpose, send_recv, core_barrier)"
.endif
.if ROPE != half && ROPE != interleaved
  .error "transformer_tkg: ROPE must be half or interleaved"
.endif
.if SBUF_RESIDUAL != 0 && SBUF_RESIDUAL != 1
  .error "transformer_tkg: SBUF_RESIDUAL must be 0 or 1"
.endif
.if LAYERS < 1
  .error "transformer_tkg: LAYERS must be positive"
.endif
.if TP < 1 || TP > 64
  .error "transformer_tkg: TP must be in [1, 64]"
.endif
.ranks TP                ; one rank per shard: run and check default to --ranks TP
.if B < 1 || QH < 1
  .error "transformer_tkg: B and QH must be positive"
.endif
.if S < 1 || S > 8
  .error "transformer_tkg: S must be in [1, 8]"
.endif
.if B * S * QH > 128
  .error "transformer_tkg: B*S*QH must be <= 128"
.endif
.if D < 2 || D > 128 || D % 2 != 0
  .error "transformer_tkg: D must be even and in [2, 128]"
.endif
.if H < 128 || H % 128 != 0
  .error "transformer_tkg: H must be a positive multiple of 128"
.endif
.if S_CTX < 1
  .error "transformer_tkg: S_CTX must be positive"
.endif
.if I < 2 || I % 2 != 0 || I > 4096
  .error "transformer_tkg: I must be even and in [2, 4096]"
.endif

.equ LAY = LAYERS
.equ QK_NORM = none
.equ FP8_KV = 0
.equ CDT = DT

.hbm  x           : DT[B, S, H]                 input
.hbm  attn_norm_w : DT[LAYERS, H]               input
.hbm  mlp_norm_w  : DT[LAYERS, H]               input
.hbm  w_qkv       : DT[LAYERS, H, (QH+2)*D]     input
.hbm  w_o         : DT[LAYERS, QH*D, H]         input
.hbm  w_gate_up   : DT[LAYERS, H, 2, I]         input
.hbm  w_down      : DT[LAYERS, I, H]            input
.hbm  cos         : fp32[B, S, D/2]             input
.hbm  sin         : fp32[B, S, D/2]             input
.hbm  k_cache     : DT[LAYERS, B, S_CTX, D]     input
.hbm  v_cache     : DT[LAYERS, B, S_CTX, D]     input
.hbm  mask        : uint8[B, S, S_CTX]          input
.hbm  pos         : uint32[B]                   input
.hbm  out         : DT[B, S, H]                 output
.if SBUF_RESIDUAL == 0
.hbm  xcur        : DT[B*S, H]                  scratch   ; x between layers
.hbm  hcur        : DT[B*S, H]                  scratch   ; h
.hbm  pbuf        : DT[B*S, H]                  scratch   ; this rank's partial a / f
.hbm  rbuf        : DT[B*S, H]                  scratch   ; its all-reduced sum
.endif

.view xh    = x as DT[B*S, H]
.view outh  = out as DT[B*S, H]
.view nw    = attn_norm_w as DT[LAYERS, H]
.view mnw   = mlp_norm_w as DT[LAYERS, H]
.view wqkv  = w_qkv as DT[LAYERS, H, (QH+2)*D]
.view wo    = w_o as DT[LAYERS, QH*D, H]
.view wgu   = w_gate_up as DT[LAYERS, H, 2*I]
.view wdn   = w_down as DT[LAYERS, I, H]
.view kc    = k_cache as DT[LAYERS, B, S_CTX, D]
.view vc    = v_cache as DT[LAYERS, B, S_CTX, D]
.view cosv  = cos as fp32[B*S, D/2]
.view sinv  = sin as fp32[B*S, D/2]
.view maskv = mask as uint8[B*S, S_CTX]
.group g = rank_groups(TP, 1)

.if DT == fp32
.equ TDB = 4
.else
.equ TDB = 2
.endif
; The LNC exchange of the gate/up sums t_gu: one piece, or (when the residual tiles take more than
; 64 KiB per partition) pieces of 2048 columns through a smaller t_gur (the same bits).
.if 3 * H * TDB > 65536
.equ TXW = min(2 * I + 1, 2048)
.else
.equ TXW = 2 * I + 1
.endif
; lib/tkg.inc's tiles (t_x, t_h, t_a, t_gu, t_gur counted even when it shares a_sc, t_m, t_mT):
; the attention's cache chunk is sized to fit beside them (lib/attn.inc ACH)
.equ AXTRA = 3 * H * TDB + 4 * (2 * I + 1) + 4 * TXW + 4 + I * TDB + cdiv(I, 128) * B * S * TDB + 1024
.sem  sc, sk, sw, sm
.include "lib/attn.inc"
.include "lib/tkg.inc"

.set C = 0
.set SKN = 0
.set WGI = 0
.set SWN = 0
.equ BH = cdiv(B, 2)        ; --lnc 2: core 0 attends sequences 0 .. BH-1, core 1 the rest

; Every layer on one core: H columns h0 .. h0+hs-1; xch: exchange with the peer; wk / wv: this
; core writes the k / v caches; bar: a core_barrier before the writes; core: its index; it
; attends sequences b0 .. b1-1 and takes the peer's tokens p0 .. p1-1 (xch).
.macro tkg_core h0, hs, xch, wk, wv, bar, core, b0, b1, p0, p1
  .set C = 0
  .set SKN = 0
  .set WGI = 0
  .set SWN = 0
  .if wk
        attn_checks 0, k
  .endif
  .if wv
        attn_checks 0, v
  .endif
        attn_consts
  .if SBUF_RESIDUAL == 1
        sp.dma q0, t_x[0:T, h0:h0+hs], xh[0:T, h0:h0+hs]  @wait(sc >= C) @signal(sc)
        anx
  .endif
  .for l in 0 .. LAYERS
    ; a = attention_block(x)
    .if SBUF_RESIDUAL == 1
        attn_proj l, h0, hs, t_x, xch
    .elif l == 0
        attn_proj l, h0, hs, xh, xch
    .else
        attn_proj l, h0, hs, xcur, xch
    .endif
        attn_heads
    .for b in b0 .. b1
        attn_seq l, b, core
    .endfor
        attn_oproj_pre l, h0, hs
    .if xch
        attn_seq_xch p0, p1
    .endif
    .if bar
        sp.core_barrier  @wait(sc >= C) @signal(sc)
        anx
    .endif
    .if wk
        attn_kv_write l, k
    .endif
    .if wv
        attn_kv_write l, v
    .endif
    .if SBUF_RESIDUAL == 1
        attn_oproj l, h0, hs, t_a, 1
    .else
        attn_oproj l, h0, hs, pbuf, 0
    .endif
    ; h = x + AllReduce(a); f = mlp(h); x = h + AllReduce(f)
    .if SBUF_RESIDUAL == 1
        tkg_residual_sbuf h0, hs, t_x, t_h
        mlp_block l, h0, hs, t_h, t_a, 1, xch
        tkg_residual_sbuf h0, hs, t_h, t_x
    .else
      .if l == 0
        tkg_residual_hbm h0, hs, pbuf, rbuf, xh, hcur
      .else
        tkg_residual_hbm h0, hs, pbuf, rbuf, xcur, hcur
      .endif
        mlp_block l, h0, hs, hcur, pbuf, 0, xch
      .if l == LAYERS - 1
        tkg_residual_hbm h0, hs, pbuf, rbuf, hcur, outh
      .else
        tkg_residual_hbm h0, hs, pbuf, rbuf, hcur, xcur
      .endif
    .endif
  .endfor
  .if SBUF_RESIDUAL == 1
        sp.dma q0, outh[0:T, h0:h0+hs], t_x[0:T, h0:h0+hs]  @wait(sc >= C) @signal(sc)
        anx
  .endif
.endm

        attn_sections pe
        attn_sections act
        attn_sections dve
        attn_sections pool
        attn_sections sp
        attn_sections cc
        tkg_core 0, H, 0, 1, 1, 0, 0, 0, B, 0, 0
        pe.br done
        act.br done
        dve.br done
        pool.br done
        sp.br done
        cc.br done
lnc2:
        pe.bnz r1, core1
        act.bnz r1, core1
        dve.bnz r1, core1
        pool.bnz r1, core1
        sp.bnz r1, core1
        cc.bnz r1, core1
        tkg_core 0, H/2, 1, 1, 0, 1, 0, 0, BH, BH*S, T
        pe.br done
        act.br done
        dve.br done
        pool.br done
        sp.br done
        cc.br done
core1:
        tkg_core H/2, H/2, 1, 0, 1, 1, 1, BH, B, 0, BH*S
done:
