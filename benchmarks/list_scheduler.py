"""Benchmark: list-scheduler throughput, batched (`vmap` over a stacked bucket) vs one region at a
time (the same jitted scheduler called per region), by bucket size, in both modes.

    .venv/bin/python benchmarks/list_scheduler.py [--quick] [--buckets 16,64,256,1024] [--reps 3]

Compile time (``lower().compile()``, ahead of time) and the number of compilations (jit cache
entries the calls added: 1 per bucket and mode means no recompiles) are recorded apart from run
time (median of ``--reps`` warm runs). Every schedule of the first run is checked with
`jaxsched.verify`. Writes ``benchmarks/reports/list_scheduler.{md,json}``.
"""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

import harness
import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.heuristics import list_schedule
from jaxsched.heuristics.list_scheduler import priority_codes
from jaxsched.machines.model import gfx906
from jaxsched.problem.generate import generate_region
from jaxsched.problem.padded import common_shape, pad_region, stack
from jaxsched.verify import verify

HERE = Path(__file__).resolve().parent

MODES = {"rp": (False, ("luc", "cp", "nid")), "ilp": (True, ("cp", "luc", "nid"))}


@partial(jax.jit, static_argnames=("latencies",))
def _batched(dev, lut, codes, *, latencies):
    return jax.vmap(lambda d: list_schedule(d, lut, priority=codes, latencies=latencies))(dev)


@partial(jax.jit, static_argnames=("latencies",))
def _single(dev, lut, codes, *, latencies):
    return list_schedule(dev, lut, priority=codes, latencies=latencies)


def _bench_bucket(bucket: int, count: int, reps: int, machine) -> list[dict]:
    rng = np.random.default_rng(bucket)
    sizes = rng.integers(max(2, bucket // 2 + 1), bucket + 1, size=count)
    regions = [generate_region(int(1000 * bucket + k), int(n)) for k, n in enumerate(sizes)]
    shape = common_shape(regions, machine)
    dev, _ = stack(regions, machine, shape)
    dev = jax.tree.map(jnp.asarray, dev)
    singles = [jax.tree.map(jnp.asarray, pad_region(r, machine, shape)) for r in regions]
    lut = jnp.asarray(machine.occupancy_lut)
    rows = []
    for mode, (latencies, priority) in MODES.items():
        codes = jnp.asarray(priority_codes(priority))
        before_b, before_s = _batched._cache_size(), _single._cache_size()

        compile_b, _ = harness.compile_time(_batched, dev, lut, codes, latencies=latencies)
        compile_s, _ = harness.compile_time(_single, singles[0], lut, codes, latencies=latencies)

        out = jax.device_get(_batched(dev, lut, codes, latencies=latencies))  # warm-up + check
        for b, r in enumerate(regions):
            n = len(r)
            rep = verify(r, machine, out.cycles[b, :n], order=out.order[b, :n], latencies=latencies)
            assert rep.length == int(out.length[b])
        one = jax.device_get(_single(singles[0], lut, codes, latencies=latencies))
        assert np.array_equal(one.order, out.order[0])

        run_b = harness.median_time(partial(_batched, dev, lut, codes, latencies=latencies), reps)[
            0
        ]
        run_s = harness.median_time(
            lambda c=codes, lat=latencies: [_single(d, lut, c, latencies=lat) for d in singles],
            reps,
        )[0]
        rows.append(
            {
                "bucket": bucket,
                "mode": mode,
                "regions": count,
                "mean_n": float(np.mean(sizes)),
                "batched_compile_s": compile_b,
                "single_compile_s": compile_s,
                "batched_compilations": _batched._cache_size() - before_b,
                "single_compilations": _single._cache_size() - before_s,
                "batched_run_s": run_b,
                "single_run_s": run_s,
                "batched_regions_per_s": count / run_b,
                "single_regions_per_s": count / run_s,
                "speedup": run_s / run_b,
            }
        )
        r = rows[-1]
        print(
            f"bucket {bucket:5d} {mode:3s}: batched {r['batched_regions_per_s']:9.0f} reg/s "
            f"(compile {compile_b:.2f} s), one at a time {r['single_regions_per_s']:8.0f} reg/s "
            f"(compile {compile_s:.2f} s), ratio {r['speedup']:.1f}x",
            flush=True,
        )
    return rows


def _markdown(rows: list[dict], meta: dict) -> str:
    lines = [
        "# List scheduler throughput",
        "",
        harness.environment_markdown(meta),
        f"{'quick' if meta['quick'] else 'full'} run, median of {meta['reps']} warm runs.",
        "Batched: one `jit(vmap(list_schedule))` call over all regions of a bucket (stacked).",
        "One at a time: the same scheduler jitted for one region, called once per region.",
        "Compile time and compilations (jit cache entries added) are apart from run time; every",
        "schedule was checked by `jaxsched.verify`.",
        "",
        "| bucket | mode | regions | mean n | batched reg/s | single reg/s | batched / single |"
        " compile batched (s) | compile single (s) | compilations (b/s) |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['bucket']} | {r['mode']} | {r['regions']} | {r['mean_n']:.0f} | "
            f"{r['batched_regions_per_s']:.0f} | {r['single_regions_per_s']:.0f} | "
            f"{r['speedup']:.1f}x | {r['batched_compile_s']:.2f} | {r['single_compile_s']:.2f} | "
            f"{r['batched_compilations']}/{r['single_compilations']} |"
        )
    lines += [
        "",
        "Modes: `rp` = RP pass (LUC, CP, NID; no latencies); `ilp` = cycle-by-cycle with",
        "latencies (CP, LUC, NID). Priorities travel as int codes: changing them never recompiles.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small buckets, few regions (< 1 min)")
    ap.add_argument("--buckets", default=None, help="comma-separated bucket sizes")
    ap.add_argument("--count", type=int, default=None, help="regions per bucket")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=str(HERE / "reports"), help="report directory")
    args = ap.parse_args(argv)
    buckets = [
        int(b)
        for b in (args.buckets or ("16,64,256" if args.quick else "16,64,256,1024")).split(",")
    ]
    machine = gfx906()
    rows = []
    for bucket in buckets:
        count = args.count or (32 if args.quick else max(16, min(256, 16384 // bucket)))
        rows.extend(_bench_bucket(bucket, count, args.reps, machine))
    meta = harness.environment(quick=args.quick, reps=args.reps)
    md, _ = harness.write_report(
        "list_scheduler", {"meta": meta, "rows": rows}, _markdown(rows, meta), Path(args.out)
    )
    print(f"wrote {md} and .json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
