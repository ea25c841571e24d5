.equ X = 1 << 64 ; CHECK: :[[@LINE]]:15: error: shift count 64 is outside [0, 63]
