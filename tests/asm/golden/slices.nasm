; Slice lowering: partitions, strides, points, negative steps, dim merging, HBM row dims.
.kernel slices
.hbm  x  : bf16[64, 32, 16] input
.sbuf s  : fp32[128, 64]
.sbuf s5 : fp32[16, 2, 2, 2, 2, 2]
.sbuf d  : bf16[64, 32, 16]
  dve.memset s[0:128, 0:64:2], 1.0          ; stride 2, 32 elements
  dve.memset s[32:48, 63], 2.0              ; point index: one element, offset 252
  dve.memset s[:, 60:0:-4], 3.0             ; negative step
  dve.memset s[96, ::8], 4.0                ; single partition, every 8th
  dve.memset s5[:, :, :, :, :, :], 5.0      ; five contiguous free dims merge into four
  dve.memset s5[:, 1, :, 0, :, 1], 6.0      ; points drop dims
  sp.dma q1, d[0:64, 0:32, 0:16], x         ; whole HBM tensor: rows of 512 elements
  sp.dma q2, d[0:8, 0, :], x[8:16, 4, :]    ; HBM rows 8..15 of dim 0, offset from the point
  sp.dma q3, d[0:16, 0, 0:4], x[0, 0:16, 0:16:4]  ; first *sliced* dim becomes the row dim
