"""vmlab.sweep: a grid over profile keys, run settings and seeds; identical results on this
machine's threads, on a concurrent.futures pool and on a real two-worker Dask cluster."""

import concurrent.futures
import subprocess
import sys
import time

import pytest

import vmlab
from conftest import SHORT, WORKLOAD, need

GRID = dict(paging=["native", "nested"], seeds=[1, 2], sweep={"latency.dram_ns": [60, 90]},
            **SHORT)


@pytest.fixture(scope="module")
def local():
    return vmlab.sweep(WORKLOAD, jobs=2, progress=False, **GRID)


def test_a_row_per_run_with_the_point_first(local):
    # 2 schemes x 2 seeds x 2 values.
    assert local.shape[0] == 8
    assert list(local.columns[:4]) == ["latency.dram_ns", "workload", "paging", "seed"]
    assert list(local["latency.dram_ns"]) == [60] * 4 + [90] * 4
    assert list(local["paging"]) == ["native", "native", "nested", "nested"] * 2
    assert list(local["seed"]) == [1, 2] * 4
    # Each run's report records the point as its override.
    overrides = [r["provenance"]["overrides"] for r in local.attrs["reports"]]
    assert overrides == [{"latency.dram_ns": "60"}] * 4 + [{"latency.dram_ns": "90"}] * 4
    # Slower memory, slower native runs.
    native = local[local["paging"] == "native"].groupby("latency.dram_ns")["seconds"].mean()
    assert native[90] > native[60]


def test_each_run_equals_vmlab_run_of_its_point(local):
    one = vmlab.run(WORKLOAD, "nested", seed=2, set={"latency.dram_ns": 90}, progress=False,
                    **SHORT)
    row = local[(local["paging"] == "nested") & (local["seed"] == 2)
                & (local["latency.dram_ns"] == 90)]
    assert local.attrs["reports"][row.index[0]]["runs"] == one.attrs["report"]["runs"]


def test_results_do_not_depend_on_the_threads_or_the_executor(local):
    events = []
    one_thread = vmlab.sweep(WORKLOAD, jobs=1, progress=events.append, **GRID)
    assert one_thread.equals(local)
    finished = [e for e in events if e["event"] == "finished"]
    assert [e["done"] for e in finished] == list(range(1, 9))
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        pooled = vmlab.sweep(WORKLOAD, executor=pool, progress=False, **GRID)
    assert pooled.equals(local)


def test_a_sweep_over_run_settings():
    frame = vmlab.sweep("tlb-bench:size=64M", paging="nested", progress=False,
                        sweep={"host_pages": ["4k", "2m"], "fragmentation": [0.0, 1.0]},
                        accesses=100_000)
    assert frame.shape[0] == 4
    walks = frame.set_index(["host_pages", "fragmentation"])["walk_refs_per_walk"]
    # 2M host pages shorten the walk's host dimension, unless fragmentation forbids them.
    assert walks[("2m", 0.0)] < walks[("4k", 0.0)]
    assert walks[("2m", 1.0)] == walks[("4k", 1.0)]


@pytest.mark.parametrize("kwargs, message", [
    (dict(sweep={"paging": ["native"]}), "sweep over 'paging' with the paging= keyword"),
    (dict(sweep={"nope": [1]}), "cannot sweep 'nope'"),
    (dict(sweep={"latency.dram_ns": []}), "lists no values"),
    (dict(sweep={"latency.dram_ns": 60}), "is a list of values"),
    (dict(seeds=[1, 1]), "lists a seed twice"),
    (dict(sweep={"latency.nope": [1]}), "unknown key 'latency.nope'"),
])
def test_bad_sweeps_are_value_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        vmlab.sweep(WORKLOAD, progress=False, **SHORT, **kwargs)


def test_an_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="'acesses'"):
        vmlab.sweep(WORKLOAD, acesses=5)


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """A Dask scheduler and two worker processes on loopback, as a cluster's would be
    started (`dask scheduler`, `dask worker`)."""
    try:
        from distributed import Client
    except ImportError:
        need("dask[distributed] (pip install vmlab[dask])")
    scheduler_file = tmp_path_factory.mktemp("dask") / "scheduler.json"
    common = ["--no-dashboard"]
    processes = [subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
         "--port", "0", "--scheduler-file", str(scheduler_file), *common],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists():
            assert time.monotonic() < deadline, "the Dask scheduler did not start"
            time.sleep(0.2)
        for _ in range(2):
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                 str(scheduler_file), "--nthreads", "1", "--nworkers", "1",
                 "--host", "127.0.0.1", *common],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        client = Client(scheduler_file=str(scheduler_file), timeout=60)
        client.wait_for_workers(2, timeout=60)
        yield client
        client.close()
    finally:
        for p in processes:
            p.terminate()
        for p in processes:
            p.wait(timeout=30)


def test_a_two_worker_dask_cluster_gives_the_local_result(local, dask_cluster):
    from distributed import get_task_stream

    events = []
    with get_task_stream(dask_cluster) as stream:
        remote = vmlab.sweep(WORKLOAD, executor=dask_cluster, progress=events.append, **GRID)
    assert remote.equals(local)
    assert [e["done"] for e in events] == list(range(1, 9))
    # The runs were tasks of the cluster's two worker processes.
    assert len(stream.data) == 8
    assert len({task["worker"] for task in stream.data}) == 2
