; moe_bwd.nasm: MoE blockwise expert FFN backward (dropless), replaying the forward's checkpoints
; (moe_fwd_shard_h.nasm) instead of recomputing the projections; H sharded over the LNC cores.
;
; Parameters: T, H, E, B, N, I, ACT (silu | swish), SCALE (post only: the seed's one mode),
;             CLAMP (0 | 1) with GATE_LO, GATE_HI, UP_LO, UP_HI, BIAS (0 | 1), DT (bf16 | fp32).
; Inputs:     the forward's (hidden, affinities, w_gate_up, w_down, token_position_to_id,
;             block_to_expert; routing values out of range fault as in the forward), gate_up_ckpt : DT[N, 2, I, B] (g, u, transposed), down_ckpt :
;             DT[N, B, H] (y = m @ w_down[e] before the affinity), grad_out : DT[T+1, H].
; Outputs:    grad_hidden : DT[T+1, H], grad_affinities : DT[(T+1)*E, 1], grad_w_gate_up :
;             DT[E, H, 2, I], grad_w_down : DT[E, I, H]; BIAS = 1: grad_b_gate_up : DT[E, 2, I],
;             grad_b_down : DT[E, H]. Per slot (token t, expert e, a = affinities[t*E + e]):
;             d_a = sum_h grad_out[t] * y; dy = a * grad_out[t]; g' = clamp(g), u' = clamp(u);
;             m = act(g') * u'; grad_w_down[e] += m^T dy; dm = dy @ w_down[e]^T;
;             dg = dm * u' * act'(g') * [GATE_LO < g < GATE_HI]; du = dm * act(g') *
;             [UP_LO < u < UP_HI]; grad_w_gate_up[e] += hidden[t]^T [dg, du];
;             grad_hidden[t] += [dg, du] @ w_gate_up[e]^T; bias grads: sums of dy, [dg, du].
;             Rows of token T (grad_hidden[T], grad_affinities[T*E ..]) are scratch.
; Envelope:   B in {128, 256, 512, 1024}; H, I even; I a multiple of 16; T, E, N >= 1; the
;             per-core tiles must fit SBUF (the assembler names the tensor that does not).
;
; Idea (seed 000 section 1, docs/machine.md "Seed kernel envelopes"): the seed's five steps per block, blocks in order:
; (1) d_a and dy from grad_out and the down checkpoint; (2) SwiGLU backward from the gate/up
; checkpoint with the hardware derivative (silu_dx / gelu_apprx_sigmoid_dx); (3) grad_w_down;
; (4) grad_hidden; (5) grad_w_gate_up. Core c owns the H slice c: every H-indexed gradient is
; disjoint between the cores; the two sums over H (d_a and dm) are all-reduced by send_recv + add
; (docs/decisions.md: the seed fences shared-HBM partials with core_barrier instead). The weight
; and bias gradients accumulate per expert by DMA read-modify-write (dma_compute) at the
; expert's row, a register offset: blocks run in order, so the same expert's updates never
; overlap (no atomics). --lnc 1 runs the whole H on core 0. One chain per core (semaphore sc:
; each instruction waits for its predecessor), except groups of independent DMAs (transposes,
; checkpoint loads, zero init) that wait for one count W so that their latencies overlap.
.kernel moe_bwd
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
.param BIAS = 0
.param DT = bf16
.include "lib/moe.inc"

.if DT != fp32 && DT != bf16
  .error "moe_bwd: DT must be fp32 or bf16"
.endif
.if ACT != silu && ACT != swish
  .error "moe_bwd: ACT must be silu or swish"
.endif
.if SCALE != post
  .error "moe_bwd: SCALE must be post (the seed's only backward mode)"
.endif
.if CLAMP != 0 && CLAMP != 1
  .error "moe_bwd: CLAMP must be 0 or 1"
.endif
.if BIAS != 0 && BIAS != 1
  .error "moe_bwd: BIAS must be 0 or 1"
.endif
.if B != 128 && B != 256 && B != 512 && B != 1024
  .error "moe_bwd: B must be 128, 256, 512 or 1024"
.endif
.if H < 2 || H % 2 != 0
  .error "moe_bwd: H must be even and positive (split over 2 cores)"
.endif
.if I < 16 || I % 16 != 0
  .error "moe_bwd: I must be a positive multiple of 16"
.endif
.if T < 1 || E < 1 || N < 1
  .error "moe_bwd: T, E and N must be positive"
.endif

.equ NBT = B / 128
.equ IT = cdiv(I, 128)
.equ NC = cdiv(B, 512)
.if IT * NC > 6
  .error "moe_bwd: cdiv(I, 128) * cdiv(B, 512) must be <= 6 (dm accumulates in 6 PSUM banks)"
.endif

.hbm  hidden               : DT[T+1, H]         input
.hbm  affinities           : DT[(T+1)*E, 1]     input
.hbm  w_gate_up            : DT[E, H, 2, I]     input
.hbm  w_down               : DT[E, I, H]        input
.hbm  token_position_to_id : int32[N*B]         input
.hbm  block_to_expert      : int32[N, 1]        input
.hbm  gate_up_ckpt         : DT[N, 2, I, B]     input
.hbm  down_ckpt            : DT[N, B, H]        input
.hbm  grad_out             : DT[T+1, H]         input
.hbm  grad_hidden          : DT[T+1, H]         output
.hbm  grad_affinities      : DT[(T+1)*E, 1]     output
.hbm  grad_w_gate_up       : DT[E, H, 2, I]     output
.hbm  grad_w_down          : DT[E, I, H]        output
.if BIAS == 1
.hbm  grad_b_gate_up       : DT[E, 2, I]        output
.hbm  grad_b_down          : DT[E, H]           output
.endif
.view aff2  = affinities as DT[T+1, E]
.view tpv   = token_position_to_id as int32[N*B, 1]
.view wgu2  = w_gate_up as DT[E, H, 2*I]
.view gwgu2 = grad_w_gate_up as DT[E, H, 2*I]
.view gwgur = grad_w_gate_up as DT[E*H, 2*I]
.view gwdr  = grad_w_down as DT[E*I, H]
.view gaff  = grad_affinities as DT[(T+1)*E, 1]
.view gaffr = grad_affinities as DT[T+1, E]
.if BIAS == 1
.view gbgu2 = grad_b_gate_up as DT[E, 2*I]
.endif

.sbuf ones  : fp32[1, 128]
.sbuf onec  : DT[128, 1]          ; ones column: sums over the slots by matmul
.sbuf iotae : fp32[128, E]
.sbuf eb    : int32[1, 1]
.sbuf ebf   : fp32[1, 1]
.sbuf esc   : fp32[128, 1]
.sbuf oh    : fp32[128, E]
.sbuf ids   : int32[128, NBT]
.sbuf idf   : fp32[128, NBT]
.sbuf aidx  : int32[128, NBT]     ; t * E + e: the slots' grad_affinities rows
.sbuf idck  : int32[128, 1]       ; ids with -1 -> 0: the range check's gather
.sbuf chk   : DT[128, 1]
.sbuf afr   : DT[128, NBT, E]
.sbuf aft   : fp32[128, E]
.sbuf av    : fp32[128, NBT]
.sbuf dap   : fp32[128, NBT]      ; d_a (this core's partial sum, then the total)
.sbuf dar   : fp32[128, NBT]
.sbuf go    : DT[128, H]          ; grad_out rows of one token tile
.sbuf yk    : fp32[128, max(H, 2*I)] ; zeros (gradient init); down checkpoint rows of a tile
.sbuf xt    : DT[128, NBT, H]     ; hidden rows (slots on partitions)
.sbuf dyS   : DT[128, NBT, H]     ; dy (slots on partitions)
.sbuf dyT   : DT[128, B]          ; dy transposed, one H tile (H on partitions)
.sbuf wdT   : DT[128, I]          ; w_down[e] transposed, one H tile
.sbuf wguT  : DT[128, 2*IT, 512]  ; w_gate_up[e] transposed ((c, i) on partitions), 512 columns
.sbuf gk    : fp32[128, 2*IT, B]  ; g, u from the checkpoint
.sbuf gcl   : fp32[128, 2*IT, B]  ; clamped
.sbuf msk   : fp32[128, 2*IT, B]  ; the clamp masks
.sbuf sA    : fp32[128, IT, B]    ; act(g')
.sbuf sD    : fp32[128, IT, B]    ; act'(g')
.sbuf tq    : fp32[128, B]
.sbuf mT    : DT[128, IT, B]      ; m transposed
.sbuf mS    : DT[128, NBT, I]     ; m (slots on partitions)
.sbuf dmT   : fp32[128, IT, B]    ; dm transposed
.sbuf dmr   : fp32[128, IT, B]
.sbuf dguT  : DT[128, 2*IT, B]    ; [dg, du] transposed
.sbuf dguS  : DT[128, NBT, 2*I]   ; [dg, du] (slots on partitions)
.sbuf gbg   : fp32[128, 2*IT]
.sbuf gwt   : fp32[128, 512]
.psum ps    : fp32[128, 512]
.psum pdm   : fp32[128, IT*NC, 512] ; dm, accumulated over the H tiles
.psum pse   : fp32[128, 1]
.sem  sc

.set C = 0
.set SCK = 0

; One block N0 on this core's H slice; XCH: all-reduce d_a and dm with the peer; WCK: this core
; writes the H-independent gradients (grad_affinities, grad_b_gate_up).
.macro bwd_block n0, h0, hs, xch, wck
  .set KT = cdiv(hs, 128)
        moe_expert n0
  ; step 1: per token tile: affinities, grad_out and hidden rows, d_a (partial), dy, dy^T
  .for j in 0 .. NBT
        moe_slots n0, j
        pool.memset go[0:128, 0:hs], 0.0  @wait(sc >= C) @signal(sc)
        nx
        sp.dma q0, go[0:128, 0:hs], grad_out[@vec(ids[0:128, j:j+1]), h0:h0+hs], oob=skip  @wait(sc >= C) @signal(sc)
        nx
        pool.memset xt[0:128, j, 0:hs], 0.0  @wait(sc >= C) @signal(sc)
        nx
        sp.dma q0, xt[0:128, j, 0:hs], hidden[@vec(ids[0:128, j:j+1]), h0:h0+hs], oob=skip  @wait(sc >= C) @signal(sc)
        nx
        sp.dma q0, yk[0:128, 0:hs], down_ckpt[n0, j*128 : j*128+128, h0:h0+hs]  @wait(sc >= C) @signal(sc)
        nx
        dve.tensor_tensor yk[0:128, 0:hs], yk[0:128, 0:hs], go[0:128, 0:hs], op=multiply  @wait(sc >= C) @signal(sc)
        nx
        dve.tensor_reduce dap[0:128, j:j+1], yk[0:128, 0:hs], op=add  @wait(sc >= C) @signal(sc)
        nx
        dve.tensor_scalar dyS[0:128, j, 0:hs], go[0:128, 0:hs], op0=multiply, operand0=av[0:128, j:j+1]  @wait(sc >= C) @signal(sc)
        nx
  .endfor
  .if xch
        sp.send_recv dar[0:128, 0:NBT], dap[0:128, 0:NBT]  @wait(sc >= C) @signal(sc)
        nx
        dve.tensor_tensor dap[0:128, 0:NBT], dap[0:128, 0:NBT], dar[0:128, 0:NBT], op=add  @wait(sc >= C) @signal(sc)
        nx
  .endif
  .if wck
    ; grad_affinities[t*E + e] = d_a (an empty slot's index is negative: skipped)
        dve.copy idf[0:128, 0:NBT], ids[0:128, 0:NBT]  @wait(sc >= C) @signal(sc)
        nx
        dve.tensor_scalar idf[0:128, 0:NBT], idf[0:128, 0:NBT], op0=multiply, operand0=E, op1=add, operand1=esc[0:128, 0:1]  @wait(sc >= C) @signal(sc)
        nx
        dve.copy aidx[0:128, 0:NBT], idf[0:128, 0:NBT]  @wait(sc >= C) @signal(sc)
        nx
    .for j in 0 .. NBT
        sp.dma q0, gaff[@vec(aidx[0:128, j:j+1]), 0:1], dap[0:128, j:j+1], oob=skip  @wait(sc >= C) @signal(sc)
        nx
    .endfor
  .endif
  ; step 2a: replay the SwiGLU from the gate/up checkpoint
  .set W = C
  .for q in 0 .. 2*IT
    .set IW = min(128, I - (q % IT) * 128)
        sp.dma q0, gk[0:IW, q, 0:B], gate_up_ckpt[n0, q / IT, (q % IT)*128 : (q % IT)*128+IW, 0:B]  @wait(sc >= W) @signal(sc)
        nx
  .endfor
  .for q in 0 .. 2*IT
    .set IW = min(128, I - (q % IT) * 128)
    .if CLAMP == 1
      .if q < IT
        .set LO = GATE_LO
        .set HI = GATE_HI
      .else
        .set LO = UP_LO
        .set HI = UP_HI
      .endif
        dve.tensor_scalar gcl[0:IW, q, 0:B], gk[0:IW, q, 0:B], op0=max, operand0=LO, op1=min, operand1=HI  @wait(sc >= C) @signal(sc)
        nx
        dve.tensor_scalar msk[0:IW, q, 0:B], gk[0:IW, q, 0:B], op0=greater, operand0=LO  @wait(sc >= C) @signal(sc)
        nx
        dve.scalar_tensor_tensor msk[0:IW, q, 0:B], gk[0:IW, q, 0:B], op0=less, operand0=HI, op1=multiply, in1=msk[0:IW, q, 0:B]  @wait(sc >= C) @signal(sc)
        nx
    .else
        dve.copy gcl[0:IW, q, 0:B], gk[0:IW, q, 0:B]  @wait(sc >= C) @signal(sc)
        nx
    .endif
  .endfor
  .for it in 0 .. IT
    .set IW = min(128, I - it * 128)
    .if ACT == silu
        act.activation sA[0:IW, it, 0:B], gcl[0:IW, it, 0:B], func=silu  @wait(sc >= C) @signal(sc)
        nx
        act.activation sD[0:IW, it, 0:B], gcl[0:IW, it, 0:B], func=silu_dx  @wait(sc >= C) @signal(sc)
        nx
    .else
        act.activation sA[0:IW, it, 0:B], gcl[0:IW, it, 0:B], func=gelu_apprx_sigmoid  @wait(sc >= C) @signal(sc)
        nx
        act.activation sD[0:IW, it, 0:B], gcl[0:IW, it, 0:B], func=gelu_apprx_sigmoid_dx  @wait(sc >= C) @signal(sc)
        nx
    .endif
        dve.tensor_tensor mT[0:IW, it, 0:B], sA[0:IW, it, 0:B], gcl[0:IW, IT+it, 0:B], op=multiply  @wait(sc >= C) @signal(sc)
        nx
  .endfor
  .set W = C
  .for it in 0 .. IT
    .set IW = min(128, I - it * 128)
    .for j in 0 .. NBT
        sp.dma_transpose q0, mS[0:128, j, it*128 : it*128+IW], mT[0:IW, it, j*128 : j*128+128]  @wait(sc >= W) @signal(sc)
        nx
    .endfor
  .endfor
  ; step 3: grad_w_down[e][:, slice] += m^T dy (sum over the slots); grad_b_down += sum dy
  .for hc in 0 .. hs step 512
    .set HW = min(512, hs - hc)
    .for it in 0 .. IT
      .set IW = min(128, I - it * 128)
      .for j in 0 .. NBT
        .if j == 0
        pe.matmul ps[0:IW, 0:HW], mS[0:128, j, it*128 : it*128+IW], dyS[0:128, j, hc:hc+HW], acc=overwrite  @wait(sc >= C) @signal(sc)
        .else
        pe.matmul ps[0:IW, 0:HW], mS[0:128, j, it*128 : it*128+IW], dyS[0:128, j, hc:hc+HW], acc=accumulate  @wait(sc >= C) @signal(sc)
        .endif
        nx
      .endfor
        dve.copy gwt[0:IW, 0:HW], ps[0:IW, 0:HW]  @wait(sc >= C) @signal(sc)
        nx
        sp.dma_compute q0, grad_w_down[@r5, it*128 : it*128+IW, h0+hc : h0+hc+HW], grad_w_down[@r5, it*128 : it*128+IW, h0+hc : h0+hc+HW], gwt[0:IW, 0:HW]  @wait(sc >= C) @signal(sc)
        nx
    .endfor
    .if BIAS == 1
      .for j in 0 .. NBT
        .if j == 0
        pe.matmul ps[0:1, 0:HW], onec[0:128, 0:1], dyS[0:128, j, hc:hc+HW], acc=overwrite  @wait(sc >= C) @signal(sc)
        .else
        pe.matmul ps[0:1, 0:HW], onec[0:128, 0:1], dyS[0:128, j, hc:hc+HW], acc=accumulate  @wait(sc >= C) @signal(sc)
        .endif
        nx
      .endfor
        dve.copy gwt[0:1, 0:HW], ps[0:1, 0:HW]  @wait(sc >= C) @signal(sc)
        nx
        sp.dma_compute q0, grad_b_down[@r5, h0+hc : h0+hc+HW], grad_b_down[@r5, h0+hc : h0+hc+HW], gwt[0:1, 0:HW]  @wait(sc >= C) @signal(sc)
        nx
    .endif
  .endfor
  ; step 2b: dm = dy @ w_down[e]^T over this core's H rows, one H tile at a time (dy and w_down
  ; transposed by DMA), accumulated in PSUM; then all-reduced. Transposed: [I, B].
  .for k in 0 .. KT
    .set KW = min(128, hs - k * 128)
    .set W = C
    .for j in 0 .. NBT
        sp.dma_transpose q0, dyT[0:KW, j*128 : j*128+128], dyS[0:128, j, k*128 : k*128+KW]  @wait(sc >= W) @signal(sc)
        nx
    .endfor
    .for it in 0 .. IT
      .set IW = min(128, I - it * 128)
        sp.dma_transpose q0, wdT[0:KW, it*128 : it*128+IW], w_down[@r5, it*128 : it*128+IW, h0+k*128 : h0+k*128+KW]  @wait(sc >= W) @signal(sc)
        nx
    .endfor
    .for it in 0 .. IT
      .set IW = min(128, I - it * 128)
      .for bc in 0 .. NC
        .set B0 = bc * 512
        .set BW = min(512, B - B0)
        .if k == 0
        pe.matmul pdm[0:IW, it*NC + bc, 0:BW], wdT[0:KW, it*128 : it*128+IW], dyT[0:KW, B0:B0+BW], acc=overwrite  @wait(sc >= C) @signal(sc)
        .else
        pe.matmul pdm[0:IW, it*NC + bc, 0:BW], wdT[0:KW, it*128 : it*128+IW], dyT[0:KW, B0:B0+BW], acc=accumulate  @wait(sc >= C) @signal(sc)
        .endif
        nx
      .endfor
    .endfor
  .endfor
  .for it in 0 .. IT
    .set IW = min(128, I - it * 128)
    .for bc in 0 .. NC
      .set B0 = bc * 512
      .set BW = min(512, B - B0)
        dve.copy dmT[0:IW, it, B0:B0+BW], pdm[0:IW, it*NC + bc, 0:BW]  @wait(sc >= C) @signal(sc)
        nx
    .endfor
    .if xch
        sp.send_recv dmr[0:IW, it, 0:B], dmT[0:IW, it, 0:B]  @wait(sc >= C) @signal(sc)
        nx
        dve.tensor_tensor dmT[0:IW, it, 0:B], dmT[0:IW, it, 0:B], dmr[0:IW, it, 0:B], op=add  @wait(sc >= C) @signal(sc)
        nx
    .endif
    ; step 2c: the chain rule. du = dm * act(g') (* mask), dg = dm * u' * act'(g') (* mask)
        dve.tensor_tensor tq[0:IW, 0:B], dmT[0:IW, it, 0:B], sA[0:IW, it, 0:B], op=multiply  @wait(sc >= C) @signal(sc)
        nx
    .if CLAMP == 1
        dve.tensor_tensor dguT[0:IW, IT+it, 0:B], tq[0:IW, 0:B], msk[0:IW, IT+it, 0:B], op=multiply  @wait(sc >= C) @signal(sc)
    .else
        dve.copy dguT[0:IW, IT+it, 0:B], tq[0:IW, 0:B]  @wait(sc >= C) @signal(sc)
    .endif
        nx
        dve.tensor_tensor tq[0:IW, 0:B], dmT[0:IW, it, 0:B], gcl[0:IW, IT+it, 0:B], op=multiply  @wait(sc >= C) @signal(sc)
        nx
    .if CLAMP == 1
        dve.tensor_tensor tq[0:IW, 0:B], tq[0:IW, 0:B], sD[0:IW, it, 0:B], op=multiply  @wait(sc >= C) @signal(sc)
        nx
        dve.tensor_tensor dguT[0:IW, it, 0:B], tq[0:IW, 0:B], msk[0:IW, it, 0:B], op=multiply  @wait(sc >= C) @signal(sc)
    .else
        dve.tensor_tensor dguT[0:IW, it, 0:B], tq[0:IW, 0:B], sD[0:IW, it, 0:B], op=multiply  @wait(sc >= C) @signal(sc)
    .endif
        nx
  .endfor
  ; [dg, du] with the slots on partitions; grad_b_gate_up += sum over the slots
  .set W = C
  .for q in 0 .. 2*IT
    .set IW = min(128, I - (q % IT) * 128)
    .set CI = (q / IT) * I + (q % IT) * 128
    .for j in 0 .. NBT
        sp.dma_transpose q0, dguS[0:128, j, CI : CI+IW], dguT[0:IW, q, j*128 : j*128+128]  @wait(sc >= W) @signal(sc)
        nx
    .endfor
  .endfor
  .for q in 0 .. 2*IT
    .set IW = min(128, I - (q % IT) * 128)
    .if BIAS == 1 && wck
        dve.tensor_reduce gbg[0:IW, q:q+1], dguT[0:IW, q, 0:B], op=add  @wait(sc >= C) @signal(sc)
        nx
        sp.dma_compute q0, grad_b_gate_up[@r5, q / IT, (q % IT)*128 : (q % IT)*128+IW], grad_b_gate_up[@r5, q / IT, (q % IT)*128 : (q % IT)*128+IW], gbg[0:IW, q:q+1]  @wait(sc >= C) @signal(sc)
        nx
    .endif
  .endfor
  ; step 5: grad_w_gate_up[e][slice rows] += hidden^T [dg, du]
  .for k in 0 .. KT
    .set KW = min(128, hs - k * 128)
    .for n1 in 0 .. 2*I step 512
      .set NW = min(512, 2*I - n1)
      .for j in 0 .. NBT
        .if j == 0
        pe.matmul ps[0:KW, 0:NW], xt[0:128, j, k*128 : k*128+KW], dguS[0:128, j, n1:n1+NW], acc=overwrite  @wait(sc >= C) @signal(sc)
        .else
        pe.matmul ps[0:KW, 0:NW], xt[0:128, j, k*128 : k*128+KW], dguS[0:128, j, n1:n1+NW], acc=accumulate  @wait(sc >= C) @signal(sc)
        .endif
        nx
      .endfor
        dve.copy gwt[0:KW, 0:NW], ps[0:KW, 0:NW]  @wait(sc >= C) @signal(sc)
        nx
        sp.dma_compute q0, gwgu2[@r5, h0+k*128 : h0+k*128+KW, n1:n1+NW], gwgu2[@r5, h0+k*128 : h0+k*128+KW, n1:n1+NW], gwt[0:KW, 0:NW]  @wait(sc >= C) @signal(sc)
        nx
    .endfor
  .endfor
  ; step 4: grad_hidden[t][slice] += [dg, du] @ w_gate_up[e]^T (contraction over 2I), 512
  ; columns at a time (w_gate_up[e] transposed by DMA for those columns)
  .for hc in 0 .. hs step 512
    .set HW = min(512, hs - hc)
    .set W = C
    .for q in 0 .. 2*IT
      .set IW = min(128, I - (q % IT) * 128)
      .set CI = (q / IT) * I + (q % IT) * 128
      .for k0 in hc .. hc + HW step 128
        .set KW = min(128, hc + HW - k0)
        sp.dma_transpose q0, wguT[0:IW, q, k0-hc : k0-hc+KW], wgu2[@r5, h0+k0 : h0+k0+KW, CI : CI+IW]  @wait(sc >= W) @signal(sc)
        nx
      .endfor
    .endfor
    .for j in 0 .. NBT
      .for q in 0 .. 2*IT
        .set IW = min(128, I - (q % IT) * 128)
        .if q == 0
        pe.matmul ps[0:128, 0:HW], dguT[0:IW, q, j*128 : j*128+128], wguT[0:IW, q, 0:HW], acc=overwrite  @wait(sc >= C) @signal(sc)
        .else
        pe.matmul ps[0:128, 0:HW], dguT[0:IW, q, j*128 : j*128+128], wguT[0:IW, q, 0:HW], acc=accumulate  @wait(sc >= C) @signal(sc)
        .endif
        nx
      .endfor
        dve.copy gwt[0:128, 0:HW], ps[0:128, 0:HW]  @wait(sc >= C) @signal(sc)
        nx
        sp.dma_compute q0, grad_hidden[@vec(ids[0:128, j:j+1]), h0+hc : h0+hc+HW], grad_hidden[@vec(ids[0:128, j:j+1]), h0+hc : h0+hc+HW], gwt[0:128, 0:HW], oob=skip  @wait(sc >= C) @signal(sc)
        nx
    .endfor
  .endfor
.endm

; zero_rows DST, R0, ROWS, C0, COLS: DST[R0 : R0+ROWS, C0 : C0+COLS] = 0 from yk, 128 rows per
; DMA (DST: a 2-D HBM tensor or view); the DMAs wait sc >= W (a group).
.macro zero_rows dst, rb, rows, c0, cols
  .for r0 in 0 .. rows step 128
        sp.dma q0, dst[rb + r0 : rb + r0 + min(128, rows - r0), c0 : c0+cols], yk[0 : min(128, rows - r0), 0:cols]  @wait(sc >= W) @signal(sc)
        nx
  .endfor
.endm

.macro bwd_core h0, hs, xch, wck
  .set C = 0
  .set SCK = 0
        pool.memset ones[0:1, 0:128], 1.0  @wait(sc >= C) @signal(sc)
        nx
        pool.memset onec[0:128, 0:1], 1.0  @wait(sc >= C) @signal(sc)
        nx
        pool.iota iotae[0:128, 0:E], [[1, E]]  @wait(sc >= C) @signal(sc)
        nx
        pool.memset yk, 0.0  @wait(sc >= C) @signal(sc)
        nx
  ; zero every gradient: the H slice of the H-indexed ones, the rest on the WCK core (one group
  ; of independent DMAs: all wait for the same count W)
  .set W = C
        zero_rows grad_hidden, 0, T+1, h0, hs
        zero_rows gwdr, 0, E*I, h0, hs
  .for e in 0 .. E
        zero_rows gwgur, e*H + h0, hs, 0, 2*I
  .endfor
  .if BIAS == 1
        zero_rows grad_b_down, 0, E, h0, hs
  .endif
  .if wck
        zero_rows gaffr, 0, T+1, 0, E
    .if BIAS == 1
        zero_rows gbgu2, 0, E, 0, 2*I
    .endif
  .endif
  .for n in 0 .. N
        bwd_block n, h0, hs, xch, wck
  .endfor
.endm

        moe_sections pe
        moe_sections act
        moe_sections dve
        moe_sections pool
        moe_sections sp
        bwd_core 0, H, 0, 1
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
        bwd_core 0, H/2, 1, 1
        pe.br done
        act.br done
        dve.br done
        pool.br done
        sp.br done
core1:
        bwd_core H/2, H/2, 1, 0
done:
