break 45
run
print carry[0:3, :]
print ones[0:2, 0:5]
print data[0:4, 0:6]
print data /x
print data[0:2, 0:3] /d
print/x ones[0, 0:4]
print x[0:3, 2495:2500]
print dve.r0
print s_in
x/16 sbuf:0:0
x/8 hbm:0x0
x/32 sbuf:1:0x2040
info sems
info tensors
info registers
set var dve.r3 = 5
set var pool.r63 = -2
info registers
info registers dve
print dve.r3
dump y /dev/null
