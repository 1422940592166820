#!/bin/sh
# Records the `apps` experiment's programs (experiments/apps.toml, `vmlab reproduce apps`):
# real data-centre applications, each for a fixed amount of work with the driver people use
# for it, over Unix sockets only, with `vmlab record --sample`. Writes TRACES_DIR/NAME.vmtrace
# per application and TRACES_DIR/record.log (a line per application: name, recording wall
# seconds, trace size, references, instructions, data touched, or why it failed). An application whose trace exists is
# skipped (FORCE=1 records it again); ONLY="redis sqlite" records only those.
#
# usage: apps/record.sh [TRACES_DIR]   (default traces/apps; about 30 minutes on 2 cores)
#
# The sample, 10M:1M:1M: of every 10 M references of each thread, the last 1 M in full after a
# summary of the 1 M before them (docs/model.md, "Sampled recordings"). A tenth in windows is
# the fraction apps/sampling/validate.sh validated against full recordings (cycles per
# reference within 0.5%); the 10 M period gives each recording of 10^9 references or more at
# least 100 windows on its busy threads, enough for a tight interval, while the trace and its
# replay hold about a tenth of the references: a replay takes 10 s to a minute or two per
# scheme here, so the experiment's 16 runs per application fit in minutes, not hours.
#
# Sizes: each application's data are 150 to 530 MiB, far beyond the TLBs' reach with 4 KiB
# pages (the STLB's 1,536 entries cover 6 MiB). Measured (docs/model.md, "Data-centre
# applications"): 1.0x10^9 (JVM, BFS) to 9.6x10^9 (RocksDB) references; RocksDB and SQLite
# are past the 10^9 aimed at, and dominate recording and replay time.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${1:-traces/apps}
sample=${SAMPLE:-10M:1M:1M}
if [ -n "${VMLAB:-}" ]; then
    vmlab=$VMLAB
elif [ -x "$root/target/release/vmlab" ]; then
    vmlab=$root/target/release/vmlab
else
    vmlab=vmlab
fi
only=${ONLY:-redis memcached rocksdb sqlite gap-bfs xsbench jvm}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/vmlab-apps.XXXXXX)
trap 'rm -rf "$work"' EXIT
log=$out/record.log

# What is missing, from Debian (OpenJDK is expected: default-jdk-headless otherwise).
need=""
command -v qemu-x86_64 >/dev/null || need="$need qemu-user"
command -v cc >/dev/null || need="$need gcc"
command -v redis-server >/dev/null || need="$need redis-server"
command -v redis-benchmark >/dev/null || need="$need redis-tools"
command -v memcached >/dev/null || need="$need memcached"
command -v db_bench >/dev/null || need="$need rocksdb-tools"
command -v sqlite3 >/dev/null || need="$need sqlite3"
command -v javac >/dev/null || need="$need default-jdk-headless"
if [ -n "$need" ]; then
    echo "installing:$need"
    apt-get update -qq && apt-get install -y -qq $need >/dev/null
fi

now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.0f}')" "$1" "$(now)"; }

# The log line of a finished recording: references and trace size from `vmlab trace info`.
summarise() {
    name=$1 seconds=$2
    "$vmlab" trace info --json "$out/$name.vmtrace" >"$work/$name.info.json"
    python3 - "$name" "$seconds" "$out/$name.vmtrace" "$work/$name.info.json" >>"$log" <<'PY'
import json, os, sys
name, seconds, trace, info = sys.argv[1:]
s = json.load(open(info))["summary"]
t = s["totals"]
refs = t["events"]["refs"] + t["unrecorded_refs"]
print(f"{name}\t{seconds} s\t{os.path.getsize(trace) / 2**20:.0f} MiB trace\t{refs / 1e6:.0f} M references\t"
      f"{t['instructions'] / 1e6:.0f} M instructions\t{s['data_pages'] * 4 / 1024:.0f} MiB data touched\t"
      f"{t['processes']} processes, {t['threads']} threads, {t['events']['syscalls']} system calls\t{s['trailer']['end']}")
PY
    tail -n 1 "$log"
}

skip() {
    case " $only " in *" $1 "*) ;; *) return 0 ;; esac
    [ -z "${FORCE:-}" ] && [ -s "$out/$1.vmtrace" ] && { echo "$1: $out/$1.vmtrace exists (FORCE=1 records it again)"; return 0; }
    return 1
}

# A program that runs to completion.
record() {
    name=$1
    shift
    skip "$name" && return 0
    echo "$name: recording ($*)"
    t=$(now)
    if "$vmlab" record --sample "$sample" -o "$out/$name.vmtrace" -- "$@" >"$work/$name.out" 2>&1; then
        summarise "$name" "$(elapsed "$t")"
    else
        printf '%s\tfailed after %s s: %s\n' "$name" "$(elapsed "$t")" "$(tail -n 1 "$work/$name.out")" | tee -a "$log"
    fi
}

# A server: recorded while DRIVER (a command outside the recording) loads it, then stopped
# by STOP (another command) so that it exits and the recording completes. READY is a command
# that succeeds once the server answers.
record_server() {
    name=$1 ready=$2 driver=$3 stop=$4
    shift 4
    skip "$name" && return 0
    echo "$name: recording ($*), driven by: $driver"
    t=$(now)
    "$vmlab" record --sample "$sample" -o "$out/$name.vmtrace" -- "$@" >"$work/$name.out" 2>&1 &
    pid=$!
    tries=0
    until sh -c "$ready" >/dev/null 2>&1; do
        tries=$((tries + 1))
        if [ $tries -gt 600 ] || ! kill -0 $pid 2>/dev/null; then
            kill -INT $pid 2>/dev/null || true
            wait $pid || true
            printf '%s\tfailed: the server did not come up: %s\n' "$name" "$(tail -n 1 "$work/$name.out")" | tee -a "$log"
            return 0
        fi
        sleep 0.5
    done
    status=0
    sh -c "$driver" >"$work/$name.driver" 2>&1 || status=$?
    tr '\r' '\n' <"$work/$name.driver" | tail -n 2
    sh -c "$stop" >/dev/null 2>&1 || true
    wait $pid || status=$?
    if [ $status -eq 0 ]; then
        summarise "$name" "$(elapsed "$t")"
    else
        printf '%s\tfailed (status %s) after %s s: %s\n' "$name" $status "$(elapsed "$t")" "$(tail -n 1 "$work/$name.driver" "$work/$name.out" | tail -n 1)" | tee -a "$log"
    fi
}

echo "$(date -u +%FT%TZ) apps/record.sh, sample $sample, $(lscpu | sed -n 's/^Model name: *//p')" >>"$log"

# Redis 7: 1 M keys of 256 bytes (-r 1000000 -d 256; 1 M random SETs leave about 630 K keys,
# ~300 MiB of data and dictionary), loaded 32 requests per round trip, then 400 K requests
# of redis-benchmark's GET/SET mix (one connection each of 4 clients, 4 pipelined).
sock=$work/redis.sock
record_server redis \
    "redis-cli -s $sock ping | grep -q PONG" \
    "redis-benchmark -s $sock -c 4 -P 32 -n 1000000 -r 1000000 -d 256 -t set -q && redis-benchmark -s $sock -c 4 -P 4 -n 200000 -r 1000000 -d 256 -t get,set -q" \
    "redis-cli -s $sock shutdown nosave" \
    redis-server --port 0 --unixsocket "$sock" --save '' --appendonly no

# memcached 1.6: 2 worker threads, 1 GiB of cache; apps/memcached/mcload.c loads 500 K keys
# of 512 bytes (~330 MiB of slabs) in a random order, then 500 K requests at random keys,
# ten gets per set (memtier_benchmark's default ratio), 16 pipelined. `shutdown` (-A) stops it.
cc -O2 -o "$work/mcload" "$here/memcached/mcload.c"
msock=$work/memcached.sock
record_server memcached \
    "test -S $msock && python3 -c \"import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect('$msock'); s.sendall(b'version\\r\\n'); sys.exit(0 if s.recv(64).startswith(b'VERSION') else 1)\"" \
    "$work/mcload $msock 500000 512 500000 16 10" \
    "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('$msock'); s.sendall(b'shutdown\\r\\n'); s.recv(64)\"" \
    memcached -u root -A -s "$msock" -m 1024 -t 2

# RocksDB (Debian's db_bench): fillrandom of 400 K keys with 512-byte values, no
# compression (~210 MiB of SST files and memtables), then 150 K readrandom gets through a
# 1 GiB block cache, in one run (the DB's files live in /tmp; their pages are read by pread).
record rocksdb db_bench --benchmarks=fillrandom,readrandom --num=400000 --reads=150000 \
    --value_size=512 --key_size=16 --compression_type=none --cache_size=1073741824 \
    --db="$work/rocksdb" --threads=1 --histogram=0 --statistics=0

# SQLite 3, an in-memory database: a table of 600 K rows of 200-byte blobs inserted at keys
# in a scrambled order (every insert lands in a random leaf of the B-tree; ~200 MiB of pages),
# then 300 K point selects at random keys.
cat >"$work/sqlite.sql" <<'SQL'
PRAGMA cache_size = -2000000;
CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 600000)
INSERT INTO t SELECT (x * 2654435761) % 4294967291, randomblob(200) FROM c;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000)
SELECT count(*), sum(length((SELECT v FROM t WHERE k = ((abs(random()) % 600000 + 1) * 2654435761) % 4294967291))) FROM c;
SQL
record sqlite sqlite3 :memory: ".read $work/sqlite.sql"

# GAP-style direction-optimizing BFS (apps/gap/bfs.c) on a Kronecker graph of 2^20 vertices
# and 16 M edges (~270 MiB: edge list, CSR of both directions, parents), 4 trials.
cc -O2 -o "$work/bfs" "$here/gap/bfs.c"
record gap-bfs "$work/bfs" 20 16 4

# XSBench-style lookups (apps/sampling/xsbench.c): 68 nuclides x 60,000 grid points
# (~190 MiB of grids), 100 K lookups.
cc -O2 -o "$work/xsbench" "$here/sampling/xsbench.c"
record xsbench "$work/xsbench" 68 60000 100000

# The JVM (OpenJDK 17): apps/jvm/Churn.java, a HashMap of 1 M Longs to 256-byte arrays (~350
# MiB live) and 1 M random operations, a put (new array, old one garbage) per nine gets, on a
# 1 GiB heap with the parallel collector. It records (958 M references, 16 threads), but its
# replay stops early in start-up with a store outside any recorded mapping, so
# experiments/apps.toml leaves it out until that is fixed (docs/model.md).
mkdir -p "$work/jvm"
javac -d "$work/jvm" "$here/jvm/Churn.java"
record jvm java -Xms1g -Xmx1g -XX:+UseParallelGC -XX:ParallelGCThreads=2 -XX:-UsePerfData \
    -cp "$work/jvm" Churn 1000000 256 1000000

echo "done: $log"
