"""vmlab.labt_sensitivity: the e500 table's sensitivity from a saved replay priced again, on
the small trace of the command's tests."""

import json
import subprocess
from xml.etree import ElementTree

import pytest

import vmlab
from conftest import REPO

SMALL_TRACE = REPO / "crates" / "vmlab-cli" / "tests" / "data" / "labt-small.trace"

pytest.importorskip("SALib")


@pytest.fixture(scope="module")
def saved(tmp_path_factory, vmlab_bin):
    out = tmp_path_factory.mktemp("labt")
    subprocess.run([vmlab_bin, "reproduce", "labt", "--trace", str(SMALL_TRACE),
                    "--out", str(out)], check=True, capture_output=True, cwd=REPO)
    return out / "labt.json"


def test_points_are_priced_again_and_only_sizes_replay(saved):
    result = vmlab.labt_sensitivity(saved, ["kvm/bare", "kvm"], ["null_syscall", "devices"],
                                    trajectories=2, seed=3)
    report = result.report
    k = len(report["assumptions"])
    assert "hv.host_tlb1_reserved" in report["assumptions"]
    # 2 trajectories of k + 1 points, plus the profile as it is.
    assert report["method"]["runs"] == 2 * (k + 1) + 1 == report["method"]["repriced"]
    # Only the size the models act on replays: once per value other than the saved one (4).
    values = {p for p in result.runs["hv.host_tlb1_reserved"].dropna()} - {4}
    assert report["method"]["replays"] == len(values) >= 1
    rows = json.loads(saved.read_text())["rows"]
    row = {(r["benchmark"], r["config"]): r for r in rows}
    summary = result.summary.set_index("result")
    assert summary.loc["null_syscall kvm/bare", "value"] == pytest.approx(
        row[("null_syscall", "kvm")]["seconds"] / row[("null_syscall", "bare")]["seconds"],
        rel=1e-12)
    # The devices benchmark under kvm is moved by the device path's costs, not by the TLB's.
    ranking = result.ranking[result.ranking.result == "devices kvm"]
    top = list(ranking.sort_values("mu_star", ascending=False).assumption[:3])
    assert "mmio.user" in top
    assert all(a in ("core.cpi", "exits.mmio") or a.startswith(("mmio.", "exit.")) for a in top), top
    assert ranking.set_index("assumption").loc["exits.tlbwe", "mu_star"] == 0


def test_a_point_equals_a_replay_under_its_costs(saved):
    result = vmlab.labt_sensitivity(saved, ["kvm"], ["null_syscall"], trajectories=2, seed=5,
                                    assumptions=["exits.syscall", "hv.host_tlb1_reserved"])
    point = result.runs[(result.runs.point == 1)].iloc[0]
    overrides = {"exits.syscall": int(point["exits.syscall"]),
                 "hv.host_tlb1_reserved": int(point["hv.host_tlb1_reserved"])}
    fresh = vmlab.reproduce("labt", trace=SMALL_TRACE, set=overrides, progress=False)
    got = result.runs[result.runs.point == 1][["benchmark", "config", "seconds"]]
    want = fresh[["benchmark", "config", "seconds"]]
    assert got.reset_index(drop=True).equals(want.reset_index(drop=True))


@pytest.mark.parametrize("kwargs, message", [
    ({"results": ["kvm/nope"]}, "among the report's models"),
    ({"benchmarks": ["nope"]}, "the report's benchmarks are"),
    ({"assumptions": ["latency.dram_ns"]}, "not an assumption of the profile"),
])
def test_mistakes_are_value_errors(saved, kwargs, message):
    with pytest.raises(ValueError, match=message):
        vmlab.labt_sensitivity(saved, **kwargs)


def test_the_figure_shows_every_result_and_is_reproducible(saved):
    result = vmlab.labt_sensitivity(saved, ["kvm/bare"], ["null_syscall", "devices"],
                                    trajectories=2, seed=3)
    svg = result.to_svg()
    assert svg == result.to_svg()
    root = ElementTree.fromstring(svg)
    assert root.tag.endswith("svg")
    for name in ("null_syscall kvm/bare", "devices kvm/bare", "mmio.user"):
        assert name in svg


def test_the_command_prints_the_labt_table(saved, vmlab_bin, tmp_path):
    svg = tmp_path / "s.svg"
    out = subprocess.run([vmlab_bin, "sensitivity", "--labt", str(saved), "--result", "kvm",
                          "--benchmark", "devices", "--trajectories", "2", "--json",
                          "--svg", str(svg)],
                         capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert [r["result"] for r in report["results"]] == ["devices kvm"]
    assert "devices kvm" in svg.read_text()
    bad = subprocess.run([vmlab_bin, "sensitivity", "--labt", str(saved), "--benchmark",
                          "nope"], capture_output=True, text=True, cwd=REPO)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
