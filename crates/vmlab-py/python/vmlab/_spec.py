"""The keywords of :func:`vmlab.run` and :func:`vmlab.sweep` as the lab's run spec
(``RunSpec``, the JSON ``vmlab run --json`` carries under ``comparison.spec``)."""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

#: The run spec's fields a keyword sets, beside ``workload`` and ``seed``; ``None`` leaves
#: ``vmlab run``'s default. A sweep can vary any of them.
SPEC_FIELDS = (
    "machine",
    "guest_pages",
    "host_pages",
    "fragmentation",
    "accesses",
    "warmup",
    "tolerance",
    "fixed_warmup",
    "pretouch",
)


def profile_value(value: Any) -> str:
    """An override's value as the profile file writes it (``True`` is ``true``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def override_pairs(overrides: Optional[Mapping[str, Any]]) -> List[Tuple[str, str]]:
    """``set=``'s overrides as (``SECTION.KEY``, value) pairs, each key once."""
    if overrides is None:
        return []
    if not isinstance(overrides, Mapping):
        raise ValueError(
            "set= takes a dict of profile keys to values, e.g. {'latency.dram_ns': 60}"
        )
    return [(str(k), profile_value(v)) for k, v in overrides.items()]


def paging_list(paging: Union[str, Sequence[str]]) -> List[str]:
    """``paging=`` as a list of scheme names (a string may be comma-separated)."""
    if isinstance(paging, str):
        names = [p.strip() for p in paging.split(",")]
    else:
        names = [str(p).strip() for p in paging]
    if not names or any(not n for n in names):
        raise ValueError("paging= names at least one scheme, e.g. ['native', 'nested']")
    return names


def run_spec(workload: str, seed: int, fields: Mapping[str, Any],
             overrides: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """The run spec of ``workload`` with ``fields`` (those of :data:`SPEC_FIELDS` not
    ``None``) and the profile ``overrides``; the rest are ``vmlab run``'s defaults."""
    if not isinstance(workload, str) or not workload:
        raise ValueError("workload= names a workload, e.g. 'sysbench-mem:block=1G,mode=rnd'")
    spec: Dict[str, Any] = {"workload": workload, "seed": _seed(seed)}
    for key, value in fields.items():
        if key not in SPEC_FIELDS:
            raise ValueError(f"unknown run setting {key!r}; valid: {', '.join(SPEC_FIELDS)}")
        if value is not None:
            spec[key] = value
    pairs = override_pairs(overrides)
    if pairs:
        spec["overrides"] = dict(pairs)
    return spec


def _seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"a seed is a non-negative integer, not {seed!r}")
    return seed


def seed_list(seeds: Union[int, Iterable[int]], first: int) -> List[int]:
    """``seeds=``: a count (``first``, ``first + 1``, ...) or the seeds themselves."""
    if isinstance(seeds, bool):
        raise ValueError("seeds= is a count of seeds or a list of seeds")
    if isinstance(seeds, int):
        if seeds < 1:
            raise ValueError("seeds= must be at least 1")
        return [_seed(first) + i for i in range(seeds)]
    out = [_seed(s) for s in seeds]
    if not out:
        raise ValueError("seeds= lists at least one seed")
    if len(set(out)) != len(out):
        raise ValueError(f"seeds= lists a seed twice: {out}")
    return out


def jobs_count(jobs: Optional[int]) -> int:
    """``jobs=``: threads to run on, one per core by default."""
    if jobs is None:
        return os.cpu_count() or 1
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs= must be at least 1, not {jobs!r}")
    return jobs


def command(function: str, arguments: Mapping[str, Any]) -> str:
    """How a call is recorded in a report's provenance: ``vmlab.run(workload='...', ...)``,
    the arguments given (not the defaults), in order."""
    shown = ", ".join(f"{k}={v!r}" for k, v in arguments.items() if v is not None)
    return f"python: vmlab.{function}({shown})"
