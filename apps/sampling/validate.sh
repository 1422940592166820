#!/bin/sh
# Sampled recordings against full ones: records each program in full and with --sample,
# replays both under native and nested paging, and prints per scheme the page faults and table
# pages (equal when the sampled recording keeps page tables exact), cycles per reference (full,
# sampled with its interval) and the difference, with recording and replay wall times and trace
# sizes. docs/model.md, "Sampled recordings", has the results.
#
# usage: apps/sampling/validate.sh [OUT_DIR] [SAMPLE]   (SAMPLE default 1M:100K:1M)
set -eu
export PYTHONHASHSEED=0 # Python randomizes string hashing per run: both recordings must run alike
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/vmlab-sampling}
sample=${2:-1M:100K:1M}
vmlab=${VMLAB:-vmlab}
mkdir -p "$out"
cc -O2 -o "$out/xsbench" "$here/xsbench.c"
cc -O2 -o "$out/gups-churn" "$here/gups-churn.c"

seconds() { python3 -c 'import sys, time; t = time.monotonic(); import subprocess; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(f"{time.monotonic() - t:.1f}")' "$@"; }

run() {
    name=$1; shift
    full_rec=$(seconds "$vmlab" record -o "$out/$name.full.vmtrace" -- "$@")
    samp_rec=$(seconds "$vmlab" record --sample "$sample" -o "$out/$name.sampled.vmtrace" -- "$@")
    for kind in full sampled; do
        t=$(seconds sh -c "\"$vmlab\" run --json -w trace:file=$out/$name.$kind.vmtrace -p native,nested > $out/$name.$kind.json")
        eval "${kind}_replay=\$t"
    done
    python3 - "$out" "$name" "$full_rec" "$samp_rec" "$full_replay" "$sampled_replay" <<'PY'
import json, os, sys
out, name, full_rec, samp_rec, full_replay, samp_replay = sys.argv[1:]
full = json.load(open(f"{out}/{name}.full.json"))["runs"]
samp = json.load(open(f"{out}/{name}.sampled.json"))["runs"]
size = lambda k: os.path.getsize(f"{out}/{name}.{k}.vmtrace") / 2**20
print(f"{name}: {full[0]['accesses_total']} references; recording {full_rec} s full, {samp_rec} s sampled; "
      f"trace {size('full'):.1f} MiB full, {size('sampled'):.1f} MiB sampled; replay (native+nested) {full_replay} s full, {samp_replay} s sampled")
for f, s in zip(full, samp):
    ci = s["sample"]["cycles_per_access_ci"] or 0.0
    diff = 100 * (s["cycles"] / f["cycles"] - 1)
    print(f"  {f['paging']:7} faults {f['page_faults']}/{s['page_faults']} table pages {f['page_table_pages']}/{s['page_table_pages']} "
          f"cycles/ref {f['cycles_per_access']:.3f} full, {s['cycles_per_access']:.3f} ± {ci:.3f} sampled ({diff:+.2f}%), "
          f"{s['sample']['windows']} windows, {s['accesses_simulated']} measured")
PY
}

run xsbench "$out/xsbench" 68 4000 200000

run dict python3 "$here/dict.py" 100000 300000
run gups-churn "$out/gups-churn" 64 6000000
