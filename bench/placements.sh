#!/usr/bin/env bash
# Host-speed comparisons that do not hang on where the linker happens to put the code.
#
# On some hosts the measured phase's speed moves by 10-15% when the simulator's code shifts
# by a few hundred bytes, with the same instructions (docs/model.md, "Speed of the
# simulator"). Any change that adds a constant string or a function before the hot code
# shifts it, so a side-by-side of two builds compares two placements as much as two codes.
# This script builds each revision once, keeps its objects, and links them again with the
# code section (.text) started at several offsets across a 4 KiB page; `run` then measures
# every placement of every revision, alternated, each binary run from the same path in the
# same environment (whose size moves the stack too). Compare the medians over placements,
# and only runs whose threads' round trips agree: each threaded figure carries the one
# `vmlab bench` probed before it, and on a VM it moves with where the host runs the vCPUs.
# Results go to DIR/results.txt, a line per run (build, placement, figure=value...).
#
#   bench/placements.sh build [-n PLACEMENTS] [-o DIR] REV...
#   bench/placements.sh run [-o DIR] [-r ROUNDS] -- BENCH_ARGS...
#
# Example (a change against its parent, both schemes, best of 5 per run):
#   bench/placements.sh build HEAD~1 HEAD
#   bench/placements.sh run -- -p native,nested -n 5000000 -r 5
set -euo pipefail

usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
die() { echo "placements.sh: $*" >&2; exit 2; }

out=${TMPDIR:-/tmp}/vmlab-placements
placements=8
rounds=1
repo=$(cd "$(dirname "$0")/.." && pwd)

# The code section's start for placement K: the same page, K steps of 576 bytes (a multiple
# of the 64-byte line, so functions keep their alignment within lines) across it.
text_start() { printf '0x%x' $((0x100000 + $1 * 0x240)); }

build() {
    while getopts "n:o:" opt; do
        case $opt in
            n) placements=$OPTARG ;;
            o) out=$OPTARG ;;
            *) usage ;;
        esac
    done
    shift $((OPTIND - 1))
    [ $# -gt 0 ] || usage
    [[ $placements =~ ^[1-8]$ ]] || die "-n takes 1 to 8 placements (8 steps of 576 bytes span a page)"
    mkdir -p "$out"
    for rev in "$@"; do
        local sha tree target args
        sha=$(git -C "$repo" rev-parse --short "$rev^{commit}" 2>/dev/null) ||
            die "no such revision: $rev"
        tree=$out/src-$sha
        target=$out/target-$sha
        [ -d "$tree" ] || git -C "$repo" worktree add --detach "$tree" "$sha" >/dev/null
        echo "building $rev ($sha) once, keeping its objects" >&2
        touch "$tree/crates/vmlab-cli/src/main.rs" # so that rustc prints the link line
        args=$out/link-$sha.txt
        (cd "$tree" && CARGO_TARGET_DIR=$target cargo rustc --release --locked -q \
            -p vmlab-cli --bin vmlab -- -C save-temps --print link-args >"$args")
        # The linker command as rustc ran it, its output renamed, once per placement.
        local cmd
        cmd=$(sed -E 's/"-o" "[^"]*"/"-o" "$bin"/' "$args")
        for ((k = 0; k < placements; k++)); do
            local bin=$out/vmlab-$sha-p$k start
            start=$(text_start "$k")
            eval "$cmd \"-Wl,-z,separate-code\" \"-Wl,--section-start=.text=$start\""
            echo "$bin: .text at $start" >&2
        done
    done
}

run() {
    while getopts "o:r:" opt; do
        case $opt in
            o) out=$OPTARG ;;
            r) rounds=$OPTARG ;;
            *) usage ;;
        esac
    done
    shift $((OPTIND - 1))
    [ "${1:-}" = "--" ] && shift
    local bins=("$out"/vmlab-*-p*)
    [ -e "${bins[0]}" ] || die "no binaries in $out: run 'build' first"
    # Placement by placement, each build in turn, so that a change in the host's state
    # between runs falls on every build alike.
    local order=() k bin
    for ((k = 0; k < 8; k++)); do
        for bin in "${bins[@]}"; do [[ $bin == *-p$k ]] && order+=("$bin"); done
    done
    local stage=$out/run
    mkdir -p "$stage"
    lscpu | grep -E '^(Model name|CPU family|Model|CPU\(s\)):' >&2
    # One line per run: build, placement, then each scheme's accesses per second (millions)
    # and, threaded, the threads' round trip before its fastest run: compare builds only
    # over runs whose round trips agree (see `vmlab bench --help`).
    for ((round = 1; round <= rounds; round++)); do
        for bin in "${order[@]}"; do
            cp "$bin" "$stage/vmlab"
            local name=${bin##*/vmlab-} figures
            figures=$(cd "$stage" && env -i PATH=/usr/bin:/bin ./vmlab bench "$@" 2>/dev/null |
                awk '/M simulated accesses/ { printf " %s=%s", $1, $2 }
                     /thread round trip/ { match($0, /round trip [0-9]+/)
                                           printf " %s_round_trip_ns=%s", $1, substr($0, RSTART + 11, RLENGTH - 11) }')
            echo "${name%-p*} ${name##*-}$figures"
        done
    done | tee "$out/results.txt"
    # The median over placements (and rounds) of each build's figure, per scheme.
    local key
    awk '{ for (i = 3; i <= NF; i++) { split($i, kv, "="); print $1, kv[1], kv[2] } }' \
        "$out/results.txt" | sort -k1,1 -k2,2 -k3,3n >"$out/sorted.txt"
    for key in $(awk '{ print $1 "/" $2 }' "$out/sorted.txt" | uniq); do
        awk -v key="$key" '$1 "/" $2 == key { xs[++n] = $3 }
            END { m = (n % 2) ? xs[(n + 1) / 2] : (xs[n / 2] + xs[n / 2 + 1]) / 2
                  printf "%s: median %.2f over %d runs (%.2f-%.2f)\n", key, m, n, xs[1], xs[n] }' \
            "$out/sorted.txt"
    done
}

case ${1:-} in
    build) shift; build "$@" ;;
    run) shift; run "$@" ;;
    *) usage ;;
esac
