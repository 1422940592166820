"""``vmlab.sweep``: runs over a grid of parameters, on this machine's threads or on any
executor (a Dask ``distributed.Client``, a ``concurrent.futures`` pool).

Every run of a sweep is one scheme under one seed at one point of the grid: a comparison of
its own, seeded on its own, so its result does not depend on where or alongside what it ran.
"""

from __future__ import annotations

import itertools
import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import pandas as pd

from . import _vmlab
from ._frames import runs_frame
from ._progress import ProgressArg, reporter
from ._spec import SPEC_FIELDS, command, jobs_count, paging_list, run_spec, seed_list


def sweep(
    workload: str,
    paging: Union[str, Sequence[str]] = ("native", "nested"),
    machine: Optional[str] = None,
    *,
    sweep: Optional[Mapping[str, Sequence[Any]]] = None,
    seeds: Union[int, Iterable[int]] = 1,
    seed: int = 1,
    set: Optional[Mapping[str, Any]] = None,
    executor: Any = None,
    jobs: Optional[int] = None,
    progress: ProgressArg = True,
    **settings: Any,
) -> pd.DataFrame:
    """Runs ``workload`` under every scheme of ``paging``, every seed of ``seeds`` (a count
    from ``seed``, or a list) and every point of ``sweep``'s grid, and returns a DataFrame
    with one row per run: the point's values first (a column per swept key), then ``paging``,
    ``seed`` and every counter.

    ``sweep`` maps a key to its values: a machine-profile key (``"latency.dram_ns": [60,
    90]``, any key ``vmlab profile show`` lists) or a run setting (``guest_pages``,
    ``host_pages``, ``fragmentation``, ``pretouch``, ``accesses``, ``warmup``, ``tolerance``,
    ``fixed_warmup``, ``machine``, ``workload``). ``set`` overrides profile keys for every
    run; ``settings`` (``accesses=``, ``guest_pages=``, ...) are ``vmlab.run``'s keywords.

    ``executor=None`` runs on ``jobs`` threads here (default: one per core). Otherwise each
    run is a task of ``executor``: a Dask ``distributed.Client`` (``Client(address)``;
    ``dask-jobqueue`` starts workers through SLURM or PBS; ``pip install vmlab[dask]``), or
    anything with ``map`` such as a ``concurrent.futures`` pool. The results are identical
    whichever ran them. Each run's full report is in ``frame.attrs["reports"]``.
    """
    for key in settings:
        if key not in SPEC_FIELDS:
            raise TypeError(f"sweep() got an unexpected keyword argument {key!r}")
    grid = _grid(sweep)
    schemes = paging_list(paging)
    seed_values = seed_list(seeds, seed)
    arguments = dict(workload=workload, paging=paging, machine=machine, sweep=sweep,
                     seeds=seeds, seed=seed if seed != 1 else None, set=set, **settings)
    base = dict(settings, machine=machine)
    comparisons: List[str] = []
    points: List[Dict[str, Any]] = []
    for point in grid:
        fields = dict(base)
        overrides = dict(set or {})
        spec_workload = workload
        for key, value in point.items():
            if "." in key:
                overrides[key] = value
            elif key == "workload":
                spec_workload = value
            else:
                fields[key] = value
        for scheme in schemes:
            for s in seed_values:
                spec = run_spec(spec_workload, s, fields, overrides)
                comparisons.append(json.dumps({"spec": spec, "schemes": [scheme], "seeds": 1}))
                points.append(dict(point))
    texts = execute(comparisons, command("sweep", arguments), executor, jobs, progress,
                    "vmlab.sweep")
    reports = [json.loads(t) for t in texts]
    runs = [r["runs"][0] for r in reports]
    frame = runs_frame(runs, points if grid != [{}] else None)
    frame.attrs["reports"] = reports
    return frame


def _grid(sweep: Optional[Mapping[str, Sequence[Any]]]) -> List[Dict[str, Any]]:
    """Every point of the grid, the first key varying slowest; ``[{}]`` with no sweep."""
    if sweep is None:
        return [{}]
    if not isinstance(sweep, Mapping):
        raise ValueError("sweep= maps a key to its values, e.g. {'latency.dram_ns': [60, 90]}")
    keys = list(sweep)
    for key in keys:
        if key in ("paging", "seed", "seeds"):
            raise ValueError(f"sweep over {key!r} with the {key if key != 'seed' else 'seeds'}= keyword")
        if "." not in key and key not in SPEC_FIELDS + ("workload",):
            raise ValueError(
                f"cannot sweep {key!r}: a machine-profile key (SECTION.KEY, as `vmlab profile "
                f"show` names them) or one of {', '.join(SPEC_FIELDS + ('workload',))}"
            )
        values = sweep[key]
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise ValueError(f"sweep[{key!r}] is a list of values, not {values!r}")
        if not list(values):
            raise ValueError(f"sweep[{key!r}] lists no values")
    return [dict(zip(keys, combo)) for combo in itertools.product(*(list(sweep[k]) for k in keys))]


def execute(comparisons: List[str], call: str, executor: Any, jobs: Optional[int],
            progress: ProgressArg, label: str) -> List[str]:
    """Runs every comparison (JSON) on ``jobs`` threads here, or as tasks of ``executor``;
    their reports' JSON, in order. ``call`` is what each report records as its command."""
    if executor is None:
        jobs = jobs_count(jobs)
        with reporter(progress, label, per_run=False) as callback:
            return _vmlab.run_many(comparisons, jobs, call, callback)
    return _on_executor(executor, comparisons, call, progress, label)


def run_one(comparison: str, call: str) -> str:
    """One run of a sweep, on whichever worker an executor chose: its report's JSON."""
    return _vmlab.run(comparison, call, None)


def _on_executor(executor: Any, comparisons: List[str], call: str,
                 progress: ProgressArg, label: str) -> List[str]:
    """Every run as a task of ``executor``: a Dask client's futures (cancelled on Ctrl-C
    or an error), or ``executor.map``."""
    calls = [call] * len(comparisons)
    if hasattr(executor, "gather") and hasattr(executor, "submit"):
        from distributed import as_completed

        futures = executor.map(run_one, comparisons, calls, pure=False)
        try:
            with reporter(progress, f"{label} (dask)", per_run=False) as callback:
                for done, _ in enumerate(as_completed(futures), start=1):
                    if callback is not None and callback(
                        {"event": "finished", "index": done - 1, "done": done,
                         "total": len(futures)}
                    ) is False:
                        raise _vmlab.Error("stopped by the progress callback")
            return executor.gather(futures)
        except BaseException:
            executor.cancel(futures)
            raise
    if hasattr(executor, "map"):
        return list(executor.map(run_one, comparisons, calls))
    raise ValueError("executor= is None, a Dask distributed.Client, or has a map() method")
