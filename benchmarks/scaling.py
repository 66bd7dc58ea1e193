"""Benchmark: the colony on 1, 2, 4 and 8 forced CPU devices over the same corpus, in one run.

    .venv/bin/python benchmarks/scaling.py [--quick] [--regions 64] [--iterations 10]

The devices are XLA's forced host devices (``--xla_force_host_platform_device_count=8``, set
here before JAX starts): one thread each, sharing this machine's cores. For each device count
the corpus is scheduled twice with ``schedule(..., devices=D)``: the first call compiles (its
compile time is reported apart), the second is timed (regions/s). The default single-device
path (``devices=None``) is the baseline of the ratios; every run must give the baseline's
results (bit for bit), which the report states.

Writes ``benchmarks/reports/scaling.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax

import jaxsched
from jaxsched.compilation import COMPILED
from jaxsched.problem.generate import generate_regions

HERE = Path(__file__).resolve().parent
DEVICES = (1, 2, 4, 8)
TIMING = ("compile_seconds", "run_seconds")


def corpus(count: int) -> list:
    """``count`` generated regions of two buckets (17..32 and 33..64 instructions)."""
    regs = generate_regions(11, 8 * count, 17, 64)
    small = [r for r in regs if len(r) <= 32][: count // 2]
    large = [r for r in regs if len(r) > 32][: count - len(small)]
    return small + large


def timed(regions: list, settings: dict, devices) -> dict:
    """Schedule twice: (compile seconds of the first call, wall seconds of the second, the
    second's records without timings)."""
    c0 = COMPILED.compile_seconds
    jaxsched.schedule(regions, devices=devices, **settings)
    compiled = COMPILED.compile_seconds - c0
    t0 = time.perf_counter()
    out = jaxsched.schedule(regions, devices=devices, **settings)
    wall = time.perf_counter() - t0
    recs = [{k: v for k, v in r.to_dict().items() if k not in TIMING} for r in out]
    return {"compile_s": compiled, "run_s": wall, "records": recs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="16 regions, 4 iterations")
    ap.add_argument("--regions", type=int, default=64)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--ants", type=int, default=256)
    args = ap.parse_args()
    count, iters = (16, 4) if args.quick else (args.regions, args.iterations)
    regions = corpus(count)
    # Start from the input order alone so that both colony passes do work on most regions.
    settings = dict(seed=0, ants=args.ants, max_iterations=iters, starts=("input",))
    assert len(jax.devices()) >= max(DEVICES), "needs 8 (forced) devices"
    base = timed(regions, settings, None)
    rows = []
    for d in DEVICES:
        r = timed(regions, settings, d)
        rows.append(
            {
                "devices": d,
                "compile_s": round(r["compile_s"], 2),
                "run_s": round(r["run_s"], 3),
                "regions_per_s": round(count / r["run_s"], 2),
                "speedup": round(base["run_s"] / r["run_s"], 2),
                "same_results": r["records"] == base["records"],
            }
        )
        print(rows[-1], flush=True)
    iterations = sum(sum(rec["iterations"]) for rec in base["records"])
    report = {
        "command": "benchmarks/scaling.py" + (" --quick" if args.quick else ""),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "jax": jax.__version__,
        "corpus": f"{count} generated regions (17..64 instructions, two buckets)",
        "settings": {k: v for k, v in settings.items() if k != "starts"} | {"starts": "input"},
        "colony_iterations": iterations,
        "baseline": {
            "devices": "default (one, unsharded)",
            "compile_s": round(base["compile_s"], 2),
            "run_s": round(base["run_s"], 3),
            "regions_per_s": round(count / base["run_s"], 2),
        },
        "rows": rows,
    }
    write(report)


def write(report: dict) -> None:
    out = HERE / "reports"
    out.mkdir(exist_ok=True)
    (out / "scaling.json").write_text(json.dumps(report, indent=2) + "\n")
    b = report["baseline"]
    lines = [
        "# Colony scaling over forced CPU devices",
        "",
        f"`{report['command']}` on {report['machine']} (load average at the end "
        f"{report['load_average']}), jax {report['jax']}; {report['corpus']}, "
        f"settings {report['settings']}, {report['colony_iterations']} colony iterations in all.",
        "",
        f"Baseline (default single-device path): {b['regions_per_s']} regions/s "
        f"({b['run_s']} s run, {b['compile_s']} s compiling).",
        "",
        "| devices | regions/s | run s | speed-up vs baseline | compile s | same results |",
        "|---:|---:|---:|---:|---:|:---:|",
    ]
    for r in report["rows"]:
        lines.append(
            f"| {r['devices']} | {r['regions_per_s']} | {r['run_s']} | {r['speedup']}x "
            f"| {r['compile_s']} | {'yes' if r['same_results'] else 'NO'} |"
        )
    (HERE / "reports" / "scaling.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
