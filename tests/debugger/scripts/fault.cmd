run
info registers dve
print t[0:2, 0, :]
reverse-step
set var dve.r3 = 2
continue
print t[0:2, 0:3, 0:3]
info timeline 3
