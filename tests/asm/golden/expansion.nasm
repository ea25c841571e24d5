; .for / .macro / .if expansion: the listing below unrolls to 7 dve and 2 pool instructions.
.kernel expansion
.param N = 3
.param DT = bf16
.sbuf t : DT[128, 64]
.sbuf o : fp32[128, 64]

.macro scale dst, src, k=2.0, eng=dve
  .if eng == dve
    dve.tensor_scalar dst, src, op0=mul, operand0=k
  .else
    pool.tensor_scalar dst, src, op0=mul, operand0=k
  .endif
.endm

.for i in 0 .. N
  scale o[:, i*16 : i*16 + 16], t[:, i*16 : i*16 + 16], k=i + 0.5
.endfor
.for i in 3 .. 0 step -2
  scale o[:, i*8 : i*8 + 8], t[:, 0:8], eng=pool
.endfor
.if DT == bf16 && N > 2
  dve.memset o[0:1, :], -inf
.elif N > 1
  dve.memset o, 1.0
.endif
.set acc = 0
.for j in 0 .. 4
  .set acc = acc + j
.endfor
  dve.memset t[:, acc : acc + 1], acc     ; acc = 6
  pool.iota t[:, 0:4], [[1, 4]], offset=cdiv(100, 7), pmul=align_up(5, 4)
