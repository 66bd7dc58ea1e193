"""Benchmark: the colony's executables compiled (cold) vs loaded from the executable store.

    .venv/bin/python benchmarks/store.py [--ants 1024] [--lo 33] [--hi 64] [--name store]

The README example (`jaxsched.schedule` on examples/kernel.jsonl, seed 0, ``--ants``) on its
regions of ``--lo``..``--hi`` instructions (one bucket), in a new process on an empty store
("cold": every executable traced, lowered, compiled and written), then in another new process
on that store ("warm": loaded). Per executable (`jaxsched.compilation.CompileEvent`): trace,
lower, compile and save seconds cold, load seconds warm, entry bytes. Both runs' results
must be identical (and verified).

Writes ``benchmarks/reports/{name}.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import harness

from jaxsched.store import host_cpu

HERE = Path(__file__).resolve().parent

_CHILD = """
import json, sys, time
import jaxsched
from jaxsched.compilation import COMPILED
a = json.loads(sys.argv[1])
machine = jaxsched.gfx906()
regions = [r for r in jaxsched.load_regions(a["file"]) if a["lo"] <= len(r) <= a["hi"]]
t0 = time.perf_counter()
res = jaxsched.schedule(regions, machine, seed=0, ants=a["ants"])
wall = time.perf_counter() - t0
for r, x in zip(regions, res):
    jaxsched.verify(r, machine, x.cycles, order=x.order)
print(json.dumps({"wall_s": wall, "regions": len(regions),
                  "events": [e._asdict() for e in COMPILED.events],
                  "orders": [list(x.order) for x in res]}))
"""


def child(store: str, args: argparse.Namespace) -> dict:
    """One `schedule` run in a new process on the store in ``store``."""
    spec = {"file": str(HERE.parent / "examples/kernel.jsonl"), "lo": args.lo, "hi": args.hi}
    spec["ants"] = args.ants
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(spec)],
        env={**os.environ, "JAXSCHED_CACHE_DIR": store},
        capture_output=True,
        text=True,
        cwd=HERE.parent,
    )
    if done.returncode:
        raise RuntimeError(f"schedule run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory() as store:
        cold, warm = child(store, args), child(store, args)
    if cold["orders"] != warm["orders"]:
        raise AssertionError("results loaded from the store differ from compiled ones")
    rows = []
    for c, w in zip(cold["events"], warm["events"], strict=True):
        assert c["function"] == w["function"] and (c["source"], w["source"]) == (
            "compiled",
            "store",
        ), (c, w)
        rows.append(
            {
                "function": c["function"],
                **{k: c[k] for k in ("trace_s", "lower_s", "compile_s", "save_s")},
                "cold_s": c["trace_s"] + c["lower_s"] + c["compile_s"],
                "load_s": w["load_s"],
                "bytes": w["size"],
            }
        )
    return {
        "regions": cold["regions"],
        "rows": rows,
        "wall_s": {"cold": cold["wall_s"], "warm": warm["wall_s"]},
    }


def report(data: dict, args: argparse.Namespace) -> str:
    lines = [
        "# Executable store: compiled vs loaded",
        "",
        harness.environment_markdown(data["environment"])
        if "environment" in data
        else f"Machine: {host_cpu().split(';')[0]}.",
        "",
        f"`python benchmarks/store.py --ants {args.ants} --lo {args.lo} --hi {args.hi}`: "
        "`jaxsched.schedule` on the "
        f"{data['regions']} regions of examples/kernel.jsonl with {args.lo}..{args.hi} "
        f"instructions, {args.ants} ants, in a new process on an empty store (cold), then in "
        "another on that store (warm); identical results.",
        "",
        "| executable | trace s | lower s | compile s | cold total s | save s | warm load s | "
        "entry MB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in data["rows"]:
        lines.append(
            f"| {r['function']} | {r['trace_s']:.2f} | {r['lower_s']:.2f} | "
            f"{r['compile_s']:.2f} | {r['cold_s']:.2f} | {r['save_s']:.2f} | "
            f"{r['load_s']:.2f} | {r['bytes'] / 1e6:.2f} |"
        )
    tot = {k: sum(r[k] for r in data["rows"]) for k in ("cold_s", "save_s", "load_s", "bytes")}
    lines += [
        f"| total | | | | {tot['cold_s']:.2f} | {tot['save_s']:.2f} | {tot['load_s']:.2f} | "
        f"{tot['bytes'] / 1e6:.2f} |",
        "",
        f"`schedule` wall time: {data['wall_s']['cold']:.1f} s cold, "
        f"{data['wall_s']['warm']:.1f} s warm.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ants", type=int, default=1024)
    p.add_argument("--lo", type=int, default=33)
    p.add_argument("--hi", type=int, default=64)
    p.add_argument("--name", default="store")
    args = p.parse_args()
    data = {"environment": harness.environment(ants=args.ants, lo=args.lo, hi=args.hi)}
    data |= measure(args)
    text = report(data, args)
    harness.write_report(args.name, data, text)
    print(text)


if __name__ == "__main__":
    main()
