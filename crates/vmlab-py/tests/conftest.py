"""Fixtures of the Python package's tests: the `vmlab` command to compare with, and a short
sample that keeps each run well under a second."""

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

#: A run of sysbench-mem over 64 MiB, sampled short: every scheme in well under a second.
WORKLOAD = "sysbench-mem:block=64M,mode=rnd"
SHORT = dict(accesses=200_000, warmup=100_000)
SHORT_FLAGS = ["--accesses", "200000", "--warmup", "100000"]


def need(what: str) -> None:
    """Skips a test that needs `what`, unless in CI (`CI` set), where it fails."""
    if os.environ.get("CI"):
        pytest.fail(f"{what} is required in CI")
    pytest.skip(f"needs {what}")


@pytest.fixture(scope="session")
def vmlab_bin() -> str:
    """The `vmlab` command of this tree (`VMLAB_BIN`, else target/release/vmlab)."""
    given = os.environ.get("VMLAB_BIN")
    path = Path(given) if given else REPO / "target" / "release" / "vmlab"
    if not path.exists():
        found = shutil.which("vmlab")
        if found is None:
            need("the vmlab command (cargo build --release, or VMLAB_BIN)")
        return found
    return str(path)


def without_command(report: dict) -> dict:
    """A report's provenance minus what says how and by which build it was made (the
    command line or call, the git commit: the command may have been built apart)."""
    provenance = {k: v for k, v in report["provenance"].items()
                  if k not in ("command", "git_commit")}
    return {**report, "provenance": provenance}
