"""Benchmark: share of generated regions solved to proven optimality (both passes) within 1 s / 10 s
by size, the exact search against the CP-SAT model of `tests/test_exact_cpsat.py` in the same run,
and the colony's gap to the proven optimum where `jaxsched.schedule` exists.

    .venv/bin/python benchmarks/exact.py [--quick] [--count 6] [--sizes 10,20,...]

Compile time (one warm-up solve per size bucket) is recorded apart from run times. Writes
``benchmarks/reports/exact.{md,json}``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import time
from pathlib import Path

import harness

import jaxsched
from jaxsched.exact import solve_two_pass
from jaxsched.machines.model import gfx906
from jaxsched.problem.generate import generate_region
from jaxsched.problem.padded import bucket_size
from jaxsched.verify import verify, verify_order

HERE = Path(__file__).resolve().parent
#: The CP-SAT model the exact search is compared with: the one its test checks it against.
CPSAT_MODEL = harness.ROOT / "tests" / "test_exact_cpsat.py"


def _cpsat():
    """`solve_cpsat` of `CPSAT_MODEL`, loaded from its path (no import path changed); None
    without ortools (a test-only dependency) or when the model does not load."""
    if importlib.util.find_spec("ortools") is None:
        return None
    try:
        spec = importlib.util.spec_from_file_location("test_exact_cpsat", CPSAT_MODEL)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except Exception:
        return None
    return module.solve_cpsat


def _exact(region, machine, budget):
    t0 = time.perf_counter()
    res = solve_two_pass(region, machine, time_budget=budget / 2)
    sec = time.perf_counter() - t0
    verify_order(region, machine, res.rp.order)
    verify(region, machine, res.length.cycles, order=res.length.order)
    return res, sec


def _colony(region, machine):
    if not hasattr(jaxsched, "schedule"):
        return None
    try:
        out = jaxsched.schedule([region], machine)
        r = out[0] if isinstance(out, list | tuple) else out
        return int(r.rp_cost), int(r.length)
    except Exception as e:  # API still moving: report, do not crash the benchmark
        return f"error: {type(e).__name__}: {e}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, short budgets (< 1 min)")
    ap.add_argument("--sizes", default=None, help="comma-separated instruction counts")
    ap.add_argument("--count", type=int, default=None, help="regions per size")
    ap.add_argument("--budget", type=float, default=None, help="seconds per region (both passes)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-cpsat", action="store_true")
    ap.add_argument("--out", default=str(HERE / "reports" / "exact"))
    a = ap.parse_args(argv)
    sizes = (
        [int(s) for s in a.sizes.split(",")]
        if a.sizes
        else ([10, 16, 24] if a.quick else [10, 20, 30, 50, 75, 100])
    )
    count = a.count or (3 if a.quick else 6)
    budget = a.budget or (2.0 if a.quick else 10.0)
    machine = gfx906()
    cpsat = None if a.no_cpsat else _cpsat()

    rows = []
    compile_s: dict[int, float] = {}
    for n in sizes:
        b = bucket_size(n)
        if b not in compile_s:  # warm-up: compile for this bucket (not counted in the table)
            t0 = time.perf_counter()
            solve_two_pass(generate_region(10_000 + n, n), machine, time_budget=budget / 2)
            compile_s[b] = time.perf_counter() - t0
        for k in range(count):
            region = generate_region(a.seed * 1000 + n * 10 + k, n)
            res, sec = _exact(region, machine, budget)
            row = {
                "n": n,
                "region": region.name,
                "exact_seconds": sec,
                "exact_optimal": res.optimal,
                "rp": list(res.rp.upper),
                "rp_lower": list(res.rp.lower),
                "length": res.length.length,
                "length_lower": res.length.lower[0],
                "nodes": res.rp.nodes + res.length.nodes,
            }
            if cpsat is not None:
                s1, _, t1 = cpsat(region, machine, "rp", seconds=budget / 2)
                s2, v2, t2 = cpsat(
                    region, machine, "length", rp_target=res.rp.rp_cost, seconds=budget / 2
                )
                row.update(
                    cpsat_seconds=t1 + t2, cpsat_optimal=s1 == s2 == "OPTIMAL", cpsat_length=v2
                )
            col = _colony(region, machine)
            if col is not None:
                row["colony"] = col
                if isinstance(col, tuple) and res.length.optimal:
                    row["colony_length_gap"] = (col[1] - res.length.length) / res.length.length
            rows.append(row)
            print(json.dumps(row), flush=True)

    summary = []
    for n in sizes:
        rs = [r for r in rows if r["n"] == n]
        s = {
            "n": n,
            "exact_1s": sum(r["exact_optimal"] and r["exact_seconds"] <= 1 for r in rs) / len(rs),
            "exact_10s": sum(r["exact_optimal"] and r["exact_seconds"] <= 10 for r in rs) / len(rs),
            "exact_median_s": statistics.median(r["exact_seconds"] for r in rs),
        }
        if cpsat is not None:
            s["cpsat_1s"] = sum(r["cpsat_optimal"] and r["cpsat_seconds"] <= 1 for r in rs) / len(
                rs
            )
            s["cpsat_10s"] = sum(r["cpsat_optimal"] and r["cpsat_seconds"] <= 10 for r in rs) / len(
                rs
            )
            s["cpsat_median_s"] = statistics.median(r["cpsat_seconds"] for r in rs)
            s["time_ratio_cpsat_over_exact"] = s["cpsat_median_s"] / s["exact_median_s"]
        gaps = [r["colony_length_gap"] for r in rs if "colony_length_gap" in r]
        if gaps:
            s["colony_mean_length_gap"] = statistics.mean(gaps)
        summary.append(s)

    meta = harness.environment(
        machine=machine.name,
        budget_s_per_region=budget,
        count_per_size=count,
        compile_warmup_s_by_bucket=compile_s,
        quick=a.quick,
        colony=hasattr(jaxsched, "schedule"),
    )
    out = Path(a.out)
    lines = [
        "# Exact search: regions solved to proven optimality (two passes)",
        "",
        harness.environment_markdown(meta),
        "",
        f"Machine {machine.name}, {count} generated regions per size, budget {budget} s per region "
        f"(both passes). Warm-up (compile included) per bucket, not in the table: "
        + ", ".join(f"N={b}: {s:.1f} s" for b, s in compile_s.items())
        + ".",
        "",
        "| n | exact <=1 s | exact <=10 s | exact median s | CP-SAT <=1 s | CP-SAT <=10 s | "
        "CP-SAT median s | CP-SAT/exact time | colony length gap |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:

        def f(key, fmt="{:.0%}", s=s):
            return fmt.format(s[key]) if key in s else "-"

        lines.append(
            f"| {s['n']} | {f('exact_1s')} | {f('exact_10s')} | {f('exact_median_s', '{:.2f}')} | "
            f"{f('cpsat_1s')} | {f('cpsat_10s')} | {f('cpsat_median_s', '{:.2f}')} | "
            f"{f('time_ratio_cpsat_over_exact', '{:.1f}x')} | "
            f"{f('colony_mean_length_gap', '{:.1%}')} |"
        )
    data = {"meta": meta, "summary": summary, "rows": rows}
    harness.write_report_at(out, data, "\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
