"""vmlab.sensitivity: Morris elementary effects over the profile's assumption ranges."""

import concurrent.futures
import json
import os
import subprocess
import sys

import pytest

import vmlab
from conftest import need

try:
    import SALib
except ImportError:
    SALib = None


@pytest.fixture(autouse=True)
def salib():
    if SALib is None:
        need("SALib (pip install './crates/vmlab-py[sensitivity]')")


#: TLB misses on every access: tpt's tag check per fill shows directly.
WORKLOAD = "tlb-bench:size=64M"
SHORT = dict(accesses=100_000, warmup=50_000)
KEYS = ["tags.per_fill", "core.ipc", "exits.cr3_load"]


@pytest.fixture(scope="module")
def result():
    return vmlab.sensitivity(WORKLOAD, ["native", "tpt"], assumptions=KEYS, trajectories=3,
                             progress=False, **SHORT)


def test_the_design_runs_every_scheme_at_every_point(result):
    method = result.report["method"]
    # 3 trajectories x (3 assumptions + 1) points, plus the profile as it is; 2 schemes each.
    assert (method["points"], method["runs"]) == (12, 26)
    assert result.runs.shape[0] == 26
    assert list(result.runs["paging"][:2]) == ["native", "tpt"]
    assert result.report["assumptions"]["tags.per_fill"] | {"why": ""} == {
        "low": 0.0, "high": 14.0, "value": 4.0, "why": ""}


def test_the_tag_check_moves_tpt_and_nothing_else_does(result):
    summary = result.summary.set_index("result").loc["tpt/native"]
    assert summary["low"] < summary["value"] < summary["high"]
    assert summary["most_influential"] == "tags.per_fill"
    ranking = result.ranking.set_index("assumption")
    # A dependent chase of TLB misses: the IPC does not bound it, and tlb-bench takes no
    # CR3 loads under either scheme.
    assert ranking.loc["tags.per_fill", "mu_star"] > 0
    assert ranking.loc["exits.cr3_load", "mu_star"] == 0
    # The baseline is vmlab.run's.
    one = vmlab.run(WORKLOAD, ["native", "tpt"], progress=False, **SHORT)
    assert summary["value"] == one["seconds"][1] / one["seconds"][0]


def test_an_executor_gives_the_same_analysis(result):
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        again = vmlab.sensitivity(WORKLOAD, ["native", "tpt"], assumptions=KEYS, trajectories=3,
                                  executor=pool, progress=False, **SHORT)
    assert again.report["results"] == result.report["results"]


@pytest.mark.parametrize("kwargs, message", [
    (dict(assumptions=["latency.nope"]), "'latency.nope' is not an assumption of the profile"),
    (dict(results=["shadow/native"]), "result 'shadow/native'"),
    (dict(assumptions={"core.ipc": (3, 1)}), "low \\(3.0\\) must be below high"),
    (dict(trajectories=1), "trajectories= must be an integer of at least 2"),
])
def test_mistakes_are_value_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        vmlab.sensitivity(WORKLOAD, ["native", "tpt"], progress=False, **SHORT, **kwargs)


def test_the_command_runs_it(vmlab_bin):
    env = dict(os.environ, VMLAB_PYTHON=sys.executable)
    out = subprocess.run(
        [vmlab_bin, "sensitivity", "-w", WORKLOAD, "-p", "native,tpt", "--assumption",
         "tags.per_fill", "--assumption", "core.ipc", "--trajectories", "2", "--accesses",
         "100000", "--warmup", "50000", "--json"],
        env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["results"][0]["ranking"][0]["assumption"] == "tags.per_fill"
    assert report["provenance"]["profile"]["assumptions"]["core.ipc"]["high"] == 3.0
    bad = subprocess.run([vmlab_bin, "sensitivity", "-w", WORKLOAD, "--result", "x"],
                         env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("error: result 'x'")
    missing = subprocess.run([vmlab_bin, "sensitivity", "-w", WORKLOAD],
                             env=dict(os.environ, VMLAB_PYTHON="/nonexistent/python"),
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "pip install" in missing.stderr
