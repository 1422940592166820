# The vmlab guest has no one at the console: its login shell marks the end of the boot (the
# trace's BootEnd record), runs the benchmarks and powers the machine off.
vmlab-mark boot
vmlab-bench
poweroff
