.equ X = 0x1G ; CHECK: :[[@LINE]]:10: error: invalid number '0x1G'
