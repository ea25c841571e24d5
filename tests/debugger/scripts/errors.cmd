frobnicate
break
break 1000
break nosuch
break dve:999
break 45 if foo > 1
print nosuch
print data[0:200, :]
print data[0:1
print data[5]
x/16 sram:0:0
x/16 sbuf:200:0
set var dve.r99 = 1
set check-races maybe
info nothing
step bogus
reverse-step
delete 9
until
finish
print/q data
print dve.r-100000000
set var dve.r-1 = 7
break dve:0 if dve.r-100000000 == 0
set var dve.r0 = 99999999999999999999
set var dve.r0 = 1x
set var dve.r0 = 4294967296
set var dve.r0 = -2147483648
info registers dve
step 99999999999999999999
step q99999999999
x/16 hbm:-1
info timeline -5
break dve:99999999999999999999
list 4294967296
