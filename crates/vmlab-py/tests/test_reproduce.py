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


def test_labt_rows_are_the_commands(tmp_path, vmlab_bin):
    # The minimal guest's trace: the default (busybox) one takes minutes to replay.
    trace = str(REPO / "guests/e500/traces/e500-linux-6.1.trace.zst")
    subprocess.run([vmlab_bin, "reproduce", "labt", "--trace", trace, "--out", str(tmp_path)],
                   check=True, capture_output=True, cwd=REPO)
    cli = json.loads((tmp_path / "labt.json").read_text())
    frame = vmlab.reproduce("labt", trace=trace, progress=False)
    assert frame.attrs["report"]["rows"] == cli["rows"]
    assert {"benchmark", "config", "slowdown", "exits_per_op"} <= set(frame.columns)


@pytest.mark.parametrize("name, kwargs, message", [
    ("nope", {}, "unknown experiment 'nope'; valid experiments: tpt"),
    ("guest", {}, "run `vmlab reproduce guest`"),
    ("labt", {"set": {"latency.dram_ns": 60}}, "labt does not simulate one"),
    ("tpt", {"trace": "x"}, "trace= is for reproduce('labt') only"),
    ("tpt", {"jobs": 0}, "jobs= must be at least 1"),
    ("tpt", {"set": {"latency.nope": 1}}, "latency.nope"),
])
def test_mistakes_are_value_errors(name, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        vmlab.reproduce(name, quick=True, progress=False, **kwargs)
