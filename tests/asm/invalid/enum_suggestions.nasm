; Every enumerated name the assembler reads gets the same did-you-mean: each enum type as an
; operand value (ActFunc by words, case or prefix as well as by edit distance; none when two
; names fit equally), the memory space and dtype of ap(...), the engine of a label.
.sbuf a : fp32[128, 16]
.sbuf r : fp32[128, 1]
.psum p : fp32[128, 16]
.hbm h : fp32[128, 16]
  act.activation a, a, func=gelu_tanh ; CHECK: :[[@LINE]]:29: error: unknown ActFunc 'gelu_tanh' for operand 'func'; did you mean 'gelu_apprx_tanh'?
  act.activation a, a, func=GELU ; CHECK: :[[@LINE]]:29: error: unknown ActFunc 'GELU' for operand 'func'; did you mean 'gelu'?
  act.activation a, a, func=gelu_sigmoid_dx ; CHECK: :[[@LINE]]:29: error: unknown ActFunc 'gelu_sigmoid_dx' for operand 'func'; did you mean 'gelu_apprx_sigmoid_dx'?
  act.activation a, a, func=gelu_apprx ; CHECK: :[[@LINE]]:29: error: unknown ActFunc 'gelu_apprx' for operand 'func'
  act.activation a, a, func=recip ; CHECK: :[[@LINE]]:29: error: unknown ActFunc 'recip' for operand 'func'; did you mean 'reciprocal'?
  act.activation a, a, func=exp, reduce_cmd=rest ; CHECK: :[[@LINE]]:45: error: unknown ReduceCmd 'rest' for operand 'reduce_cmd'; did you mean 'reset'?
  dve.tensor_scalar a, a, op0=mult, operand0=1.0 ; CHECK: :[[@LINE]]:31: error: unknown AluOp 'mult' for operand 'op0'; did you mean 'mul'?
  dve.tensor_reduce r, a, op=bitwise_ro ; CHECK: :[[@LINE]]:30: error: unknown AluOp 'bitwise_ro' for operand 'op'; did you mean 'bitwise_or'?
  pe.matmul p, a, a, acc=accumulte ; CHECK: :[[@LINE]]:26: error: unknown AccMode 'accumulte' for operand 'acc'; did you mean 'accumulate'?
  sp.sysreg r1, which=rank ; CHECK: :[[@LINE]]:23: error: unknown SysReg 'rank' for operand 'which'; did you mean 'rank_id'?
  sp.dma q0, h, a, oob=skp ; CHECK: :[[@LINE]]:24: error: unknown OobMode 'skp' for operand 'oob'; did you mean 'skip'?
  dve.memset ap(sbfu, fp32, 0, 128, 0, [[1, 16]]), 0.0 ; CHECK: :[[@LINE]]:17: error: unknown memory space 'sbfu'; did you mean 'sbuf'?
  dve.memset ap(sbuf, fp33, 0, 128, 0, [[1, 16]]), 0.0 ; CHECK: :[[@LINE]]:23: error: unknown dtype 'fp33'; did you mean 'fp32'?
dev.top: ; CHECK: :[[@LINE]]:1: error: unknown engine 'dev' in label 'dev.top'; did you mean 'dve'?
  dve.nop
