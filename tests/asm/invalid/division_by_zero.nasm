.equ N = 0
.equ X = 64 / N ; CHECK: :[[@LINE]]:15: error: division by zero
