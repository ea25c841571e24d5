; RUN: --target trn1
.sbuf a : fp32[128, 64]
.sbuf b : fp32[128, 64]
.sbuf t : fp32[128, 1]
  act.activation a, b, func=exp, bias=1.0 ; CHECK: :[[@LINE]]:39: error: an immediate 'bias' of act.activation is not available on trn1 (available on: trn2, trn3); use a [P, 1] tile
  act.activation a, b, func=exp, bias=t
  act.activation a, b, func=exp, bias=0.0
