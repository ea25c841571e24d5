run
info engines
print t[0:2, 0:4]
step
restart
step 3
quit
