; RUN: -D ROWZ=4
; CHECK: error: unknown -D name 'ROWZ'; did you mean 'ROWS'? (the kernel's parameters: ROWS)
.param ROWS = 128
