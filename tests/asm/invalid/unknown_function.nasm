.equ X = cdvi(10, 3) ; CHECK: :[[@LINE]]:10: error: unknown function 'cdvi'; did you mean 'cdiv'?
