"""vmlab from Python: the simulator's runs, sweeps over any parameter and experiments.

Every call runs what the ``vmlab`` command runs (the same library, ``vmlab_core::lab``) and
returns a :class:`pandas.DataFrame`, one row per run and every counter a column, with the
full report, exactly the JSON the command writes, in ``frame.attrs["report"]``.

- :func:`run`: one workload under several schemes and seeds (``vmlab run``).
- :func:`sweep`: runs over a grid of any parameters (profile keys such as
  ``"latency.dram_ns"``, page sizes, fragmentation, ...), locally or on a Dask cluster.
- :func:`reproduce`: a built-in experiment (``vmlab reproduce NAME``).
- :func:`sensitivity`: how much a result moves over the profile's assumption ranges, and
  which assumptions move it most (Morris elementary effects, SALib);
  :func:`labt_sensitivity`: the same for the e500 table, pricing a saved replay again.
- :func:`record`: a real x86-64 program recorded into a trace that ``run`` replays
  (``vmlab record``).
- :func:`profile`, :func:`workloads`, :func:`schemes`, :func:`profiles`,
  :func:`experiments`: what can be run.

Mistakes in what is asked raise :class:`ValueError` with the command line's one-line message;
failures of a run raise :class:`vmlab.Error`. Ctrl-C stops a run or a sweep.
"""

from ._vmlab import Error
from ._catalog import experiments, profile, profiles, schemes, version, workloads
from ._record import record
from ._run import reproduce, run
from ._sensitivity import Sensitivity, sensitivity
from ._sensitivity_labt import labt_sensitivity
from ._sweep import sweep

__version__ = version()[0]

__all__ = [
    "Error",
    "experiments",
    "labt_sensitivity",
    "profile",
    "profiles",
    "record",
    "reproduce",
    "run",
    "schemes",
    "sensitivity",
    "Sensitivity",
    "sweep",
    "version",
    "workloads",
]
