; attention_block_tkg.nasm: the fused decode attention block (seed 000 section 3, docs/machine.md "Seed kernel envelopes"):
; RMSNorm, QKV projection, optional Q/K RMSNorm, RoPE, attention over the KV cache plus the
; active tokens, KV-cache update, output projection; one KV head.
;
; Parameters: B (sequences), S (active tokens per sequence), H, QH (query heads), D (head dim),
;             S_CTX (cache rows), ROPE (half | interleaved), QK_NORM (none | pre | post),
;             FP8_KV (0 | 1), EPS (1e-6), DT (bf16 | fp32).
; Inputs:     x : DT[B, S, H], norm_w : DT[H], w_qkv : DT[H, (QH+2)*D] (QH query heads, K, V),
;             w_o : DT[QH*D, H], q_norm_w, k_norm_w : DT[D] (QK_NORM != none),
;             cos, sin : fp32[B, S, D/2], k_cache, v_cache : DT[B, S_CTX, D] (FP8_KV = 1:
;             fp8e4m3, with k_scale, v_scale : fp32[1]), mask : uint8[B, S, S_CTX] (1 = cached
;             row visible), pos : uint32[B] (token s of sequence b goes to cache row pos[b] + s;
;             0xFFFFFFFF = no update).
; Outputs:    out : DT[B, S, H]; k_cache, v_cache updated in place (`--out k_cache=...`).
; Math:       xn = x / sqrt(mean(x^2) + EPS) * norm_w; [q_1..q_QH, k, v] = xn @ w_qkv; QK_NORM pre
;             (post): q_h, k RMS-normalised over D (q_norm_w, k_norm_w) before (after) RoPE; RoPE
;             rotates (x[d], x[d + D/2]) (half) or (x[2i], x[2i+1]) (interleaved) by cos / sin.
;             FP8_KV: k, v are stored as e4m3(clamp(k / k_scale, -240, 240)) and every cached or
;             new value is read back as q * scale. Query (b, s, h) attends to cached rows j with
;             mask[b, s, j] = 1 and to the active tokens s' <= s; scores / sqrt(D), softmax in
;             fp32, cast to DT before the product with V; out = concat_h(attn_h) @ w_o.
; Envelope:   trn2 or later; B*S*QH <= 128, 1 <= S <= 8, D even in [2, 128], H a positive multiple
;             of 128, S_CTX >= 1 (docs/machine.md "Seed kernel envelopes"; nothing else); an .error names each limit.
;             The cache is attended in chunks of ACH rows (lib/attn.inc: the largest of 8192,
;             4096, .., 512 that fits the SBUF partition beside the other tiles; ACH = S_CTX when
;             S_CTX <= that): one chunk is the one-pass softmax (S_CTX <= 8192 at the usual
;             shapes: the same instructions and bits as before chunking), several a flash-style
;             cascaded softmax (below). QH*D is not limited: the per-head work runs in groups of
;             2048/D + 1 heads. What bounds the shapes is the SBUF partition (212984 bytes on
;             trn2) itself, mostly the x^T tiles (2 * H * B*S * bytes(DT) / 128) and the fp32
;             projection sums ((QH+2)*D * 4): e.g. fp32 H = 16384 at B*S = 128 fits (ACH 2048),
;             H = 32768 does not; beyond, the assembler stops naming the tile that does not fit
;             ("SBUF over capacity: tensor '...' needs ..."). Assembled: gemma3-27b (H 5376,
;             QH 2, D 128, B 64, S_CTX 131072), H 8192 QH 8 B 16 S_CTX 36864, QH 128 D 128 H 16384;
;             run in tests/attn: S_CTX 131072 (16 chunks), QH 128 (D 64 and 128). Run-time data:
;             a pos[b] other than
;             0xFFFFFFFF with pos[b] + S > S_CTX (or above 2^31) is a fault (exit 3, "register
;             r10/r11 = P is outside [0, S_CTX)") before anything is computed or written.
;
; Decisions (docs/decisions.md):
; * The attention reads the caches as given, before this step's update: cached row j counts
;   only through mask[b, s, j]; the new tokens are attended as the active tokens s' <= s, from
;   SBUF, whatever the mask says about rows pos[b] .. pos[b]+S-1. The update comes after the
;   attention has read the caches (it runs under the o-projection).
; * S_CTX > ACH (NCH chunks; lib/attn.inc attn_seqn): per chunk c (the active tokens appended to
;   the last) the scores s_c as one-pass, m_c = max(m_{c-1}, max s_c), alpha = exp(m_{c-1} - m_c),
;   p = exp(s_c - m_c) in fp32, l_c = alpha l_{c-1} + sum p, O_c = alpha O_{c-1} + DT(p) @ V_c
;   (fp32); out = DT(O / l * v_scale). What is cast to DT is the unnormalised p of the chunk
;   (in (0, 1], relative error u as the one-pass form's normalised p); the rescalings add four
;   fp32 roundings per chunk (alpha's own error cancels in O / l). A chunk masked whole while no
;   row was visible yet gives p = 1 on its -1e30 scores; the first visible row (at the latest
;   the active token itself) makes alpha = exp(-1e30 - m) = 0 and wipes it.
; * FP8_KV: the active tokens go through the same quantisation as the stored ones (their k, v
;   are e4m3 values times the scale). The scale is applied to the scores (k_scale / sqrt(D))
;   and to the attention output (v_scale), so the e4m3 values themselves (exact in bf16) are the
;   matmul inputs. 1 / scale is a reciprocal, then a multiply (the ISA has no divide).
; * --lnc 2: the H columns are split in halves (H/2 each, tiles of <= 128). Each core reduces
;   sum(x^2) and x @ (norm_w * w_qkv) over its half; one send_recv + add exchanges the fp32 partial
;   sums (both cores then hold the same bits), so both compute the same q, k, v. Core 0 attends
;   sequences 0 .. ceil(B/2)-1, core 1 the rest; a second send_recv swaps the attention outputs
;   (each core copies the peer's tokens), and the o-projection writes disjoint H columns per
;   core (H/2 each). Core 0 writes the k cache, core 1 the v cache, after
;   a core_barrier (no core may still be reading the old rows). --lnc 1: core 0 does all of it.
;
; Idea: everything stays in SBUF between the input and the output: x^T (DMA transpose), the
; norm statistics (matmul against a ones column), the projection (fp32 PSUM, 512 columns per
; bank), the per-head work on a token-major fp32 tile, q^T / k^T (PE transposes). Per sequence:
; the mask rows (a vector-offset gather, row s of query row r = s*QH + h), K^T of the cache (one
; DMA transpose), the scores for 512 positions per matmul, one fp32 softmax over cache and active
; columns, P^T per 128 positions (PE transposes) against the V rows, accumulated in PSUM.
; The instructions of a core form one chain on semaphore sc, except the projections' weight
; loads, which stream one group ahead of their matmuls (lib/attn.inc wstream), the loads of the
; constants, of x and of the first w_o chunk, issued ahead of the chain, the cache writes, issued
; as soon as the attention has read the caches (under the o-projection), and the cache scores,
; where pool (mask to bias), PE (scores, two PSUM banks) and DVE (scale + bias) overlap.
.kernel attention_block_tkg
.param B = 2
.param S = 2
.param H = 256
.param QH = 2
.param D = 64
.param S_CTX = 256
.param ROPE = half
.param QK_NORM = none
.param FP8_KV = 0
.param EPS = 1e-6
.param DT = bf16

.if DT != fp32 && DT != bf16
  .error "attention_block_tkg: DT must be fp32 or bf16"
.endif
.if GEN < 3
  .error "attention_block_tkg: needs trn2 or later (dma_transpose, send_recv, core_barrier)"
.endif
.if ROPE != half && ROPE != interleaved
  .error "attention_block_tkg: ROPE must be half or interleaved"
.endif
.if QK_NORM != none && QK_NORM != pre && QK_NORM != post
  .error "attention_block_tkg: QK_NORM must be none, pre or post"
.endif
.if FP8_KV != 0 && FP8_KV != 1
  .error "attention_block_tkg: FP8_KV must be 0 or 1"
.endif
.if B < 1 || QH < 1
  .error "attention_block_tkg: B and QH must be positive"
.endif
.if S < 1 || S > 8
  .error "attention_block_tkg: S must be in [1, 8]"
.endif
.if B * S * QH > 128
  .error "attention_block_tkg: B*S*QH must be <= 128"
.endif
.if D < 2 || D > 128 || D % 2 != 0
  .error "attention_block_tkg: D must be even and in [2, 128]"
.endif
.if H < 128 || H % 128 != 0
  .error "attention_block_tkg: H must be a positive multiple of 128"
.endif
.if S_CTX < 1
  .error "attention_block_tkg: S_CTX must be positive"
.endif

.equ LAY = 1
.if FP8_KV == 1
.equ CDT = fp8e4m3
.else
.equ CDT = DT
.endif

.hbm  x        : DT[B, S, H]             input
.hbm  norm_w   : DT[H]                   input
.hbm  w_qkv    : DT[H, (QH+2)*D]         input
.hbm  w_o      : DT[QH*D, H]             input
.if QK_NORM != none
.hbm  q_norm_w : DT[D]                   input
.hbm  k_norm_w : DT[D]                   input
.endif
.hbm  cos      : fp32[B, S, D/2]         input
.hbm  sin      : fp32[B, S, D/2]         input
.hbm  k_cache  : CDT[B, S_CTX, D]        input
.hbm  v_cache  : CDT[B, S_CTX, D]        input
.if FP8_KV == 1
.hbm  k_scale  : fp32[1]                 input
.hbm  v_scale  : fp32[1]                 input
.hbm  kscr     : DT[2, S_CTX, D]         scratch
.endif
.hbm  mask     : uint8[B, S, S_CTX]      input
.hbm  pos      : uint32[B]               input
.hbm  out      : DT[B, S, H]             output

.view xh    = x as DT[B*S, H]
.view outh  = out as DT[B*S, H]
.view nw    = norm_w as DT[1, H]
.view wqkv  = w_qkv as DT[1, H, (QH+2)*D]
.view wo    = w_o as DT[1, QH*D, H]
.view kc    = k_cache as CDT[1, B, S_CTX, D]
.view vc    = v_cache as CDT[1, B, S_CTX, D]
.if QK_NORM != none
.view qnw   = q_norm_w as DT[1, D]
.view knw   = k_norm_w as DT[1, D]
.endif
.if FP8_KV == 1
.view ksc   = k_scale as fp32[1]
.view vsc   = v_scale as fp32[1]
.endif
.view cosv  = cos as fp32[B*S, D/2]
.view sinv  = sin as fp32[B*S, D/2]
.view maskv = mask as uint8[B*S, S_CTX]

.sem  sc, sk, sw, sm
.equ AXTRA = 0              ; no tiles beside lib/attn.inc's (its cache chunk ACH fits the rest)
.include "lib/attn.inc"

.set C = 0
.set SKN = 0
.set WGI = 0
.set SWN = 0
.equ BH = cdiv(B, 2)        ; --lnc 2: core 0 attends sequences 0 .. BH-1, core 1 the rest

; The whole block on one core: H columns h0 .. h0+hs-1; xch: exchange with the peer; wk / wv:
; this core writes the k / v cache; bar: a core_barrier before the writes; core: kscr slot;
; sequences b0 .. b1-1 are attended here; with xch the peer's tokens p0 .. p1-1 are taken from it.
.macro attn_block h0, hs, xch, wk, wv, bar, core, b0, b1, p0, p1
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
        attn_proj 0, h0, hs, xh, xch
        attn_heads
  .for b in b0 .. b1
        attn_seq 0, b, core
  .endfor
        attn_oproj_pre 0, h0, hs
  .if xch
        attn_seq_xch p0, p1
  .endif
  .if bar
        sp.core_barrier  @wait(sc >= C) @signal(sc)
        anx
  .endif
  .if wk
        attn_kv_write 0, k
  .endif
  .if wv
        attn_kv_write 0, v
  .endif
        attn_oproj 0, h0, hs, outh, 0
.endm

        attn_sections pe
        attn_sections act
        attn_sections dve
        attn_sections pool
        attn_sections sp
        attn_block 0, H, 0, 1, 1, 0, 0, 0, B, 0, 0
        pe.br done
        act.br done
        dve.br done
        pool.br done
        sp.br done
lnc2:
        pe.bnz r1, core1
        act.bnz r1, core1
        dve.bnz r1, core1
        pool.bnz r1, core1
        sp.bnz r1, core1
        attn_block 0, H/2, 1, 1, 0, 1, 0, 0, BH, BH*S, T
        pe.br done
        act.br done
        dve.br done
        pool.br done
        sp.br done
core1:
        attn_block H/2, H/2, 1, 0, 1, 1, 1, BH, B, 0, BH*S
done:
