"""A Python dict workload for validating sampled recordings (apps/sampling/validate.sh):
build a dict of N string keys, then look up M keys in a scrambled order and delete and
re-insert a tenth of them (the interpreter's allocator grows, frees and reuses memory)."""
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
m = int(sys.argv[2]) if len(sys.argv) > 2 else 300000
d = {}
for i in range(n):
    d["key%d" % i] = i
total = 0
for i in range(m):
    k = "key%d" % ((i * 7919) % n)
    total += d[k]
    if i % 10 == 0:
        del d[k]
        d[k] = i
print(total)
