.sbuf a : fp32[128, 16]
.for f in 0 .. 5
  .if f == 3
    dve.memset a[:, f*8 : f*8 + 8], 0.0 ; CHECK: :[[@LINE]]:21: error: slice 24:32 is outside the dimension of size 16
    ; CHECK: note: in iteration f=3 of .for at for_iteration_note.nasm:2:1
  .endif
.endfor
