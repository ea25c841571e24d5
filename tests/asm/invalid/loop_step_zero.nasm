.for i in 0 .. 4 step 0 ; CHECK: :[[@LINE]]:23: error: loop step cannot be zero
  sp.nop
.endfor
