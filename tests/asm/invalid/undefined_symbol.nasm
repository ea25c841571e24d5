.equ COLS = 64
.equ X = COLZ + 1 ; CHECK: :[[@LINE]]:10: error: undefined symbol 'COLZ'; did you mean 'COLS'?
