"""Benchmark: the colony on 1, 2, 4 and 8 forced CPU devices over the same corpus, in one run.

    .venv/bin/python benchmarks/scaling.py [--quick] [--regions 64] [--iterations 10] [--repeats 3]
        [--name scaling]

The devices are XLA's forced host devices (``--xla_force_host_platform_device_count=8``, set
here before JAX starts): one thread each, sharing this machine's cores. Every configuration
(the default single-device path, the baseline, and ``schedule(..., devices=D)``) first runs
once to compile (compile time reported apart; its results must equal the baseline's, bit for
bit); then the configurations run in turn ``--repeats`` times and the best wall time of each
gives regions/s (the best is the run least disturbed by other work on the machine; the median
and the process CPU time are reported too).

Writes ``benchmarks/reports/scaling.{md,json}``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import harness
import jax

import jaxsched
from jaxsched.problem.generate import generate_regions

HERE = Path(__file__).resolve().parent
DEVICES = (1, 2, 4, 8)
TIMING = ("compile_seconds", "run_seconds")


def corpus(count: int) -> list:
    """``count`` generated regions of one bucket (33..64 instructions)."""
    return [r for r in generate_regions(11, 8 * count, 33, 64) if len(r) > 32][:count]


def records(out: list) -> list[dict]:
    return [{k: v for k, v in r.to_dict().items() if k not in TIMING} for r in out]


def run_once(regions: list, settings: dict, devices) -> tuple[float, float, list]:
    """(wall seconds, process CPU seconds, results) of one `schedule` call."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = jaxsched.schedule(regions, devices=devices, **settings)
    return time.perf_counter() - t0, time.process_time() - c0, out


def measure(regions: list, settings: dict, configs: list, repeats: int) -> dict:
    """Per configuration: compile seconds, results (first call), wall and CPU seconds of the
    timed calls (round-robin over the configurations, so load changes hit them alike)."""
    out = {}
    for d in configs:
        _, compile_s, _, res = harness.compiles_during(
            lambda d=d: jaxsched.schedule(regions, devices=d, **settings)
        )
        out[d] = {"compile_s": compile_s, "records": records(res)}
        out[d].update(wall=[], cpu=[])
        print(f"devices {d}: compiled in {out[d]['compile_s']:.1f} s", flush=True)
    for _ in range(repeats):
        for d in configs:
            wall, cpu, _ = run_once(regions, settings, d)
            out[d]["wall"].append(wall)
            out[d]["cpu"].append(cpu)
            print(f"devices {d}: {wall:.2f} s wall, {cpu:.2f} s CPU", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="16 regions, 4 iterations, 1 repeat")
    ap.add_argument("--regions", type=int, default=64)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--ants", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--name", default="scaling", help="report name under benchmarks/reports/")
    args = ap.parse_args()
    count, iters, repeats = (
        (16, 4, 1) if args.quick else (args.regions, args.iterations, args.repeats)
    )
    regions = corpus(count)
    # Start from the input order alone so that both colony passes do work on most regions.
    settings = dict(seed=0, ants=args.ants, max_iterations=iters, starts=("input",))
    assert len(jax.devices()) >= max(DEVICES), "needs 8 (forced) devices"
    env = harness.environment(xla_flags=os.environ.get("XLA_FLAGS", ""))
    m = measure(regions, settings, [None, *DEVICES], repeats)
    base = m[None]
    best0 = min(base["wall"])
    rows = []
    for d in [None, *DEVICES]:
        r = m[d]
        best = min(r["wall"])
        rows.append(
            {
                "devices": "default" if d is None else d,
                "compile_s": round(r["compile_s"], 1),
                "best_run_s": round(best, 3),
                "median_run_s": round(statistics.median(r["wall"]), 3),
                "cpu_s": round(statistics.median(r["cpu"]), 2),
                "regions_per_s": round(count / best, 2),
                "speedup": round(best0 / best, 2),
                "same_results": r["records"] == base["records"],
            }
        )
    report = {
        "command": "benchmarks/scaling.py" + (" --quick" if args.quick else ""),
        "environment": env,
        "load_average_end": round(os.getloadavg()[0], 2),
        "xla_flags": env["xla_flags"],
        "corpus": f"{count} generated regions of 33..64 instructions (one bucket)",
        "settings": {k: v for k, v in settings.items() if k != "starts"} | {"starts": "input"},
        "repeats": repeats,
        "colony_iterations": sum(sum(rec["iterations"]) for rec in base["records"]),
        "rows": rows,
    }
    write(report, args.name)


def write(report: dict, name: str) -> None:
    lines = [
        "# Colony scaling over forced CPU devices",
        "",
        harness.environment_markdown(report["environment"]),
        "",
        f"`{report['command']}` (1-minute load average {report['load_average_end']} at the "
        "end, the benchmark's own threads included), "
        f"`XLA_FLAGS={report['xla_flags']}`; "
        f"{report['corpus']}, settings {report['settings']}, {report['colony_iterations']} "
        f"colony iterations in all; best of {report['repeats']} timed runs per row.",
        "",
        "| devices | regions/s | best run s | median run s | CPU s | speed-up | compile s "
        "| same results |",
        "|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for r in report["rows"]:
        lines.append(
            f"| {r['devices']} | {r['regions_per_s']} | {r['best_run_s']} | "
            f"{r['median_run_s']} | {r['cpu_s']} | {r['speedup']}x | {r['compile_s']} | "
            f"{'yes' if r['same_results'] else 'NO'} |"
        )
    harness.write_report(name, report, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
