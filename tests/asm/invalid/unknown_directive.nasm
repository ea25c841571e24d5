.fro i in 0 .. 4 ; CHECK: :[[@LINE]]:1: error: unknown directive '.fro'; did you mean '.for'?
