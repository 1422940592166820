"""``vmlab.record``: a real x86-64 program recorded under QEMU's user-mode emulator into a
trace that ``vmlab.run(workload="trace:file=...")`` replays (``vmlab record``)."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Union

from . import _vmlab
from ._progress import ProgressArg, reporter


def record(
    command: Union[str, Sequence[str]],
    output: Union[str, "os.PathLike[str]", None] = None,
    *,
    sample: Optional[str] = None,
    keep_raw: bool = False,
    progress: ProgressArg = True,
) -> Dict[str, Any]:
    """Records ``command`` (a list ``[program, arg, ...]``, or a string split as a POSIX
    shell would) and what it forks and execs into ``output`` (default: the program's name
    with ``.vmtrace``, here), as ``vmlab record`` does; ``sample="100M:1M"`` records
    windows in full and elsewhere only what builds page tables (``--sample``).

    Returns what was recorded: ``trace`` (the path), ``trailer`` (how the recording ended
    and its totals: references, instructions, system calls, processes), ``bytes``,
    ``raw_bytes`` and ``unfinished_processes``. Needs ``qemu-x86_64`` and a C compiler.
    """
    argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    if not argv:
        raise ValueError("record() needs a program to record")
    if output is None:
        output = Path(Path(argv[0]).name + ".vmtrace")
    with reporter(progress, "vmlab.record", per_run=True) as callback:
        text = _vmlab.record(argv[0], argv[1:], os.fspath(output), keep_raw, sample, callback)
    return json.loads(text)
