"""Benchmark: worst-case warp makespan annealing (jaxsched.makespan) against a sequential C
annealer of the same rules, built in the same run.

    .venv/bin/python benchmarks/makespan.py [--quick] [--chains 1,64,...] [--iterations N]

1. Annealing throughput (chain-steps/s) across chain counts and string lengths, compile time
   apart, and the C annealer's steps/s on the same instance; prints the ratio JAX / C.
2. Time-to-best on a 16-warp instance with 320 instructions in total: best makespan and the time
   it was first reached, JAX (many chains) against C (one chain, same wall time).

Writes ``benchmarks/reports/makespan.{md,json}``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import harness
import numpy as np

from jaxsched.makespan import SM, estimate, normalize
from jaxsched.makespan.model import lower_bound, round_robin

HERE = Path(__file__).resolve().parent
C_SOURCE = HERE / "makespan_anneal.c"

SM_BENCH = SM(schedulers=4, capacity={"L": 1, "C": 4, "S": 1, "D": 0.5})
#: (name, kernel, warps); the last is the time-to-best instance (16 warps x 20 = 320 instr.).
INSTANCES = [
    ("short", "LCCSLCCL", 16),
    ("long", "LLCCSCDCLCCLLCCSCCCL", 16),
]
TTB = ("ttb", "LCCCCCCCCSCCCCLCCCCL", 16)  # start templates reach 95, annealing more


def build_c(tmp: Path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    lib = tmp / "libmakespan.so"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", str(C_SOURCE), "-o", str(lib)], check=True)
    so = ctypes.CDLL(str(lib))
    ip = ctypes.POINTER(ctypes.c_int)
    so.anneal.argtypes = [ip, ctypes.c_int, ctypes.c_int, ip, ctypes.c_int, ip, ctypes.c_long,
                          ctypes.c_double, ctypes.c_uint64, ctypes.POINTER(ctypes.c_long),
                          ctypes.POINTER(ctypes.c_double)]  # fmt: skip
    so.anneal.restype = ctypes.c_int
    return so


def run_c(so, norm, warps: int, iterations: int, seed: int = 1) -> dict:
    ip = ctypes.POINTER(ctypes.c_int)
    types = np.ascontiguousarray(norm.types, np.int32)
    cap = np.ascontiguousarray(np.minimum(norm.capacity, min(norm.schedulers, warps)), np.int32)
    string = np.ascontiguousarray(round_robin(warps, len(norm.kernel)), np.int32)
    best_iter = ctypes.c_long()
    secs = ctypes.c_double()
    best = so.anneal(types.ctypes.data_as(ip), len(norm.kernel), warps, cap.ctypes.data_as(ip),
                     min(norm.schedulers, warps), string.ctypes.data_as(ip), iterations, 0.3,
                     seed, ctypes.byref(best_iter), ctypes.byref(secs))  # fmt: skip
    return {
        "best": int(best),
        "seconds": secs.value,
        "steps_per_s": iterations / max(secs.value, 1e-9),
        "best_iteration": int(best_iter.value),
        "time_to_best_s": secs.value * best_iter.value / iterations,
    }


def throughput(chain_counts, iterations, so) -> list[dict]:
    rows = []
    for name, kernel, warps in INSTANCES:
        norm = normalize(kernel, SM_BENCH)
        n = warps * len(norm.kernel)
        c_row = run_c(so, norm, warps, 50_000) if so else None
        for chains in chain_counts:
            its = max(5, min(iterations, 100_000 // chains))  # ~1e5 chain-steps per row
            res = estimate(norm, warps, seed=0, chains=chains, iterations=its, chunk=its)
            rate = chains * its / res.run_seconds
            row = {
                "instance": name,
                "n": n,
                "chains": chains,
                "iterations": its,
                "compile_s": round(res.compile_seconds, 3),
                "run_s": round(res.run_seconds, 4),
                "chain_steps_per_s": round(rate),
                "c_steps_per_s": round(c_row["steps_per_s"]) if c_row else None,
                "ratio_jax_over_c": round(rate / c_row["steps_per_s"], 3) if c_row else None,
                "best": res.makespan,
            }
            rows.append(row)
            print(
                f"{name:5s} n={n:4d} chains={chains:6d}: {rate:12,.0f} chain-steps/s "
                f"(compile {res.compile_seconds:.2f} s) | C {row['c_steps_per_s'] or 0:,} steps/s"
                f" | ratio {row['ratio_jax_over_c']}",
                flush=True,
            )
    return rows


def time_to_best(chains: int, iterations: int, so) -> dict:
    _, kernel, warps = TTB
    norm = normalize(kernel, SM_BENCH)
    res = estimate(norm, warps, seed=0, chains=chains, iterations=iterations)
    hist_best = res.history.max(axis=1)
    first = int(np.argmax(hist_best == res.makespan))
    it_first = int(res.history_iterations[first])
    ttb = res.run_seconds * it_first / iterations
    out = {
        "instance": f"{kernel} x {warps} warps (n={warps * len(norm.kernel)})",
        "lower_bound": lower_bound(norm, warps),
        "jax": {
            "chains": chains,
            "iterations": iterations,
            "best": res.makespan,
            "start_best": int(hist_best[0]),
            "time_to_best_s": round(ttb, 3),
            "run_s": round(res.run_seconds, 3),
            "compile_s": round(res.compile_seconds, 3),
        },
    }
    if so:
        # One C chain for about the same wall time as the JAX run.
        probe = run_c(so, norm, warps, 2000)
        c_iters = max(2000, int(probe["steps_per_s"] * max(res.run_seconds, 0.1)))
        c = run_c(so, norm, warps, c_iters)
        out["c"] = {
            "iterations": c_iters,
            "best": c["best"],
            "time_to_best_s": round(c["time_to_best_s"], 3),
            "run_s": round(c["seconds"], 3),
        }
    print(f"time-to-best {out['instance']}: {json.dumps(out)}", flush=True)
    return out


def write_report(data: dict, out_dir: Path) -> None:
    """``OUT_DIR/makespan.{json,md}``."""
    lines = [
        "# Warp makespan annealing: throughput and time-to-best",
        "",
        harness.environment_markdown(data["environment"]),
        "",
        "SM: 4 schedulers, capacity L=1, C=4, S=1, D=0.5. C baseline: one sequential chain, "
        "same rules "
        "(`benchmarks/makespan_anneal.c`, cc -O2). Compile time is apart from run time.",
        "",
        "| instance | n | chains | compile s | run s | chain-steps/s | C steps/s | JAX/C |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in data["throughput"]:
        lines.append(
            f"| {r['instance']} | {r['n']} | {r['chains']} | {r['compile_s']} | {r['run_s']} | "
            f"{r['chain_steps_per_s']:,} | {r['c_steps_per_s'] or '-':,} | "
            f"{r['ratio_jax_over_c']} |"
        )
    t = data["time_to_best"]
    lines += [
        "",
        f"## Time-to-best: {t['instance']}, trivial lower bound {t['lower_bound']}",
        "",
        "| solver | chains | iterations | start best | best | time-to-best s | run s |",
        "|---|---|---|---|---|---|---|",
        f"| JAX | {t['jax']['chains']} | {t['jax']['iterations']} | {t['jax']['start_best']} | "
        f"{t['jax']['best']} | {t['jax']['time_to_best_s']} | {t['jax']['run_s']} |",
    ]
    if "c" in t:
        c = t["c"]
        lines.append(
            f"| C | 1 | {c['iterations']} | - | {c['best']} | {c['time_to_best_s']} | "
            f"{c['run_s']} |"
        )
    harness.write_report("makespan", data, "\n".join(lines), out_dir)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (well under a minute)")
    ap.add_argument("--chains", default=None, help="comma-separated chain counts")
    ap.add_argument("--iterations", type=int, default=None)
    ap.add_argument("--out", type=Path, default=HERE / "reports")
    args = ap.parse_args()
    if args.chains:
        chain_counts = [int(c) for c in args.chains.split(",")]
    elif args.quick:
        chain_counts = [1, 64, 1024]
    else:
        chain_counts = [1, 16, 256, 1024, 4096, 16384]
    iterations = args.iterations or (20 if args.quick else 200)
    with tempfile.TemporaryDirectory() as tmp:
        so = build_c(Path(tmp))
        if so is None:
            print("no C compiler found: C baseline skipped")
        rows = throughput(chain_counts, iterations, so)
        ttb = time_to_best(256 if args.quick else 1024, 300 if args.quick else 1500, so)
    data = {
        "environment": harness.environment(),
        "quick": args.quick,
        "throughput": rows,
        "time_to_best": ttb,
    }
    write_report(data, args.out)
    print(f"report: {args.out / 'makespan.md'}")


if __name__ == "__main__":
    main()
