"""``python -m vmlab sensitivity ...``: the command-line front end of :func:`vmlab.sensitivity`
(``vmlab sensitivity`` runs it). Prints the table, or the report as JSON with ``--json``;
a mistake in what was asked is one line on stderr and exit status 2."""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from . import Error
from ._sensitivity import LEVELS, TRAJECTORIES, sensitivity
from ._sensitivity_labt import labt_sensitivity


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="vmlab sensitivity",
        description=(
            "Vary the machine profile's assumptions over their plausible ranges (its "
            "[assumptions] table; vmlab profile show) and report, for each result, its range "
            "and which assumptions move it most: Morris elementary effects (SALib), every "
            "point simulated."),
        epilog=(
            "Examples: vmlab sensitivity -w sysbench-mem:block=256M,mode=rnd -p native,nested "
            "--result nested/native --accesses 500000 --warmup 500000;   "
            "vmlab sensitivity --labt results/labt/labt.json --result kvm/bare "
            "--result labt-all/pv --benchmark boot (the e500 table: the saved replay's counts "
            "priced again at every point, a replay only for hv.host_tlb1_reserved)"),
    )
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("-w", "--workload", help="workload spec, as vmlab run takes it")
    target.add_argument("--labt", metavar="LABT.JSON",
                        help="a saved `vmlab reproduce labt` report: vary the e500 profile's "
                             "assumptions for its table instead (results are models: kvm/bare)")
    p.add_argument("--benchmark", action="append", dest="benchmarks", metavar="NAME",
                   help="with --labt: a benchmark of the table (repeatable; default boot)")
    p.add_argument("--trace", help="with --labt: the trace to replay when a point changes a "
                                   "size the models act on (default: the report's)")
    p.add_argument("-p", "--paging", default="native,nested",
                   help="schemes, comma-separated (default: native,nested)")
    p.add_argument("--result", action="append", dest="results", metavar="RESULT",
                   help="a scheme's time (nested) or a ratio of two (nested/native); "
                        "repeatable; default: every scheme over the first")
    p.add_argument("--machine", help="machine profile (default: skylake)")
    p.add_argument("--assumption", action="append", dest="assumptions", metavar="KEY",
                   help="vary only this assumption (repeatable; default: all of the profile's)")
    p.add_argument("--trajectories", type=int, default=TRAJECTORIES,
                   help=f"Morris trajectories (default {TRAJECTORIES})")
    p.add_argument("--levels", type=int, default=LEVELS,
                   help=f"grid levels of each range (default {LEVELS})")
    p.add_argument("--seed", type=int, default=1, help="seed of the design and the bootstrap")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="fix a profile key for every run (repeatable)")
    p.add_argument("--jobs", type=int, help="threads (default: one per core)")
    for flag in ("accesses", "warmup"):
        p.add_argument(f"--{flag}", type=int, help=f"as vmlab run --{flag}")
    for flag in ("guest-pages", "host-pages"):
        p.add_argument(f"--{flag}", help=f"as vmlab run --{flag}")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--svg", metavar="FILE",
                   help="also write a figure: each result's range, and its most influential "
                        "assumptions by mu*")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    overrides = {}
    for item in args.set:
        key, eq, value = item.partition("=")
        if not eq:
            print(f"error: --set {item}: give SECTION.KEY=VALUE", file=sys.stderr)
            return 2
        overrides[key.strip()] = value.strip()
    try:
        if args.labt:
            result = labt_sensitivity(
                args.labt, args.results or ("kvm/bare", "labt-all/pv"),
                args.benchmarks or ("boot",), trace=args.trace, assumptions=args.assumptions,
                trajectories=args.trajectories, levels=args.levels, seed=args.seed,
                set=overrides or None)
            return _finish(result, args)
        if args.benchmarks or args.trace:
            print("error: --benchmark and --trace go with --labt", file=sys.stderr)
            return 2
        result = sensitivity(
            args.workload, args.paging, args.results, args.machine,
            assumptions=args.assumptions, trajectories=args.trajectories, levels=args.levels,
            seed=args.seed, set=overrides or None, jobs=args.jobs,
            progress=sys.stderr.isatty(), accesses=args.accesses, warmup=args.warmup,
            guest_pages=args.guest_pages, host_pages=args.host_pages)
    except (ValueError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return _finish(result, args)


def _finish(result, args) -> int:
    if args.svg:
        try:
            with open(args.svg, "w") as f:
                f.write(result.to_svg())
        except OSError as e:
            print(f"error: cannot write {args.svg}: {e}", file=sys.stderr)
            return 1
    print(result.to_json() if args.json else result, end="")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "sensitivity":
        print("usage: python -m vmlab sensitivity ...", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[2:]))
