help
help step
help info
help nosuch
