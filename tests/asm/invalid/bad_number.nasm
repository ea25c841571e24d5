.equ X = 12abc ; CHECK: :[[@LINE]]:10: error: invalid number '12abc'
