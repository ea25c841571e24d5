.equ X = 4 $ 2 ; CHECK: :[[@LINE]]:12: error: unexpected character '$'
