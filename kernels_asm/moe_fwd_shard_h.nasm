; moe_fwd_shard_h.nasm: MoE blockwise expert FFN forward (dropless), H sharded over the LNC cores;
; writes the two checkpoints the backward (moe_bwd.nasm) replays.
;
; Parameters: T tokens, H hidden, E experts, B block size, N blocks, I intermediate size,
;             ACT (silu | swish), SCALE (post | pre | none), CLAMP (0 | 1) with GATE_LO, GATE_HI,
;             UP_LO, UP_HI, DT (bf16 | fp32).
; Inputs:     hidden : DT[T+1, H] (row T: the padding token, zeros), affinities : DT[(T+1)*E, 1],
;             w_gate_up : DT[E, H, 2, I], w_down : DT[E, I, H], token_position_to_id : int32[N*B]
;             (slot j of block n holds a token, T for padding, -1 for an empty slot: reads as
;             zero, writes nothing; any other value outside [0, T] is a run-time fault),
;             block_to_expert : int32[N, 1] (outside [0, E): a run-time fault).
; Outputs:    out : DT[T+1, H]; gate_up_ckpt : DT[N, 2, I, B] (g, u before the clamp, transposed);
;             down_ckpt : DT[N, B, H] (y before the affinity). Per slot (token t, expert e,
;             a = affinities[t*E + e]): x = hidden[t] (pre: a * hidden[t]); g, u = x @ w_gate_up[e];
;             m = act(clamp(g)) * clamp(u); y = m @ w_down[e]; out[t] += a * y (post) or y.
;             Row T of out is scratch (padding slots add into it).
; Envelope:   B in {128, 256, 512, 1024}; H, I even; I a multiple of 16; T, E, N >= 1; the
;             per-core tiles must fit SBUF (the assembler names the tensor that does not).
;
; Idea (seed 000 section 1, docs/machine.md "Seed kernel envelopes"): blocks run in order. Per block the expert index is
; loaded into a register (dynamic offset of the weight DMAs) and broadcast to the partitions
; (a 1-row matmul) to pick each slot's affinity column; the slots' hidden rows are gathered with
; a vector offset (oob skip for -1), transposed by DMA to [H, B]; the gate/up projections are
; the matmuls over this core's H slice, all-reduced between the two cores by one send_recv and
; an add (fp32: both cores then hold the same bits); the checkpoint is written, clamp, act(g) * u;
; the down projection produces this core's H columns only, written to down_ckpt, scaled and
; added into the output rows by a DMA read-modify-write (dma_compute). --lnc 1 runs the whole H
; on core 0 without the exchange. The instructions of a core form one chain on semaphore sc
; (each waits for its predecessor): simple, race-free, deterministic; only groups of
; independent DMAs (transposes, weight loads, checkpoint stores) wait for the same count so
; that their latencies overlap on the queue.
.kernel moe_fwd_shard_h
.param T = 64
.param H = 256
.param E = 2
.param B = 128
.param N = 2
.param I = 96
.param ACT = silu
.param SCALE = post
.param CLAMP = 0
.param GATE_LO = -7.0
.param GATE_HI = 7.0
.param UP_LO = -7.0
.param UP_HI = 7.0
.param DT = bf16
.include "lib/moe.inc"

.if DT != fp32 && DT != bf16
  .error "moe_fwd_shard_h: DT must be fp32 or bf16"
.endif
.if ACT != silu && ACT != swish
  .error "moe_fwd_shard_h: ACT must be silu or swish"
.endif
.if SCALE != post && SCALE != pre && SCALE != none
  .error "moe_fwd_shard_h: SCALE must be post, pre or none"
.endif
.if CLAMP != 0 && CLAMP != 1
  .error "moe_fwd_shard_h: CLAMP must be 0 or 1"
.endif
.if B != 128 && B != 256 && B != 512 && B != 1024
  .error "moe_fwd_shard_h: B must be 128, 256, 512 or 1024"
.endif
.if H < 2 || H % 2 != 0
  .error "moe_fwd_shard_h: H must be even and positive (split over 2 cores)"
.endif
.if I < 16 || I % 16 != 0
  .error "moe_fwd_shard_h: I must be a positive multiple of 16"
.endif
.if T < 1 || E < 1 || N < 1
  .error "moe_fwd_shard_h: T, E and N must be positive"
.endif

.equ NBT = B / 128          ; 128-slot token tiles of a block
.equ IT = cdiv(I, 128)      ; I tiles (partitions of the transposed gate/up)
.equ KTM = cdiv(H, 128)     ; H tiles of the contraction (whole H: the --lnc 1 section)
.equ NC = cdiv(B, 512)      ; 512-slot chunks (one fp32 PSUM bank)

.hbm  hidden               : DT[T+1, H]         input
.hbm  affinities           : DT[(T+1)*E, 1]     input
.hbm  w_gate_up            : DT[E, H, 2, I]     input
.hbm  w_down               : DT[E, I, H]        input
.hbm  token_position_to_id : int32[N*B]         input
.hbm  block_to_expert      : int32[N, 1]        input
.hbm  out                  : DT[T+1, H]         output
.hbm  gate_up_ckpt         : DT[N, 2, I, B]     output
.hbm  down_ckpt            : DT[N, B, H]        output
.view aff2 = affinities as DT[T+1, E]
.view tpv  = token_position_to_id as int32[N*B, 1]

.sbuf ones  : fp32[1, 128]
.sbuf iotae : fp32[128, E]
.sbuf eb    : int32[1, 1]
.sbuf ebf   : fp32[1, 1]
.sbuf esc   : fp32[128, 1]        ; the block's expert index on every partition
.sbuf oh    : fp32[128, E]        ; one-hot of the expert
.sbuf ids   : int32[128, NBT]     ; token ids of the block's slots
.sbuf idf   : fp32[128, NBT]
.sbuf idck  : int32[128, 1]       ; ids with -1 -> 0: the range check's gather
.sbuf chk   : DT[128, 1]
.sbuf afr   : DT[128, NBT, E]     ; the slots' affinity rows
.sbuf aft   : fp32[128, E]
.sbuf av    : fp32[128, NBT]      ; the slots' affinities
.sbuf xt    : DT[128, NBT, H]     ; gathered hidden rows (this core's H slice)
.sbuf xT    : DT[128, KTM, B]     ; transposed: H on partitions
.sbuf wg    : DT[128, KTM, 2*I]   ; w_gate_up[e], this core's H rows
.sbuf gu    : fp32[128, 2*IT, B]  ; gate (tiles 0..IT-1) and up (IT..2IT-1), transposed
.sbuf gr    : fp32[128, 2*IT, B]  ; the peer's partial sums
.sbuf ag    : fp32[128, B]
.sbuf mT    : DT[128, IT, B]      ; act(g) * u, transposed
.sbuf wd    : DT[128, IT, H]      ; w_down[e], this core's H columns
.sbuf yt    : fp32[128, H]        ; one token tile of the down projection
.psum ps    : fp32[128, 512]
.psum py    : fp32[128, 512]
.psum pse   : fp32[128, 1]
.sem  sc

.set C = 0
.set SCK = 0

; One block N0 on this core's H slice H0 .. H0+HS-1; XCH: all-reduce the gate/up partial sums
; with the peer; WCK: this core writes gate_up_ckpt.
.macro fwd_block n0, h0, hs, xch, wck
  .set KT = cdiv(hs, 128)
        moe_expert n0
  ; gather the slots: ids, affinities (the expert's column), hidden rows; transpose to [H, B]
  .for j in 0 .. NBT
        moe_slots n0, j
        pool.memset xt[0:128, j, 0:hs], 0.0  @wait(sc >= C) @signal(sc)
        nx
        sp.dma q0, xt[0:128, j, 0:hs], hidden[@vec(ids[0:128, j:j+1]), h0:h0+hs], oob=skip  @wait(sc >= C) @signal(sc)
        nx
    .if SCALE == pre
        dve.tensor_scalar xt[0:128, j, 0:hs], xt[0:128, j, 0:hs], op0=multiply, operand0=av[0:128, j:j+1]  @wait(sc >= C) @signal(sc)
        nx
    .endif
  .endfor
  ; one group of independent DMAs (all wait for the same count W: their latencies overlap on
  ; the queue): the transposes of the gathered rows, the expert's weights
  .set W = C
  .for j in 0 .. NBT
    .for k in 0 .. KT
      .set KW = min(128, hs - k * 128)
        sp.dma_transpose q0, xT[0:KW, k, j*128 : j*128+128], xt[0:128, j, k*128 : k*128+KW]  @wait(sc >= W) @signal(sc)
        nx
    .endfor
  .endfor
  .for k in 0 .. KT
    .set KW = min(128, hs - k * 128)
        sp.dma q0, wg[0:KW, k, 0:2*I], w_gate_up[@r5, h0+k*128 : h0+k*128+KW, :, :]  @wait(sc >= W) @signal(sc)
        nx
  .endfor
  .for it in 0 .. IT
    .set IW = min(128, I - it * 128)
        sp.dma q0, wd[0:IW, it, 0:hs], w_down[@r5, it*128 : it*128+IW, h0:h0+hs]  @wait(sc >= W) @signal(sc)
        nx
  .endfor
  ; gate/up projections over this core's H rows
  .for c in 0 .. 2
    .for it in 0 .. IT
      .set IW = min(128, I - it * 128)
      .for bc in 0 .. NC
        .set B0 = bc * 512
        .set BW = min(512, B - B0)
        .for k in 0 .. KT
          .set KW = min(128, hs - k * 128)
          .if k == 0
        pe.matmul ps[0:IW, 0:BW], wg[0:KW, k, c*I + it*128 : c*I + it*128 + IW], xT[0:KW, k, B0:B0+BW], acc=overwrite  @wait(sc >= C) @signal(sc)
          .else
        pe.matmul ps[0:IW, 0:BW], wg[0:KW, k, c*I + it*128 : c*I + it*128 + IW], xT[0:KW, k, B0:B0+BW], acc=accumulate  @wait(sc >= C) @signal(sc)
          .endif
        nx
        .endfor
        dve.copy gu[0:IW, c*IT + it, B0:B0+BW], ps[0:IW, 0:BW]  @wait(sc >= C) @signal(sc)
        nx
      .endfor
    .endfor
  .endfor
  ; all-reduce of the partial sums: send mine, receive the peer's, add (same bits on both)
  .if xch
    .for q in 0 .. 2*IT
      .set IW = min(128, I - (q % IT) * 128)
        sp.send_recv gr[0:IW, q, 0:B], gu[0:IW, q, 0:B]  @wait(sc >= C) @signal(sc)
        nx
        dve.tensor_tensor gu[0:IW, q, 0:B], gu[0:IW, q, 0:B], gr[0:IW, q, 0:B], op=add  @wait(sc >= C) @signal(sc)
        nx
    .endfor
  .endif
  .if wck
    .set W = C
    .for c in 0 .. 2
      .for it in 0 .. IT
        .set IW = min(128, I - it * 128)
        sp.dma q0, gate_up_ckpt[n0, c, it*128 : it*128+IW, 0:B], gu[0:IW, c*IT + it, 0:B]  @wait(sc >= W) @signal(sc)
        nx
      .endfor
    .endfor
  .endif
  ; m = act(clamp(g)) * clamp(u), transposed [I, B]
  .for it in 0 .. IT
    .set IW = min(128, I - it * 128)
    .if CLAMP == 1
        dve.tensor_scalar gu[0:IW, it, 0:B], gu[0:IW, it, 0:B], op0=max, operand0=GATE_LO, op1=min, operand1=GATE_HI  @wait(sc >= C) @signal(sc)
        nx
        dve.tensor_scalar gu[0:IW, IT+it, 0:B], gu[0:IW, IT+it, 0:B], op0=max, operand0=UP_LO, op1=min, operand1=UP_HI  @wait(sc >= C) @signal(sc)
        nx
    .endif
    .if ACT == silu
        act.activation ag[0:IW, 0:B], gu[0:IW, it, 0:B], func=silu  @wait(sc >= C) @signal(sc)
    .else
        act.activation ag[0:IW, 0:B], gu[0:IW, it, 0:B], func=gelu_apprx_sigmoid  @wait(sc >= C) @signal(sc)
    .endif
        nx
        dve.tensor_tensor mT[0:IW, it, 0:B], ag[0:IW, 0:B], gu[0:IW, IT+it, 0:B], op=multiply  @wait(sc >= C) @signal(sc)
        nx
  .endfor
  ; down projection of this core's H columns, per token tile; checkpoint; scale; add into out
  .for j in 0 .. NBT
    .for hc in 0 .. hs step 512
      .set HW = min(512, hs - hc)
      .for it in 0 .. IT
        .set IW = min(128, I - it * 128)
        .if it == 0
        pe.matmul py[0:128, 0:HW], mT[0:IW, it, j*128 : j*128+128], wd[0:IW, it, hc:hc+HW], acc=overwrite  @wait(sc >= C) @signal(sc)
        .else
        pe.matmul py[0:128, 0:HW], mT[0:IW, it, j*128 : j*128+128], wd[0:IW, it, hc:hc+HW], acc=accumulate  @wait(sc >= C) @signal(sc)
        .endif
        nx
      .endfor
        dve.copy yt[0:128, hc:hc+HW], py[0:128, 0:HW]  @wait(sc >= C) @signal(sc)
        nx
    .endfor
        sp.dma q0, down_ckpt[n0, j*128 : j*128+128, h0:h0+hs], yt[0:128, 0:hs]  @wait(sc >= C) @signal(sc)
        nx
    .if SCALE == post
        dve.tensor_scalar yt[0:128, 0:hs], yt[0:128, 0:hs], op0=multiply, operand0=av[0:128, j:j+1]  @wait(sc >= C) @signal(sc)
        nx
    .endif
        sp.dma_compute q0, out[@vec(ids[0:128, j:j+1]), h0:h0+hs], out[@vec(ids[0:128, j:j+1]), h0:h0+hs], yt[0:128, 0:hs], oob=skip  @wait(sc >= C) @signal(sc)
        nx
  .endfor
.endm

; The whole forward on one core's H slice: constants, zero out[:, slice], every block.
.macro fwd_core h0, hs, xch, wck
  .set C = 0
  .set SCK = 0
        pool.memset ones[0:1, 0:128], 1.0  @wait(sc >= C) @signal(sc)
        nx
        pool.iota iotae[0:128, 0:E], [[1, E]]  @wait(sc >= C) @signal(sc)
        nx
        pool.memset yt[0:128, 0:hs], 0.0  @wait(sc >= C) @signal(sc)
        nx
  .set W = C
  .for r0 in 0 .. T+1 step 128
        sp.dma q0, out[r0 : r0 + min(128, T+1-r0), h0:h0+hs], yt[0 : min(128, T+1-r0), 0:hs]  @wait(sc >= W) @signal(sc)
        nx
  .endfor
  .for n in 0 .. N
        fwd_block n, h0, hs, xch, wck
  .endfor
.endm

        moe_sections pe
        moe_sections act
        moe_sections dve
        moe_sections pool
        moe_sections sp
        fwd_core 0, H, 0, 1
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
        fwd_core 0, H/2, 1, 1
        pe.br done
        act.br done
        dve.br done
        pool.br done
        sp.br done
core1:
        fwd_core H/2, H/2, 1, 0
done:
