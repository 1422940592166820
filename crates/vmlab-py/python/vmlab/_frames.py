"""Reports as DataFrames: one row per run, every counter a column (nested counters such as
``exits_by_reason`` flattened to ``exits_by_reason.cr3_load``)."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

import pandas as pd


#: The columns that say what a run was, first; the counters follow in the report's order.
IDENTITY = ["workload", "paging", "seed", "machine", "guest_pages", "host_pages"]


def runs_frame(
    runs: Sequence[Mapping[str, Any]],
    leading: Optional[List[Dict[str, Any]]] = None,
    report: Optional[Any] = None,
) -> pd.DataFrame:
    """A row per run report; ``leading``'s columns (one dict per run, e.g. a sweep's point)
    first; ``report`` kept whole in ``frame.attrs["report"]``."""
    frame = pd.json_normalize(list(runs), sep=".")
    first = [c for c in IDENTITY if c in frame]
    frame = frame[first + [c for c in frame if c not in first]]
    if leading:
        front = pd.DataFrame(leading, index=frame.index)
        frame = pd.concat([front, frame.drop(columns=[c for c in front if c in frame])], axis=1)
    if report is not None:
        frame.attrs["report"] = report
    return frame
