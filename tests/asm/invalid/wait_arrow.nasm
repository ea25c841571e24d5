.sem s
  sp.nop @wait(s => 1) ; CHECK: :[[@LINE]]:18: error: expected ')' or ',', found '=>'; a wait compares with '>=' or '==': did you mean '>='?
