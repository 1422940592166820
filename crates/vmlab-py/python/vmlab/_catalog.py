"""What can be run: workloads, schemes, machine profiles and experiments."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Tuple

from . import _vmlab
from ._spec import override_pairs


def _catalog() -> Dict[str, Any]:
    return json.loads(_vmlab.catalog())


def workloads() -> List[Dict[str, Any]]:
    """Every workload: ``name``, ``summary`` and ``params`` (each ``key``, ``default``,
    ``help``), as ``vmlab list`` shows them."""
    return _catalog()["workloads"]


def schemes() -> List[Dict[str, str]]:
    """Every paging scheme: ``name`` and ``summary``."""
    return _catalog()["schemes"]


def profiles() -> List[Dict[str, str]]:
    """The built-in machine profiles: ``name``, ``description`` and ``fingerprint``."""
    return _catalog()["profiles"]


def experiments() -> List[Dict[str, str]]:
    """The built-in experiments (:func:`vmlab.reproduce`): ``name``, ``summary``,
    ``duration`` and ``kind``."""
    return _catalog()["experiments"]


def profile(
    name: str = "skylake", set: Optional[Mapping[str, Any]] = None, toml: bool = False
) -> Any:
    """The effective machine profile ``name`` (a built-in name or a ``.toml`` path) with the
    overrides ``set`` (``{"latency.dram_ns": 60}``) applied: a dict of sections, or with
    ``toml=True`` the TOML text ``vmlab profile show`` prints (which ``machine=`` loads)."""
    as_json, as_toml = _vmlab.profile(name, override_pairs(set))
    return as_toml if toml else json.loads(as_json)


def version() -> Tuple[str, str]:
    """vmlab's version and the git commit the module was built from."""
    return _vmlab.version()
