"""Benchmark: effort levels where the length bound is not met (issue 14's "quality grows with
compute").

    .venv/bin/python benchmarks/effort.py [--efforts 0 3] [--gap 0.02] [--max-size 2000]
        [--seed 0] [--name effort] [--from benchmarks/reports/real_quality.json]

Takes the regions of a `benchmarks/real_quality.py` report (JSON) that ended more than
``--gap`` above their length lower bound at their occupancy (at most ``--max-size``
instructions), schedules them with ``jaxsched.schedule(..., effort=k)`` for every level, the
first level being the baseline of the same run, and verifies every schedule. Reports per level:
occupancy sum, total length, the ratio of total length to the baseline's, regions shorter /
longer than the baseline, the bound's total, wall and compile time; per region: length,
occupancy, source and bound. Writes ``benchmarks/reports/NAME.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import harness

import jaxsched
from jaxsched.heuristics.bounds import length_lower_bound_at

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "real-train.jsonl.gz"
REPORTS = ROOT / "benchmarks" / "reports"


def chosen(report: Path, gap: float, max_size: int, data: Path) -> list[jaxsched.Region]:
    """The report's regions more than ``gap`` above their bound, in file order."""
    rows = json.loads(report.read_text())["regions"]
    names = {r["name"] for r in rows if r["gap"] > gap and r["n"] <= max_size}
    return [r for r in jaxsched.load_regions(data) if r.name in names]


def level(regions: list[jaxsched.Region], machine, effort: int, seed: int) -> dict:
    """Schedule ``regions`` at one effort level; every schedule verified."""
    wall, compile_s, _, results = harness.compiles_during(
        lambda: jaxsched.schedule(regions, machine, seed=seed, effort=effort)
    )
    rows = []
    for region, res in zip(regions, results, strict=True):
        jaxsched.verify(region, machine, res.cycles, order=res.order)
        bound = int(length_lower_bound_at(region, machine, res.occupancy))
        rows.append(
            dict(name=region.name, n=len(region), occupancy=res.occupancy, length=res.length,
                 bound=bound, source=res.source, iterations=list(res.iterations))
        )  # fmt: skip
    return dict(effort=effort, wall_s=wall, compile_s=compile_s, regions=rows)


def summary(lv: dict, base: dict) -> dict:
    """Totals of one level and its comparison with the baseline level, region by region."""
    rows, ref = lv["regions"], base["regions"]
    same = [(a, b) for a, b in zip(rows, ref, strict=True) if a["occupancy"] == b["occupancy"]]
    return dict(
        effort=lv["effort"],
        occupancy=sum(r["occupancy"] for r in rows),
        length=sum(r["length"] for r in rows),
        bound=sum(r["bound"] for r in rows),
        ratio=sum(r["length"] for r in rows) / max(1, sum(r["length"] for r in ref)),
        shorter=sum(a["length"] < b["length"] for a, b in same),
        longer=sum(a["length"] > b["length"] for a, b in same),
        occupancy_gained=sum(
            a["occupancy"] > b["occupancy"] for a, b in zip(rows, ref, strict=True)
        ),
        occupancy_lost=sum(a["occupancy"] < b["occupancy"] for a, b in zip(rows, ref, strict=True)),
        wall_s=round(lv["wall_s"], 1),
        compile_s=round(lv["compile_s"], 1),
    )


def markdown(report: dict) -> str:
    s = report["summaries"]
    out = [
        "# Effort levels where the length bound is not met",
        "",
        harness.environment_markdown(report["environment"]),
        "",
        f"`{report['command']}`, seed "
        f"{report['seed']}: the {len(report['levels'][0]['regions'])} regions of "
        f"`{report['from']}` more than {report['gap']:.0%} above their length bound. "
        f"Baseline: effort {s[0]['effort']} of the same run. Every schedule verified.",
        "",
        "| effort | occupancy | total length | vs baseline | shorter / longer | occupancy "
        "+/- | bound | wall s | compile s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for x in s:
        out.append(
            f"| {x['effort']} | {x['occupancy']} | {x['length']:,} | {x['ratio']:.4f} | "
            f"{x['shorter']} / {x['longer']} | {x['occupancy_gained']} / "
            f"{x['occupancy_lost']} | {x['bound']:,} | {x['wall_s']} | {x['compile_s']} |"
        )
    out += ["", "| region | n | bound | " + " | ".join(f"effort {x['effort']}" for x in s) + " |"]
    out.append("|---|---|---|" + "---|" * len(s))
    for i, r in enumerate(report["levels"][0]["regions"]):
        cells = [f"{lv['regions'][i]['length']} ({lv['regions'][i]['source']})"
                 for lv in report["levels"]]  # fmt: skip
        out.append(f"| {r['name']} | {r['n']} | {r['bound']} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--efforts", type=int, nargs="+", default=[0, 3])
    ap.add_argument("--gap", type=float, default=0.02)
    ap.add_argument("--max-size", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--name", default="effort")
    ap.add_argument("--from", dest="source", type=Path, default=REPORTS / "real_quality.json")
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args(argv)
    machine = jaxsched.gfx906()
    regions = chosen(args.source, args.gap, args.max_size, args.data)
    levels = []
    for effort in args.efforts:
        levels.append(level(regions, machine, effort, args.seed))
        print(json.dumps(summary(levels[-1], levels[0])), flush=True)
    report = dict(
        command="python benchmarks/effort.py " + " ".join(argv or sys.argv[1:]),
        environment=harness.environment(),
        seed=args.seed,
        gap=args.gap,
        levels=levels,
        summaries=[summary(lv, levels[0]) for lv in levels],
    )
    report["from"] = str(
        args.source.relative_to(ROOT) if args.source.is_absolute() else args.source
    )
    harness.write_report(args.name, report, markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
