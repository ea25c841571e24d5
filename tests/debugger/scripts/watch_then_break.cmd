watch carry[0:2, :]
break 45
continue
continue
continue
continue
info breakpoints
