step
step 3
step dve
step q0
where
list
disas
disas sp
info engines
info queues
info timeline 5
restart
tbreak 45
continue
next
next
where
finish
until 47
step sp 2
continue
step
