"""vmlab.run: the same runs as `vmlab run`, as a DataFrame, with progress, errors and
Ctrl-C."""

import json
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest

import vmlab
from conftest import REPO, SHORT, SHORT_FLAGS, WORKLOAD, without_command


def test_a_run_equals_the_commands_json_run_for_run(vmlab_bin):
    cli = json.loads(subprocess.run(
        [vmlab_bin, "run", "-w", WORKLOAD, "-p", "native,nested,shadow", "--seeds", "2",
         "--set", "latency.dram_ns=60", *SHORT_FLAGS, "--json"],
        check=True, capture_output=True, text=True).stdout)
    frame = vmlab.run(workload=WORKLOAD, paging=["native", "nested", "shadow"], seeds=2,
                      set={"latency.dram_ns": 60}, progress=False, **SHORT)
    report = frame.attrs["report"]
    assert report["runs"] == cli["runs"]
    assert report["comparison"] == cli["comparison"]
    assert report["across_seeds"] == cli["across_seeds"]
    assert without_command(report) == without_command(cli)
    assert report["provenance"]["command"].startswith("python: vmlab.run(workload=")


def test_the_frame_has_a_row_per_run_and_a_column_per_counter():
    frame = vmlab.run(WORKLOAD, ["native", "nested"], seeds=3, progress=False, **SHORT)
    assert frame.shape[0] == 6
    assert list(frame["paging"]) == ["native"] * 3 + ["nested"] * 3
    assert list(frame["seed"]) == [1, 2, 3] * 2
    for column in ["seconds", "tlb_misses", "walk_refs", "vm_exits", "page_faults",
                   "sample.seconds_ci", "cycles_breakdown.walk"]:
        assert column in frame.columns, column
    assert pd.api.types.is_integer_dtype(frame["tlb_misses"])
    # Nested paging walks two dimensions: more references per walk than native's.
    native, nested = frame.groupby("paging")["walk_refs_per_walk"].mean()[["native", "nested"]]
    assert nested > native


def test_defaults_are_the_commands(vmlab_bin):
    cli = json.loads(subprocess.run(
        [vmlab_bin, "run", "-w", "tlb-bench:size=1M", "--accesses", "100000", "--json"],
        check=True, capture_output=True, text=True).stdout)
    frame = vmlab.run("tlb-bench:size=1M", accesses=100_000, progress=False)
    assert frame.attrs["report"]["comparison"] == cli["comparison"]
    assert frame.attrs["report"]["runs"] == cli["runs"]


def test_out_writes_the_commands_files(tmp_path, vmlab_bin):
    vmlab.run(WORKLOAD, "native,nested", out=tmp_path / "py", progress=False, **SHORT)
    subprocess.run([vmlab_bin, "run", "-w", WORKLOAD, *SHORT_FLAGS, "--out",
                    str(tmp_path / "cli")], check=True, capture_output=True)
    for name in ["run.csv", "run.svg"]:
        assert (tmp_path / "py" / name).read_text() == (tmp_path / "cli" / name).read_text()
    py = json.loads((tmp_path / "py" / "run.json").read_text())
    cli = json.loads((tmp_path / "cli" / "run.json").read_text())
    assert without_command(py) == without_command(cli)


def test_progress_reaches_the_callback_in_order():
    events = []
    vmlab.run(WORKLOAD, ["native", "nested"], progress=events.append, **SHORT)
    kinds = [e["event"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "finished"
    assert kinds.count("start") == 2 and kinds.count("finished") == 2
    assert "progress" in kinds
    starts = [e for e in events if e["event"] == "start"]
    assert [(e["index"], e["paging"], e["total"]) for e in starts] == [
        (0, "native", 2), (1, "nested", 2)]
    phases = {e["phase"] for e in events if e["event"] == "progress"}
    assert phases <= {"set-up", "warm-up", "measure"} and "measure" in phases


def test_a_callback_returning_false_stops_the_run():
    events = []

    def stop_at_first(event):
        events.append(event)
        return False

    with pytest.raises(vmlab.Error, match="stopped by the progress callback"):
        vmlab.run(WORKLOAD, ["native", "nested"], progress=stop_at_first, **SHORT)
    assert len(events) == 1


def test_an_exception_in_the_callback_stops_the_run_and_is_raised():
    def fail(event):
        raise RuntimeError("callback failed")

    with pytest.raises(RuntimeError, match="callback failed"):
        vmlab.run(WORKLOAD, progress=fail, **SHORT)


@pytest.mark.parametrize("call, message", [
    (lambda: vmlab.run("nope"), 'unknown workload "nope"; valid workloads: sysbench-mem'),
    (lambda: vmlab.run(WORKLOAD, "native,bogus"), "unknown paging scheme 'bogus'"),
    (lambda: vmlab.run(WORKLOAD, set={"latency.nope": 1}), "unknown key 'latency.nope'"),
    (lambda: vmlab.run(WORKLOAD, set={"latency.dram_ns": -5}), "latency.dram_ns"),
    (lambda: vmlab.run(WORKLOAD, guest_pages="3k"), "3k"),
    (lambda: vmlab.run(WORKLOAD, machine="no-such-machine"), "no-such-machine"),
    (lambda: vmlab.run(WORKLOAD, seeds=0), "seeds= is how many seeds"),
    (lambda: vmlab.run(WORKLOAD, progress="yes"), "progress= is True"),
    (lambda: vmlab.profile("skylake", set={"tlb.nope": 1}), "unknown key"),
])
def test_mistakes_are_value_errors_with_the_commands_message(call, message):
    with pytest.raises(ValueError) as error:
        call()
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_a_failure_that_is_not_the_callers_is_vmlab_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(vmlab.Error, match="cannot write to"):
        vmlab.run(WORKLOAD, "native", out=blocker / "dir", progress=False, **SHORT)
    assert issubclass(vmlab.Error, Exception) and not issubclass(vmlab.Error, ValueError)


def test_ctrl_c_stops_a_long_run_within_a_couple_of_seconds():
    # A whole 1 GiB sysbench run under nested paging takes minutes; SIGINT after 1 s.
    script = textwrap.dedent("""
        import os, signal, threading, time
        import vmlab
        signal.signal(signal.SIGINT, signal.default_int_handler)
        threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        start = time.monotonic()
        try:
            vmlab.run("sysbench-mem:block=1G,mode=rnd", "nested", accesses=0, progress=False)
            print("finished")
        except KeyboardInterrupt:
            print(f"interrupted {time.monotonic() - start:.2f}")
    """)
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, cwd=REPO).stdout.split()
    assert out[0] == "interrupted", out
    assert float(out[1]) < 3.0
    assert time.monotonic() - started < 10


def test_the_catalog_names_what_the_command_lists():
    assert [w["name"] for w in vmlab.workloads()][:3] == ["sysbench-mem", "gups", "tlb-bench"]
    assert [s["name"] for s in vmlab.schemes()] == [
        "native", "nested", "shadow", "agile", "pv", "tpt", "tpt-prototype"]
    assert "skylake" in [p["name"] for p in vmlab.profiles()]
    assert "tpt" in [e["name"] for e in vmlab.experiments()]
    assert vmlab.profile("skylake", set={"latency.dram_ns": 60})["latency"]["dram_ns"] == 60
    assert "[latency]" in vmlab.profile("skylake", toml=True)


def test_a_recorded_program_replays_under_every_scheme(tmp_path):
    import shutil
    if shutil.which("qemu-x86_64") is None or shutil.which("cc") is None:
        from conftest import need
        need("qemu-x86_64 and cc (apt-get install qemu-user gcc)")
    events = []
    trace = tmp_path / "ls.vmtrace"
    recorded = vmlab.record(["ls", "-la", "/usr"], trace, progress=events.append)
    assert recorded["trace"] == str(trace) and trace.stat().st_size == recorded["bytes"]
    assert recorded["trailer"]["complete"]
    totals = recorded["trailer"]["totals"]
    assert totals["events"]["refs"] > 100_000 and totals["processes"] == 1
    assert {e["phase"] for e in events} <= {"running", "merging"}
    frame = vmlab.run(f"trace:file={trace}", ["native", "nested", "shadow"], progress=False)
    assert list(frame["paging"]) == ["native", "nested", "shadow"]
    # The same program, the same faults under every scheme; more walk references nested.
    assert frame["page_faults"].nunique() == 1
    assert frame["walk_refs"].iloc[1] > frame["walk_refs"].iloc[0]
    with pytest.raises(ValueError, match="sample: .* must be at least 1 and at most the period"):
        vmlab.record(["ls"], tmp_path / "x.vmtrace", sample="1M:2M")
