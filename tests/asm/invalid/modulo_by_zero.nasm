.equ X = 7 % (3 - 3) ; CHECK: :[[@LINE]]:14: error: division by zero
