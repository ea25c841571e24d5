break 45
run
step 5
info sems
reverse-step 5
info sems
reverse-step 2
continue
continue
reverse-continue
reverse-continue
reverse-step
