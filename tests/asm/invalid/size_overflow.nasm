; Issue 11: a size or address past 64 bits is an error naming the tensor, never a wrapped
; placement (the first made the next tensor start at 0xffffffffffffffc0, the second had 0 bytes).
.hbm w : uint8[64, 536870911, 536870913] input ; CHECK: :[[@LINE]]:6: error: hbm tensor 'w' of 18446744073709551552 bytes at address 0x0 ends past the 256 TiB address space
.hbm x : fp32[1 << 40, 1 << 40] input ; CHECK: :[[@LINE]]:6: error: tensor 'x': its size in bytes overflows 64 bits (or a dimension is < 1)
.hbm p : fp32[4] @ 0x7fffffffffffffff ; CHECK: :[[@LINE]]:6: error: hbm tensor 'p' of 16 bytes at address 0x7fffffffffffffff ends past the 256 TiB address space
.hbm ok : fp32[4] output
.sbuf s : fp32[128, 4] @ [0, 0x7fffffffffffffff] ; CHECK: :[[@LINE]]:7: error: SBUF tensor 's' pinned at 9223372036854775807 ends at byte 9223372036854775823, past the 212984 bytes per partition
.sbuf t : fp32[128, 1 << 40, 1 << 40] ; CHECK: :[[@LINE]]:7: error: SBUF tensor 't': its bytes per partition overflow 64 bits
.view v = ok as fp32[1 << 40, 1 << 40] ; CHECK: :[[@LINE]]:1: error: view 'v': its size in bytes overflows 64 bits
