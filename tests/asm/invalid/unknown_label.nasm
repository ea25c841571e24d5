loop:
  sp.br lop ; CHECK: :[[@LINE]]:9: error: undefined label 'lop'; did you mean 'loop'?
