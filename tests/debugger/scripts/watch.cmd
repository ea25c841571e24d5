watch carry[0:2, :]
rwatch ones[0:1, 0:1]
continue
continue
delete 2
continue
info breakpoints
watch y[0:2, 2046:2050]
continue
continue
