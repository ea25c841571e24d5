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
