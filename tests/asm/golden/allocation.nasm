; Allocation: SBUF 64-byte aligned per partition, PSUM within 2 KiB banks, HBM per rank,
; pinned addresses kept; the disassembly shows every address.
.kernel allocation
.target trn1
.hbm  in0  : fp32[1000, 3] input
.hbm  in1  : bf16[17] input
.hbm  out  : fp32[8, 8] output @ 0x100000
.sbuf a    : fp32[128, 3]            ; 12 bytes -> next at 64
.sbuf b    : bf16[64, 1000]          ; 2000 bytes at 64
.sbuf pin  : uint8[128, 64] @ 0x40   ; overlaps b on purpose (pinned)
.sbuf c    : int32[128, 1]           ; after b and pin: 2112 -> 2112
.psum p0   : fp32[128, 100]          ; 400 bytes at 0
.psum p1   : fp32[128, 420]          ; 1680 bytes at 448 would straddle bank 0 -> bank 1 (2048)
.psum p2   : fp32[128, 1024]         ; two whole banks, bank aligned -> 4096
.psum p3   : fp32[128, 1]            ; after p2 -> 8192
  dve.memset a, 0.0
  dve.memset b, 0.0
  dve.memset c, 0.0
  dve.memset p3, 0.0
  sp.dma q0, a, in0[0:128, :]
