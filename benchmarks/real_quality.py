"""Benchmark: schedule quality on real regions (the shared gfx906 corpus), per size class.

    .venv/bin/python benchmarks/real_quality.py [--split valid] [--limit 40] [--effort 0]
        [--ants 256] [--seed 0] [--name real_quality] [--before OLD.json]

The corpus (``../shared/data/real-train.jsonl.gz``: public OpenCL/HIP kernels compiled for gfx906)
is split by source (`jaxsched.problem.split.split_by_source`, 20% of the sources validate).
Every returned schedule is verified. Per size class (5-49, 50-199, 200-999, 1000+ instructions):

* occupancy sum: ours, the input order's, the best list schedule's (CP or LUC first);
* total length at equal occupancy (regions where ours equals the input order's) against the
  input order and against the length lower bound at that occupancy
  (`jaxsched.heuristics.length_lower_bound_at`: the latency bound, and the register-time area,
  slot and windowed bounds of the occupancy's RP limits);
* regions more than 2% / 20% above the length bound, and the 20% ones where a list schedule at
  the same occupancy is within 5% of the bound (the issue's "must not happen" set);
* wall time and compile time.

Regions more than 2% above the bound are listed in the JSON with what happened (iterations,
source, starts). ``--before OLD.json`` prints the classes side by side with an earlier report.
``--rebound REPORT.json`` schedules nothing: it recomputes every region's length bound of an
earlier report with today's `length_lower_bound_at` (same schedules, same occupancies) and
writes the report again, the old bound kept as ``lb_old`` (use it when only the bound changed).
Writes ``benchmarks/reports/NAME.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import harness
import numpy as np

import jaxsched
from jaxsched.heuristics import issue_cycles
from jaxsched.heuristics.bounds import length_lower_bound_at
from jaxsched.heuristics.list_scheduler import list_schedule_batch
from jaxsched.problem.split import split_by_source

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "real-train.jsonl.gz"
REPORTS = ROOT / "benchmarks" / "reports"
CLASSES = (("5-49", 0, 50), ("50-199", 50, 200), ("200-999", 200, 1000), ("1000+", 1000, 10**9))


def size_class(n: int) -> str:
    return next(name for name, lo, hi in CLASSES if lo <= n < hi)


def load(split: str, limit: int | None, path: Path) -> list[jaxsched.Region]:
    """The split's regions, at most ``limit`` per size class (the first in file order)."""
    regions = jaxsched.load_regions(path)
    train, valid = split_by_source(regions)
    chosen = {"valid": valid, "train": train, "all": regions}[split]
    if limit is None:
        return chosen
    out, count = [], {}
    for r in chosen:
        c = size_class(len(r))
        if count.get(c, 0) < limit:
            out.append(r)
            count[c] = count.get(c, 0) + 1
    return out


def references(regions: Sequence[jaxsched.Region], machine) -> list[dict]:
    """Per region: the input order's and the list schedules' (length, occupancy)."""
    cp = list_schedule_batch(regions, machine, priority=("cp", "luc", "nid"), latencies=True)
    luc = list_schedule_batch(regions, machine, priority=("luc", "cp", "nid"), latencies=True)
    out = []
    for k, region in enumerate(regions):
        order = np.arange(len(region))
        rep = jaxsched.verify(region, machine, issue_cycles(region, order), order=order)
        lists = [(int(s.length), int(s.occupancy)) for s in (cp[k], luc[k])]
        out.append({"input": (rep.length, rep.occupancy), "lists": lists})
    return out


def per_region(region, res, ref: dict, machine) -> dict:
    rep = jaxsched.verify(region, machine, res.cycles, order=res.order)
    assert rep.length == res.length and rep.occupancy == res.occupancy
    lb = max(res.length_lower_bound, length_lower_bound_at(region, machine, res.occupancy))
    assert res.length >= lb
    near = [ln for ln, occ in ref["lists"] if occ == res.occupancy and ln <= 1.05 * lb]
    return {
        "name": region.name,
        "n": len(region),
        "class": size_class(len(region)),
        "length": res.length,
        "occupancy": res.occupancy,
        "lb": lb,
        "latency_lb": res.length_lower_bound,
        "input_length": ref["input"][0],
        "input_occupancy": ref["input"][1],
        "list_best_occupancy": max(o for _, o in ref["lists"]),
        "gap": res.length / max(lb, 1) - 1.0,
        "list_near_bound": bool(near),
        "source": res.source,
        "iterations": list(res.iterations),
        "heuristic": [res.heuristic_length, res.heuristic_occupancy],
    }


def rebound(report: dict, regions: Sequence[jaxsched.Region], machine) -> dict:
    """``report`` with each region's bound (and gap) recomputed; ``lb_old`` keeps the old one."""
    by_name = {r.name: r for r in regions}
    rows = []
    for row in report["regions"]:
        region = by_name[row["name"]]
        lb = max(row["latency_lb"], length_lower_bound_at(region, machine, row["occupancy"]))
        assert row["length"] >= lb, (row["name"], row["length"], lb)
        near = row["list_near_bound"] and row["lb"] <= lb  # a tighter bound keeps it near
        gap = row["length"] / max(lb, 1) - 1.0
        rows.append({**row, "lb": lb, "lb_old": row["lb"], "gap": gap, "list_near_bound": near})
    settings = {**report["settings"], "bounds": "recomputed (--rebound)"}
    return {**report, "settings": settings, "regions": rows, **summaries(rows)}


def summaries(rows: list[dict]) -> dict:
    """The per-class and overall summaries of a report's rows."""
    classes = {
        c: summarize([r for r in rows if r["class"] == c])
        for c, _, _ in CLASSES
        if any(r["class"] == c for r in rows)
    }
    return {"classes": classes, "all": summarize(rows)}


def summarize(rows: list[dict]) -> dict:
    eq = [r for r in rows if r["occupancy"] == r["input_occupancy"]]
    tot, inp, lb = (sum(r[k] for r in eq) for k in ("length", "input_length", "lb"))
    return {
        "regions": len(rows),
        "occupancy": sum(r["occupancy"] for r in rows),
        "occupancy_input": sum(r["input_occupancy"] for r in rows),
        "occupancy_list": sum(r["list_best_occupancy"] for r in rows),
        "occupancy_gained": sum(r["occupancy"] > r["input_occupancy"] for r in rows),
        "occupancy_lost": sum(r["occupancy"] < r["input_occupancy"] for r in rows),
        "equal_occupancy_regions": len(eq),
        "length_equal_occupancy": tot,
        "input_length_equal_occupancy": inp,
        "lb_equal_occupancy": lb,
        "vs_input": tot / max(inp, 1) - 1.0,
        "vs_bound": tot / max(lb, 1) - 1.0,
        "over_2pct": sum(r["gap"] > 0.02 for r in rows),
        "over_20pct": sum(r["gap"] > 0.20 for r in rows),
        "over_20pct_list_near": sum(r["gap"] > 0.20 and r["list_near_bound"] for r in rows),
    }


def markdown(report: dict, before: dict | None) -> str:
    head = (
        "| class | regions | occupancy (input / list / ours) | length at equal occ. vs input "
        "| vs bound | >2% | >20% | >20% with a list schedule within 5% |"
    )
    lines = [
        f"# Schedule quality on real regions ({report['settings']['split']} split)",
        "",
        harness.environment_markdown(report["environment"])
        if "environment" in report
        else f"Machine: {report['machine']}.",  # an older report (--rebound)
        "",
        f"Settings: `{json.dumps(report['settings'])}`.",
        f"Wall {report['seconds']:.0f} s, of which {report['compile_seconds']:.0f} s compiling.",
        "",
        head,
        "|---|---|---|---|---|---|---|---|",
    ]
    classes = [*report["classes"], "all"]
    for c in classes:
        for label, rep in (("", report), ("before", before)):
            s = (rep or {}).get("classes", {}).get(c) if c != "all" else (rep or {}).get("all")
            if s is None:
                continue
            name = c if not label else f"{c} (before)"
            lines.append(
                f"| {name} | {s['regions']} | {s['occupancy_input']} / {s['occupancy_list']} / "
                f"{s['occupancy']} | {100 * s['vs_input']:+.2f}% | {100 * s['vs_bound']:+.2f}% "
                f"| {s['over_2pct']} | {s['over_20pct']} | {s['over_20pct_list_near']} |"
            )
    worst = sorted(report["regions"], key=lambda r: -r["gap"])[:15]
    lines += [
        "",
        "Largest gaps to the length bound:",
        "",
        "| region | n | length | bound | gap | occ | source | iterations |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in worst:
        lines.append(
            f"| {r['name']} | {r['n']} | {r['length']} | {r['lb']} | {100 * r['gap']:.1f}% | "
            f"{r['occupancy']} | {r['source']} | {r['iterations']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--split", choices=("valid", "train", "all"), default="valid")
    ap.add_argument("--limit", type=int, default=None, help="regions per size class")
    ap.add_argument("--ants", type=int, default=None)
    ap.add_argument("--effort", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--name", default="real_quality")
    ap.add_argument("--before", type=Path, default=None, help="an earlier report (JSON)")
    ap.add_argument("--rebound", type=Path, default=None, help="recompute a report's bounds")
    args = ap.parse_args(argv)
    machine = jaxsched.gfx906()
    before = json.loads(args.before.read_text()) if args.before else None
    if args.rebound:
        old = json.loads(args.rebound.read_text())
        regions = load(old["settings"]["split"], old["settings"]["limit"], args.data)
        return write(rebound(old, regions, machine), before, args.name)
    regions = load(args.split, args.limit, args.data)
    overrides = {k: v for k, v in (("ants", args.ants), ("effort", args.effort)) if v is not None}
    refs = references(regions, machine)
    seconds, compiled, _, results = harness.compiles_during(
        lambda: jaxsched.schedule(regions, machine, seed=args.seed, **overrides)
    )
    rows = [per_region(*x, machine) for x in zip(regions, results, refs, strict=True)]
    report = {
        "settings": {"split": args.split, "limit": args.limit, "seed": args.seed, **overrides},
        "environment": harness.environment(),
        "seconds": seconds,
        "compile_seconds": compiled,
        **summaries(rows),
        "regions": rows,
    }
    return write(report, before, args.name)


def write(report: dict, before: dict | None, name: str) -> int:
    """Write ``benchmarks/reports/NAME.{json,md}`` and print the Markdown."""
    text = markdown(report, before)
    harness.write_report(name, report, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
