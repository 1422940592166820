"""``vmlab.labt_sensitivity``: the e500 table's sensitivity to the e500 profile's assumptions,
by pricing a saved replay again rather than replaying.

The e500 models count and the profile prices (docs/model.md, "e500"), so a Morris point that
changes only prices (exit costs, units of work, the CPI, the clock) is the saved replay's
counts priced again, in milliseconds. A point that changes a size the models act on
(``hv.host_tlb1_reserved``) needs the trace replayed with it: that is done once per distinct
value, and every point with that value is priced from that replay.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union


from . import _vmlab
from ._frames import runs_frame
from ._sensitivity import (LEVELS, TRAJECTORIES, Sensitivity, analyse, assumption_ranges,
                           design_point, morris_design, ranking_frame, ratio_results,
                           summary_frame)
from ._spec import command, override_pairs

PathArg = Union[str, "os.PathLike[str]"]


def labt_sensitivity(
    saved: PathArg,
    results: Sequence[str] = ("kvm/bare", "labt-all/pv"),
    benchmarks: Sequence[str] = ("boot",),
    *,
    trace: Optional[PathArg] = None,
    assumptions: Union[None, Sequence[str], Mapping[str, Tuple[float, float]]] = None,
    trajectories: int = TRAJECTORIES,
    levels: int = LEVELS,
    seed: int = 1,
    set: Optional[Mapping[str, Any]] = None,
) -> Sensitivity:
    """Varies the e500 profile's assumptions over their ranges for the labt experiment saved
    in ``saved`` (a ``labt.json`` of ``vmlab reproduce labt``) and reports, for every result
    at every benchmark of ``benchmarks``, its range and the assumptions that move it most.

    ``results`` are a model's time (``"kvm"``) or a ratio of two (``"kvm/bare"``);
    ``benchmarks`` rows of the table (``"boot"``, ``"null_syscall"``, ...). Points that change
    only prices are the saved counts priced again; a point that changes a size the models act
    on replays ``trace`` (default: the trace the saved report names) once per distinct value.
    ``assumptions``, ``trajectories``, ``levels``, ``seed`` and ``set`` are as for
    :func:`vmlab.sensitivity`.
    """
    saved = Path(saved)
    try:
        report = json.loads(saved.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read the labt report {saved}: {e}") from None
    if report.get("experiment") != "labt":
        raise ValueError(f"{saved} is not a labt report (vmlab reproduce labt writes labt.json)")
    configs = report["configs"]
    wanted = ratio_results(results, configs, "model", "the report's models")
    known = {row["benchmark"] for row in report["rows"]}
    benchmarks = [benchmarks] if isinstance(benchmarks, str) else list(benchmarks)
    missing = [b for b in benchmarks if b not in known]
    if missing or not benchmarks:
        raise ValueError(f"benchmarks= {missing or benchmarks}: the report's benchmarks are "
                         f"{', '.join(sorted(known))}")
    profile = _nested(report["provenance"]["profile"])
    ranges = assumption_ranges(profile, assumptions)
    problem, design = morris_design(ranges, trajectories, levels, seed)
    names = problem["names"]
    points: List[Dict[str, Any]] = [{}] + [design_point(profile, names, row) for row in design]
    fixed = dict(set or {})
    counts_keys = frozenset(_vmlab.labt_count_keys())
    call = command("labt_sensitivity", dict(saved=os.fspath(saved), results=list(results),
                                            benchmarks=benchmarks, assumptions=assumptions,
                                            trajectories=trajectories, levels=levels, seed=seed,
                                            set=set))
    timing = {"replays": 0, "replay_seconds": 0.0, "reprices": 0, "reprice_seconds": 0.0}
    bases: Dict[Tuple[Tuple[str, str], ...], str] = {}
    rows_at: List[List[Dict[str, Any]]] = []
    with tempfile.TemporaryDirectory(prefix="vmlab-labt-") as tmp:
        for point in points:
            overrides = {**fixed, **point}
            counting = tuple(sorted((k, str(v)) for k, v in overrides.items()
                                    if k in counts_keys and str(v) != str(_flat(profile, k))))
            if counting not in bases:
                if not counting:
                    bases[counting] = os.fspath(saved)
                else:
                    path = Path(tmp) / f"replay-{len(bases)}.json"
                    started = time.perf_counter()
                    text = _vmlab.reproduce(
                        "labt", False, 1, list(counting), call,
                        None, os.fspath(trace) if trace else report["trace"], None, None)
                    timing["replays"] += 1
                    timing["replay_seconds"] += time.perf_counter() - started
                    path.write_text(text)
                    bases[counting] = os.fspath(path)
            started = time.perf_counter()
            text = _vmlab.reproduce("labt", False, 1, override_pairs(overrides), call,
                                    None, None, bases[counting], None)
            timing["reprices"] += 1
            timing["reprice_seconds"] += time.perf_counter() - started
            rows_at.append(json.loads(text)["rows"])
    seconds = [{(r["benchmark"], r["config"]): r["seconds"] for r in rows} for rows in rows_at]
    out_results = []
    for bench in benchmarks:
        for name, value_of in wanted:
            values = [value_of({c: s[(bench, c)] for c in configs}) for s in seconds]
            out_results.append(analyse(f"{bench} {name}", values, problem, design, levels, seed))
    out = {
        "method": {"name": "morris", "library": f"SALib {metadata.version('SALib')}",
                   "trajectories": trajectories, "levels": levels, "seed": seed,
                   "points": len(points) - 1, "runs": len(points),
                   "replays": timing["replays"], "repriced": timing["reprices"]},
        "spec": {"workload": "labt", "saved": os.fspath(saved), "trace": report["trace"],
                 "machine": profile["machine"]["name"], "benchmarks": benchmarks,
                 "set": {k: str(v) for k, v in fixed.items()}},
        "assumptions": {n: {**ranges[n], "value": _flat(profile, n)} for n in names},
        "results": out_results,
        "provenance": report["provenance"] | {"command": call},
    }
    runs = [row for rows in rows_at for row in rows]
    leading = [{"point": i, **p} for i, p in enumerate(points) for _ in rows_at[i]]
    frame = runs_frame(runs, leading)
    frame.attrs["timing"] = timing
    return Sensitivity(summary=summary_frame(out_results), ranking=ranking_frame(out_results),
                       runs=frame, report=out)


def _nested(profile: Mapping[str, Any]) -> Dict[str, Any]:
    """The report's effective e500 profile with its named costs (``"hv.page_lookup"``) as
    sections, so every assumption key reads as ``section.key``."""
    out: Dict[str, Any] = {k: v for k, v in profile.items() if k != "costs"}
    for key, value in profile.get("costs", {}).items():
        section, _, name = key.partition(".")
        out.setdefault(section, {})[name] = value
    return out


def _flat(profile: Mapping[str, Any], key: str) -> Any:
    section, _, name = key.partition(".")
    return profile.get(section, {}).get(name)
