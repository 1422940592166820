"""``vmlab.sensitivity``: how much a result moves over the plausible ranges of the profile's
assumptions, and which assumptions move it most.

The ranges are the profile's ``[assumptions]`` table (docs/model.md, "Assumptions and their
ranges"). The method is Morris's elementary effects (a global screening method), sampled and
analysed by SALib: ``trajectories`` random one-at-a-time paths through a ``levels``-level grid
of the ranges, k + 1 points each for k assumptions; at every point every scheme runs once
(through the sweep machinery, so on this machine's threads or any executor). Each result's
range is the lowest and highest value over all points; its ranking is the assumptions by
``mu_star``, the mean absolute elementary effect (in the result's own unit, over the whole
range), with its bootstrap confidence interval and ``sigma`` (interaction or nonlinearity).

Every point is simulated again: none of the costs is a pure re-pricing here, because the
simulated time decides when timer ticks fall and when the warm-up has converged, and both
change event counts.
"""

from __future__ import annotations

import json
import math
from importlib import metadata
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import pandas as pd

from ._catalog import profile as load_profile
from ._frames import runs_frame
from ._progress import ProgressArg
from ._spec import SPEC_FIELDS, command, paging_list, run_spec
from ._sweep import execute

#: The default Morris design: 4 trajectories on a 4-level grid.
TRAJECTORIES = 4
LEVELS = 4


@dataclass
class Sensitivity:
    """What :func:`sensitivity` found.

    - ``summary``: a row per result: its value under the profile as it is (``value``), its
      ``low`` and ``high`` over the sampled points, and the assumption that moves it most.
    - ``ranking``: a row per result and assumption, most influential first: ``mu_star``
      (mean absolute elementary effect, in the result's unit), ``mu_star_conf`` (its 95%
      bootstrap half-width), ``mu`` and ``sigma``.
    - ``runs``: a row per run (the point's values first, then every counter).
    - ``report``: all of it as plain data (the JSON ``vmlab sensitivity --json`` prints):
      the method, the spec, every assumption's range and reasoning, the results.
    """

    summary: pd.DataFrame
    ranking: pd.DataFrame
    runs: pd.DataFrame = field(repr=False)
    report: Dict[str, Any] = field(repr=False)

    def __str__(self) -> str:
        return render(self.report)

    def to_json(self) -> str:
        """The report as JSON (keys sorted, two-space indent)."""
        return json.dumps(self.report, indent=2, sort_keys=True) + "\n"

    def figure(self, top: int = 6) -> Any:
        """A matplotlib figure: every result's value with its range over the assumptions
        (relative to the value, so results of different units share an axis), then per
        result its most influential assumptions by mu* with their 95% intervals."""
        return figure(self.report, top)

    def to_svg(self, top: int = 6) -> str:
        """:meth:`figure` as SVG text (no date in it, so the same report gives the same
        file)."""
        import io
        fig = self.figure(top)
        out = io.StringIO()
        fig.savefig(out, format="svg", metadata={"Date": None}, bbox_inches="tight")
        import matplotlib.pyplot as plt
        plt.close(fig)
        return out.getvalue()


def morris_design(ranges: Mapping[str, Mapping[str, Any]], trajectories: int, levels: int,
                  seed: int) -> Tuple[Dict[str, Any], Any]:
    """SALib's problem over ``ranges`` and its Morris design (one row per point)."""
    _positive("trajectories", trajectories, 2)
    _positive("levels", levels, 2)
    names = list(ranges)
    problem = {"num_vars": len(names), "names": names,
               "bounds": [[ranges[n]["low"], ranges[n]["high"]] for n in names]}
    design = _salib_sample().sample(problem, trajectories, num_levels=levels, seed=seed)
    return problem, design


def sensitivity(
    workload: str,
    paging: Union[str, Sequence[str]] = ("native", "nested"),
    results: Optional[Sequence[str]] = None,
    machine: Optional[str] = None,
    *,
    assumptions: Union[None, Sequence[str], Mapping[str, Tuple[float, float]]] = None,
    trajectories: int = TRAJECTORIES,
    levels: int = LEVELS,
    seed: int = 1,
    set: Optional[Mapping[str, Any]] = None,
    executor: Any = None,
    jobs: Optional[int] = None,
    progress: ProgressArg = True,
    **settings: Any,
) -> Sensitivity:
    """Varies the assumptions of ``machine``'s profile over their ranges and reports how
    much each of ``results`` moves and which assumptions move it most (Morris elementary
    effects, SALib).

    ``results`` names what to look at: ``"nested"`` (that scheme's time in seconds) or
    ``"nested/native"`` (the ratio of two schemes' times); by default every scheme's time
    over the first scheme's. ``assumptions`` is every assumption of the profile by default,
    a list of their keys, or a dict of keys to ``(low, high)`` to use other ranges (any
    numeric profile key then). ``trajectories`` and ``levels`` shape the Morris design
    (``trajectories x (k + 1)`` points for k assumptions, each running every scheme);
    ``seed`` seeds its sampling and the bootstrap; ``settings`` are ``vmlab.run``'s keywords
    (``accesses=``, ``warmup=``, ``guest_pages=``, ..., and ``seed=`` for the workload's own
    seed). ``set`` fixes other profile keys for every run.
    """
    for key in settings:
        if key not in SPEC_FIELDS + ("seed",):
            raise TypeError(f"sensitivity() got an unexpected keyword argument {key!r}")
    schemes = paging_list(paging)
    wanted = ratio_results(results, schemes, "scheme", "paging=")
    base = load_profile(machine or "skylake", set=set)
    ranges = assumption_ranges(base, assumptions)
    problem, design = morris_design(ranges, trajectories, levels, seed)
    names = problem["names"]
    points = [design_point(base, names, row) for row in design]
    # The profile as it is, first: each result's value.
    points.insert(0, {})
    run_seed = settings.pop("seed", 1)
    comparisons = []
    for point in points:
        spec = run_spec(workload, run_seed, dict(settings, machine=machine),
                        {**(set or {}), **point})
        for scheme in schemes:
            comparisons.append(json.dumps({"spec": spec, "schemes": [scheme], "seeds": 1}))
    call = command("sensitivity", dict(workload=workload, paging=paging, results=results,
                                       machine=machine, assumptions=assumptions,
                                       trajectories=trajectories, levels=levels, seed=seed,
                                       set=set, **settings))
    texts = execute(comparisons, call, executor, jobs, progress, "vmlab.sensitivity")
    runs = [json.loads(t)["runs"][0] for t in texts]
    seconds = [{s: runs[i * len(schemes) + j]["seconds"] for j, s in enumerate(schemes)}
               for i in range(len(points))]
    out_results = [analyse(name, [value_of(s) for s in seconds], problem, design, levels, seed)
                   for name, value_of in wanted]
    report = {
        "method": {"name": "morris", "library": f"SALib {metadata.version('SALib')}",
                   "trajectories": trajectories, "levels": levels, "seed": seed,
                   "points": len(points) - 1, "runs": len(comparisons)},
        "spec": {"workload": workload, "paging": schemes, "machine": base["machine"]["name"],
                 "set": {k: str(v) for k, v in (set or {}).items()}, "seed": run_seed,
                 **{k: v for k, v in settings.items() if v is not None}},
        "assumptions": {n: {**ranges[n], "value": value_at(base, n)} for n in names},
        "results": out_results,
        "provenance": json.loads(texts[0])["provenance"] | {"command": call},
    }
    leading = [{"point": i, **p} for i, p in enumerate(points) for _ in schemes]
    return Sensitivity(summary=summary_frame(out_results), ranking=ranking_frame(out_results),
                       runs=runs_frame(runs, leading), report=report)


def _salib_sample():
    try:
        from SALib.sample import morris as morris_sample
    except ImportError as e:
        raise ImportError(
            "vmlab.sensitivity needs SALib: pip install './crates/vmlab-py[sensitivity]'"
        ) from e
    return morris_sample


def analyse(name: str, values: List[float], problem: Mapping[str, Any], design: Any,
            levels: int, seed: int) -> Dict[str, Any]:
    """One result's Morris analysis: ``values[0]`` is its value at the profile, the rest one
    per point of ``design``; its range and the assumptions ranked by mu*."""
    from SALib.analyze import morris as morris_analyze
    analysis = morris_analyze.analyze(problem, design, pd.Series(values[1:]).to_numpy(),
                                      num_levels=levels, seed=seed)
    ranking = sorted(
        ({"assumption": n, "mu_star": float(analysis["mu_star"][i]),
          "mu_star_conf": _finite(analysis["mu_star_conf"][i]),
          "mu": float(analysis["mu"][i]), "sigma": _finite(analysis["sigma"][i])}
         for i, n in enumerate(problem["names"])),
        key=lambda r: -r["mu_star"])
    return {"result": name, "value": values[0], "low": min(values), "high": max(values),
            "ranking": ranking}


def _positive(name: str, value: Any, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name}= must be an integer of at least {least}, not {value!r}")


def _finite(x: Any) -> Optional[float]:
    x = float(x)
    return x if math.isfinite(x) else None


def ratio_results(results: Optional[Sequence[str]], schemes: List[str], what: str = "scheme",
                  among: str = "paging="):
    """Each result's name and how it is computed from the schemes' seconds at a point."""
    if results is None:
        results = [f"{s}/{schemes[0]}" for s in schemes[1:]] or schemes[:1]
    if isinstance(results, str):
        results = [results]
    out = []
    for name in results:
        parts = [p.strip() for p in str(name).split("/")]
        unknown = [p for p in parts if p not in schemes]
        if len(parts) > 2 or not all(parts) or unknown:
            raise ValueError(
                f"result {name!r}: a {what}'s time ({schemes[-1]!r}) or a ratio of two "
                f"('{schemes[-1]}/{schemes[0]}') among {among} ({', '.join(schemes)})")
        if len(parts) == 1:
            out.append((name, lambda s, a=parts[0]: s[a]))
        else:
            out.append((name, lambda s, a=parts[0], b=parts[1]: s[a] / s[b]))
    return out


def value_at(profile: Mapping[str, Any], key: str) -> Any:
    here: Any = profile
    for part in key.split("."):
        if not isinstance(here, Mapping) or part not in here:
            raise ValueError(f"the profile has no key {key!r}")
        here = here[part]
    return here


def assumption_ranges(profile: Mapping[str, Any], assumptions: Any) -> Dict[str, Dict[str, Any]]:
    """The ranges to vary: the profile's assumptions (all, or those named), or the given."""
    known = profile.get("assumptions", {})
    if assumptions is None:
        chosen = {k: dict(v) for k, v in known.items()}
    elif isinstance(assumptions, Mapping):
        chosen = {}
        for key, bounds in assumptions.items():
            try:
                low, high = (float(b) for b in bounds)
            except (TypeError, ValueError):
                raise ValueError(f"assumptions[{key!r}] is (low, high), not {bounds!r}") from None
            if not low < high:
                raise ValueError(f"assumptions[{key!r}]: low ({low}) must be below high ({high})")
            chosen[key] = {"low": low, "high": high, "why": "given by the caller"}
    else:
        chosen = {}
        for key in assumptions:
            if key not in known:
                raise ValueError(f"{key!r} is not an assumption of the profile; its assumptions: "
                                 f"{', '.join(known)}")
            chosen[key] = dict(known[key])
    if not chosen:
        raise ValueError("no assumptions to vary: the profile has no [assumptions] table")
    for key in chosen:
        value = value_at(profile, key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{key!r} is not a number, so it has no range")
    return chosen


def design_point(profile: Mapping[str, Any], names: List[str], row: Sequence[float]) -> Dict[str, Any]:
    """One point of the design as profile overrides: integer values rounded, and a fully
    associative structure's ways kept equal to its entries."""
    point: Dict[str, Any] = {}
    for key, x in zip(names, row):
        value = value_at(profile, key)
        point[key] = int(round(x)) if isinstance(value, int) else float(x)
        section, *rest = key.split(".")
        if len(rest) == 2 and rest[1] == "entries":
            structure = profile[section][rest[0]]
            if structure.get("ways") == structure.get("entries"):
                point[f"{section}.{rest[0]}.ways"] = point[key]
    return point


def summary_frame(results: List[Dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame([{
        "result": r["result"], "value": r["value"], "low": r["low"], "high": r["high"],
        "most_influential": r["ranking"][0]["assumption"],
    } for r in results])


def ranking_frame(results: List[Dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame([{"result": r["result"], **row} for r in results for row in r["ranking"]])


def figure(report: Mapping[str, Any], top: int = 6) -> Any:
    """See :meth:`Sensitivity.figure`."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams["svg.hashsalt"] = "vmlab"
    results = report["results"]
    fig, axes = plt.subplots(len(results) + 1, 1, squeeze=False,
                             figsize=(7.5, 1.2 + 0.45 * len(results)
                                      + sum(0.9 + 0.28 * min(top, len(r["ranking"]))
                                            for r in results)),
                             gridspec_kw={"height_ratios": [0.6 + 0.35 * len(results)] + [
                                 0.5 + 0.28 * min(top, len(r["ranking"])) for r in results]})
    ranges = axes[0][0]
    names = [r["result"] for r in results][::-1]
    for y, r in enumerate(results[::-1]):
        value = r["value"] or float("nan")
        low, high = r["low"] / value, r["high"] / value
        ranges.plot([low, high], [y, y], color="#4c72b0", linewidth=3, solid_capstyle="butt")
        ranges.plot([1.0], [y], "o", color="#c44e52")
        ranges.annotate(f"{r['value']:.3g}  ({r['low']:.3g} .. {r['high']:.3g})", (high, y),
                        xytext=(6, -3), textcoords="offset points", fontsize=8)
    ranges.set_yticks(range(len(names)), names, fontsize=8)
    ranges.axvline(1.0, color="#999999", linewidth=0.8, linestyle=":")
    ranges.set_xlabel("range over the assumptions, relative to the value at the profile", fontsize=8)
    m = report["method"]
    ranges.set_title(f"sensitivity of {report['spec']['workload']} on {report['spec']['machine']}"
                     f" (Morris, {m['trajectories']} trajectories, {m['runs']} runs)", fontsize=9)
    for ax, r in zip((a[0] for a in axes[1:]), results):
        shown = [row for row in r["ranking"][:top] if row["mu_star"] > 0][::-1]
        if not shown:
            ax.text(0.5, 0.5, "no assumption moves it", ha="center", va="center", fontsize=8,
                    transform=ax.transAxes)
            ax.set_axis_off()
        ax.barh([row["assumption"] for row in shown], [row["mu_star"] for row in shown],
                xerr=[row["mu_star_conf"] or 0.0 for row in shown], color="#55a868",
                error_kw={"elinewidth": 0.8, "capsize": 2})
        ax.set_title(f"{r['result']}: mu* (mean absolute elementary effect)", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.tight_layout()
    return fig


def render(report: Mapping[str, Any], top: int = 8) -> str:
    """The report as text: per result its value, range and the most influential
    assumptions."""
    m = report["method"]
    lines = [
        f"sensitivity of {report['spec']['workload']} on {report['spec']['machine']}: Morris "
        f"elementary effects ({m['library']}), {m['trajectories']} trajectories x "
        f"{len(report['assumptions']) + 1} points, {m['levels']} levels: {m['runs']} runs",
    ]
    for r in report["results"]:
        lines.append("")
        lines.append(f"{r['result']}: {r['value']:.4g} at the profile's values, "
                     f"{r['low']:.4g} .. {r['high']:.4g} over the assumptions' ranges")
        lines.append(f"  {'assumption':<28} {'range':>21} {'mu*':>10} {'± 95%':>9} {'sigma':>10}")
        for row in r["ranking"][:top]:
            a = report["assumptions"][row["assumption"]]
            conf = "" if row["mu_star_conf"] is None else f"{row['mu_star_conf']:.3g}"
            sigma = "" if row["sigma"] is None else f"{row['sigma']:.3g}"
            lines.append(f"  {row['assumption']:<28} {a['low']:>10.4g}..{a['high']:<10.4g}"
                         f" {row['mu_star']:>10.3g} {conf:>9} {sigma:>10}")
        if len(r["ranking"]) > top:
            lines.append(f"  ... {len(r['ranking']) - top} more (--json has every one)")
    return "\n".join(lines) + "\n"
