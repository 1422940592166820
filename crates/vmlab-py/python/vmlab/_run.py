"""``vmlab.run`` (``vmlab run``) and ``vmlab.reproduce`` (``vmlab reproduce``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import pandas as pd

from . import _vmlab
from ._frames import runs_frame
from ._progress import ProgressArg, reporter
from ._spec import command, jobs_count, override_pairs, paging_list, run_spec


def run(
    workload: str,
    paging: Union[str, Sequence[str]] = ("native", "nested"),
    machine: Optional[str] = None,
    *,
    set: Optional[Mapping[str, Any]] = None,
    seed: int = 1,
    seeds: int = 1,
    guest_pages: Optional[str] = None,
    host_pages: Optional[str] = None,
    fragmentation: Optional[float] = None,
    accesses: Optional[int] = None,
    warmup: Optional[int] = None,
    tolerance: Optional[float] = None,
    fixed_warmup: Optional[bool] = None,
    pretouch: Optional[bool] = None,
    out: Union[str, "os.PathLike[str]", None] = None,
    progress: ProgressArg = True,
) -> pd.DataFrame:
    """Runs ``workload`` under every scheme of ``paging`` and ``seeds`` seeds (``seed``,
    ``seed + 1``, ...), as ``vmlab run`` does; every keyword is the option of the same name
    (``vmlab run --help`` explains each; ``None`` keeps its default).

    Returns a DataFrame with one row per run (scheme by scheme, seeds in order), every
    counter a column; ``frame.attrs["report"]`` is the whole report, the JSON
    ``vmlab run --json`` prints (with the effective profile in its provenance).
    ``set={"latency.dram_ns": 60}`` overrides profile keys (``vmlab run --set``); ``out``
    writes run.csv, run.json and run.svg to that directory (``--out``); ``progress`` is
    ``True`` (a bar), ``False``, or a callable taking a dict per event.
    """
    arguments = dict(
        workload=workload, paging=paging, machine=machine, set=set,
        seed=seed if seed != 1 else None, seeds=seeds if seeds != 1 else None,
        guest_pages=guest_pages, host_pages=host_pages, fragmentation=fragmentation,
        accesses=accesses, warmup=warmup, tolerance=tolerance, fixed_warmup=fixed_warmup,
        pretouch=pretouch,
    )
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise ValueError(f"seeds= is how many seeds each scheme runs under (at least 1), not {seeds!r}")
    spec = run_spec(workload, seed, dict(
        machine=machine, guest_pages=guest_pages, host_pages=host_pages,
        fragmentation=fragmentation, accesses=accesses, warmup=warmup, tolerance=tolerance,
        fixed_warmup=fixed_warmup, pretouch=pretouch,
    ), set)
    comparison = {"spec": spec, "schemes": paging_list(paging), "seeds": seeds}
    with reporter(progress, "vmlab.run", per_run=True) as callback:
        text = _vmlab.run(json.dumps(comparison), command("run", arguments), callback)
    report = json.loads(text)
    if out is not None:
        _write_run(Path(out), text)
    return runs_frame(report["runs"], report=report)


def _write_run(directory: Path, text: str) -> None:
    """``out=``: what ``vmlab run --out DIR`` writes."""
    csv, svg = _vmlab.render_comparison(text)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for name, body in (("run.csv", csv), ("run.json", text), ("run.svg", svg)):
            (directory / name).write_text(body)
    except OSError as e:
        raise _vmlab.Error(f"cannot write to {directory}: {e}") from e


def reproduce(
    name: str,
    quick: bool = False,
    jobs: Optional[int] = None,
    *,
    set: Optional[Mapping[str, Any]] = None,
    traces: Union[str, "os.PathLike[str]", None] = None,
    trace: Union[str, "os.PathLike[str]", None] = None,
    reprice: Union[str, "os.PathLike[str]", None] = None,
    progress: ProgressArg = True,
) -> pd.DataFrame:
    """Runs the experiment ``name`` (``vmlab.experiments()``, or a path to an experiment
    file) as ``vmlab reproduce NAME`` does, on ``jobs`` threads (default: one per core; the
    results do not depend on it).

    For an experiment file: one row per run (``spec.*`` columns say what each ran with,
    swept values included); for ``labt``, one row per benchmark and configuration. The
    whole report, the JSON ``vmlab reproduce`` writes, is ``frame.attrs["report"]`` (for
    ``labt`` with ``replay_check``: the recorded kernel accesses the replay translated as the
    recording did, and any it did not).
    ``set``, ``traces``, ``trace`` and ``reprice`` are the options ``--set``, ``--traces``,
    ``--trace`` and ``--reprice`` (labt: ``trace="minimal"`` is the minimal guest's trace;
    ``reprice`` a saved ``labt.json`` whose counts are priced again under ``set``, without
    replaying). ``guest`` measures real programs on this host: run it
    with the command.
    """
    jobs = jobs_count(jobs)
    arguments = dict(name=name, quick=quick or None, jobs=jobs, set=set, traces=traces,
                     trace=trace, reprice=reprice)
    with reporter(progress, f"vmlab.reproduce({name!r})", per_run=False) as callback:
        text = _vmlab.reproduce(
            name, bool(quick), jobs, override_pairs(set), command("reproduce", arguments),
            None if traces is None else os.fspath(traces),
            None if trace is None else os.fspath(trace),
            None if reprice is None else os.fspath(reprice),
            callback,
        )
    report = json.loads(text)
    if "specs" in report:
        leading = [{f"spec.{k}": v for k, v in s.items() if k != "overrides"}
                   | {f"set.{k}": v for k, v in s.get("overrides", {}).items()}
                   for s in report["specs"]]
        return runs_frame(report["runs"], leading, report)
    return runs_frame(report["rows"], report=report)
