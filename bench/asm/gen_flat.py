# Writes bench/asm's flat listing (asm_bench.cpp flat_source) with N instructions, for
# profiling one run of `nisa asm` (e.g. under valgrind --tool=callgrind).
# Usage: python3 bench/asm/gen_flat.py 3000 > flat3k.nasm
import sys
n=int(sys.argv[1])
out=[""".kernel bench
.hbm  x : bf16[4096, 4096] input
.hbm  y : bf16[4096, 4096] output
.sbuf a : fp32[128, 2048]
.sbuf b : fp32[128, 2048]
.sbuf c : bf16[128, 2048]
.sbuf s : fp32[128, 1]
.sem  s0, s1, s2
"""]
for i in range(n):
    k=i%4; o=(i*64)%1536
    if k==0: out.append(f"  dve.tensor_tensor a[:, {o}:{o+512}], b[:, 0:512], a[:, 512:1024], op=add  @wait(s0 >= {i//4})\n")
    elif k==1: out.append(f"  sp.dma q{i%16}, c[0:64, 0:128], x[{(i*64)%4000}:{(i*64)%4000+64}, 256:384]  @signal(s1)\n")
    elif k==2: out.append(f"  act.activation a[:, 0:256], b[:, {o}:{o+256}], func=exp, scale=0.5, bias=s  ; softmax numerator\n")
    else: out.append("  dve.tensor_scalar c[:, 0:1024], a[:, 0:1024], op0=mul, operand0=2.0, op1=add, operand1=s @signal(s2 += 2)\n")
sys.stdout.write("".join(out))
