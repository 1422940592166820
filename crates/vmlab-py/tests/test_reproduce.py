"""vmlab.reproduce: an experiment from Python equals the command's, run for run."""

import json
import subprocess

import pytest

import vmlab
from conftest import REPO, without_command


def test_the_headline_equals_the_commands_run_for_run(tmp_path, vmlab_bin):
    subprocess.run([vmlab_bin, "reproduce", "tpt", "--quick", "--out", str(tmp_path)],
                   check=True, capture_output=True, cwd=REPO)
    cli = json.loads((tmp_path / "tpt.json").read_text())
    events = []
    frame = vmlab.reproduce("tpt", quick=True, jobs=2, progress=events.append)
    report = frame.attrs["report"]
    assert report["runs"] == cli["runs"]
    assert report["specs"] == cli["specs"]
    assert without_command(report) == without_command(cli)
    assert list(frame["paging"]) == cli["schemes"]
    assert list(frame["spec.paging"]) == cli["schemes"]
    assert [e["done"] for e in events if e["event"] == "finished"] == list(
        range(1, len(cli["runs"]) + 1))


#: The small e500 trace the command's own tests replay (the committed guest takes minutes).
SMALL_TRACE = REPO / "crates" / "vmlab-cli" / "tests" / "data" / "labt-small.trace"


def test_labt_rows_are_the_commands(tmp_path, vmlab_bin):
    subprocess.run([vmlab_bin, "reproduce", "labt", "--trace", str(SMALL_TRACE),
                    "--set", "exits.rfi=1200", "--out", str(tmp_path)],
                   check=True, capture_output=True, cwd=REPO)
    cli = json.loads((tmp_path / "labt.json").read_text())
    frame = vmlab.reproduce("labt", trace=SMALL_TRACE, set={"exits.rfi": 1200},
                            progress=False)
    assert frame.attrs["report"]["rows"] == cli["rows"]
    assert without_command(frame.attrs["report"]) == without_command(cli)
    assert {"benchmark", "config", "slowdown", "exits_per_op", "work.mmio.user"} <= set(
        frame.columns)
    # The replay's own check travels with the report (and a re-pricing keeps the saved one).
    check = frame.attrs["report"]["replay_check"]
    assert (check["accesses_checked"], check["accesses_unmapped"],
            check["accesses_mismatched"], check["tlbwe_rejected"]) == (2, 0, 0, 0)
    # The saved report priced again under other costs equals a replay under them.
    again = vmlab.reproduce("labt", reprice=tmp_path / "labt.json",
                            set={"exits.rfi": 1600, "core.cpi": 2}, progress=False)
    fresh = vmlab.reproduce("labt", trace=SMALL_TRACE, set={"exits.rfi": 1600, "core.cpi": 2},
                            progress=False)
    assert again.attrs["report"]["rows"] == fresh.attrs["report"]["rows"]
    assert again.attrs["report"]["replay_check"] == check
    assert again.attrs["report"]["rows"] != cli["rows"]


@pytest.mark.parametrize("name, kwargs, message", [
    ("nope", {}, "unknown experiment 'nope'; valid experiments: tpt"),
    ("guest", {}, "run `vmlab reproduce guest`"),
    ("labt", {"set": {"latency.dram_ns": 60}}, "unknown key 'latency.dram_ns'"),
    ("labt", {"reprice": "/no/such/labt.json"}, "/no/such/labt.json"),
    ("tpt", {"trace": "x"}, "trace= and reprice= are for reproduce('labt') only"),
    ("tpt", {"jobs": 0}, "jobs= must be at least 1"),
    ("tpt", {"set": {"latency.nope": 1}}, "latency.nope"),
])
def test_mistakes_are_value_errors(name, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        vmlab.reproduce(name, quick=True, progress=False, **kwargs)
