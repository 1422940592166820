#!/usr/bin/env bash
# Build probes/os_costs.c (and the static exec target) in a temp dir, run it,
# print one JSON object on stdout.  Progress and compiler messages go to stderr.
#   bash probes/run.sh > probes/results-$(date +%Y-%m-%d).json
# Optional: OS_COSTS_CPU=N to choose the pinned CPU (default: highest allowed).
#           OS_COSTS_STATIC=1 to link the probe itself statically (changes the
#           fork_exit base cost: fewer VMAs to duplicate; see README).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/vmlab-probes.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

CC="${CC:-gcc}"
linkage="dynamically linked"
extra=()
if [[ "${OS_COSTS_STATIC:-0}" == 1 ]]; then
    linkage="statically linked"
    extra=(-static)
fi
"$CC" -O2 -std=c11 -Wall -Wextra "${extra[@]}" -o "$tmp/os_costs" "$here/os_costs.c" >&2

if "$CC" -O2 -static -o "$tmp/true_static" "$here/true_static.c" >"$tmp/static.log" 2>&1 \
   && "$tmp/true_static"; then
    exec_bin="$tmp/true_static"
    exec_kind="static: probes/true_static.c built with $CC -O2 -static"
else
    echo "run.sh: static link of true_static.c failed; falling back to /bin/true" >&2
    cat "$tmp/static.log" >&2 || true
    exec_bin="/bin/true"
    exec_kind="fallback: /bin/true (dynamically linked) because static linking failed"
fi

args=(--exec-bin "$exec_bin" --exec-kind "$exec_kind" --linkage "$linkage"
      --compiler "$("$CC" --version | head -n1)")
if [[ -n "${OS_COSTS_CPU:-}" ]]; then
    args+=(--cpu "$OS_COSTS_CPU")
fi
"$tmp/os_costs" "${args[@]}"
