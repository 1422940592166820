"""Progress of a long call: a tqdm bar on the calling thread, or the caller's callback.

The extension module calls the callback from the calling thread with one dict per event:
``event`` (``start``, ``progress`` or ``finished``), ``index`` (the run's position), ``done``
and ``total`` (runs finished and in all for ``start``/``finished``; units of the current
phase for ``progress``), and, when known, ``workload``, ``paging``, ``seed`` and ``phase``
(``set-up``, ``warm-up``, ``measure``). A callback that returns ``False`` stops the call
(raising :class:`vmlab.Error`).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Dict, Iterator, Optional, Union

Callback = Callable[[Dict[str, Any]], Any]
ProgressArg = Union[bool, None, Callback]


class _Bar:
    """One tqdm bar: the current run's phase (``per_run``) or runs finished."""

    def __init__(self, label: str, per_run: bool) -> None:
        from tqdm.auto import tqdm

        self._tqdm = tqdm
        self._label = label
        self._per_run = per_run
        self._bar: Optional[Any] = None
        self._key: Optional[tuple] = None

    def __call__(self, event: Dict[str, Any]) -> None:
        kind = event["event"]
        if self._per_run and kind == "progress":
            key = (event["index"], event.get("phase"))
            if key != self._key:
                self.close()
                self._key = key
                what = [self._label]
                if "paging" in event:
                    what.append(f"{event['paging']} seed {event['seed']}")
                self._bar = self._tqdm(
                    total=event["total"] or None,
                    desc=f"{' '.join(what)}: {event.get('phase', '')}",
                    unit_scale=True,
                    leave=False,
                )
            if self._bar is not None:
                self._bar.n = event["done"]
                self._bar.refresh()
        elif not self._per_run and kind == "finished":
            if self._bar is None:
                self._bar = self._tqdm(total=event["total"], desc=self._label, unit=" runs")
            self._bar.n = event["done"]
            self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


@contextlib.contextmanager
def reporter(progress: ProgressArg, label: str, per_run: bool) -> Iterator[Optional[Callback]]:
    """The callback to hand the extension module for ``progress=``: a tqdm bar for
    ``True`` (closed when the call ends), the caller's callable, or none."""
    if progress is None or progress is False:
        yield None
    elif progress is True:
        bar = _Bar(label, per_run)
        try:
            yield bar
        finally:
            bar.close()
    elif callable(progress):
        yield progress
    else:
        raise ValueError("progress= is True (a progress bar), False, or a callable taking a dict")
