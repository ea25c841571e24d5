run
step
continue
restart
