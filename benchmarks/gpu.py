"""Benchmark for the GPU (issue 13): the fused construction kernel against the `lax` path, and
`schedule` on a generated corpus, both paths in the same run on identical instances.

    python benchmarks/gpu.py [--quick] [--sizes 128,512] [--ants 1024,16384] [--corpus 1000]
                             [--chains 1,1024,16384,65536] [--anneal-steps 256] [--only anneal]

(a) Construction: one construction by A ants (RP and ILP pass) of a generated region of n
    instructions, `construct.construct_ants` (lax) vs `kernel.construct_ants_fused` (fused) on
    the identical instance (same tables, pheromone, seeds); ant-steps/s, medians of
    ``--repeats`` runs, compile time apart, ratio fused / lax, share of ants whose results
    (order, peak, length, stalls, death) are identical.
(b) `schedule` on ``--corpus`` generated regions (2..``--corpus-max-size``), per construction,
    each in a fresh process with an empty executable store ("cold": wall time, compile time,
    executables) and again in a new process on that store ("warm": compile time is loading);
    regions/s without compilation; the two constructions' schedules must be identical.
(c) Annealing: ``--anneal-steps`` steps of C chains on the 128-position instance of
    benchmarks/makespan.py ("short": 16 warps x 8 instructions), `makespan.run` (lax) vs
    `makespan.run_fused` (fused) from the identical state and key; chain-steps/s, medians of
    ``--repeats`` runs, compile time apart, ratio fused / lax, share of chains whose final state
    (strings, cycles, makespans, bests) is identical.

On a backend without CUDA the fused kernels run in the Pallas interpreter
(``construction="interpret"``, ``annealing="interpret"``): the figures check plumbing and
equality only and say nothing about GPU speed. ``--only anneal`` runs part (c) alone and keeps
the other parts of an existing report. ``--xla-flags`` is passed to the corpus processes (e.g.
``--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL`` to measure command buffers).
Writes ``benchmarks/reports/gpu-<backend>.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import harness
import jax
import jax.numpy as jnp
import numpy as np
from colony import make_instance
from makespan import INSTANCES, SM_BENCH

from jaxsched import fused as fused_modes
from jaxsched import makespan as mk
from jaxsched.colony.construction import antstate, construct, kernel
from jaxsched.colony.params import default_params
from jaxsched.machines.model import gfx906
from jaxsched.makespan.kernel import run_fused

HERE = Path(__file__).resolve().parent

WAVEFRONT = 64


def _fused_name() -> str:
    """The fused construction that runs here: the kernel on CUDA, else interpreted."""
    return "pallas" if fused_modes.gpu_platform() == "cuda" else "interpret"


def _comparison(fused: str, compile_s: dict, secs: dict, work: int, unit: str, same) -> dict:
    """The lax-vs-fused fields of a report row: ``work`` units (``unit``) per run, ``same`` a
    bool array (per ant or chain: identical results)."""
    return {
        "fused": fused,
        "compile_s": compile_s,
        "seconds": secs,
        f"{unit}_per_s": {k: work / v for k, v in secs.items()},
        "ratio_fused_over_lax": secs["lax"] / secs["fused"],
        "identical": float(same.mean()),
    }


def construction_cell(n: int, ants: int, seed: int, repeats: int) -> list[dict]:
    """lax vs fused on one instance and ant count, one row per pass."""
    machine, params = gfx906(), default_params()
    inst = make_instance(n, seed, machine, params)
    waves = max(1, ants // WAVEFRONT)
    kw = dict(wavefronts=waves, wavefront_size=WAVEFRONT)
    fused = _fused_name()
    fns = {
        "lax": partial(construct.construct_ants, **kw),
        "fused": partial(kernel.construct_ants_fused, interpret=fused == "interpret", **kw),
    }
    key, steps = jax.random.key(seed), jnp.int32(n)
    rows = []
    compiled, compile_s = {}, {}
    for name, fn in fns.items():
        args = (inst.prep, inst.for_pass(False), params, key, steps)
        compile_s[name], compiled[name] = harness.compile_time(
            fn, *args, uniform_exploration=jnp.bool_(True)
        )
    for timed in (False, True):
        args = (inst.prep, inst.for_pass(timed), params, key, steps)
        uniform = jnp.bool_(not timed)
        out, secs = {}, {}
        for name, exe in compiled.items():
            run = partial(exe, *args, uniform_exploration=uniform)
            secs[name], res = harness.median_time(run, repeats, warmup=1)
            out[name] = jax.device_get(res)
        same = np.ones(waves * WAVEFRONT, bool)
        for field in antstate.AntResults._fields:
            a, b = getattr(out["lax"], field), getattr(out["fused"], field)
            same &= (a == b).reshape(a.shape[0], -1).all(axis=1)
        A = waves * WAVEFRONT
        head = {"n": n, "ants": A, "pass": "ilp" if timed else "rp"}
        rows.append({**head, **_comparison(fused, compile_s, secs, A * n, "ant_steps", same)})
        print(
            f"n={n:4d} ants={A:6d} {rows[-1]['pass']}: lax {A * n / secs['lax'] / 1e6:8.2f} M, "
            f"{fused} {A * n / secs['fused'] / 1e6:8.2f} M ant-steps/s "
            f"({rows[-1]['ratio_fused_over_lax']:.2f}x), identical {same.mean():.0%}",
            flush=True,
        )
    return rows


# ---------------------------------------------------------------------------------- annealing
def annealing_cell(chains: int, steps: int, seed: int, repeats: int) -> dict:
    """lax vs fused annealing from one state and key: ``steps`` steps of ``chains`` chains."""
    _, kernel_string, warps = INSTANCES[0]
    norm = mk.normalize(kernel_string, SM_BENCH)
    tab = mk.tables(norm, warps)
    strings, _ = mk.start_strings(norm, warps, chains, mk.STARTS, jax.random.key(seed))
    params, n = mk.default_params(steps), len(norm.kernel) * warps
    state = jax.jit(mk.init)(jax.random.key(seed + 1), tab, params, jnp.asarray(strings))
    fused = _fused_name()
    fns = {
        "lax": mk.run,
        "fused": partial(run_fused, interpret=fused == "interpret"),
    }
    args = (state, tab, params, jnp.int32(steps))
    secs, compile_s, out = {}, {}, {}
    for name, fn in fns.items():
        compile_s[name], exe = harness.compile_time(fn, *args)
        secs[name], res = harness.median_time(partial(exe, *args), repeats, warmup=1)
        out[name] = jax.device_get(res)
    same = np.ones(chains, bool)
    for a, b in zip(jax.tree.leaves(out["lax"]), jax.tree.leaves(out["fused"]), strict=True):
        if np.ndim(a):
            same &= (a == b).reshape(-1, chains).all(axis=0)
    row = {
        "positions": n,
        "chains": chains,
        "steps": steps,
        "best": int(out["lax"].best_makespan.max()),
        **_comparison(fused, compile_s, secs, chains * steps, "chain_steps", same),
    }
    rate = row["chain_steps_per_s"]
    print(
        f"anneal n={n} chains={chains:6d} steps={steps}: lax {_rate(rate['lax'])}, {fused} "
        f"{_rate(rate['fused'])} chain-steps/s ({row['ratio_fused_over_lax']:.2f}x), "
        f"identical {same.mean():.0%}",
        flush=True,
    )
    return row


def annealing(chains: list[int], steps: int, seed: int, repeats: int) -> dict:
    rows = [annealing_cell(c, steps, seed, repeats) for c in chains]
    return {"rows": rows}


# ---------------------------------------------------------------------------------- corpus
_CHILD = """
import json, sys, time
t0 = time.perf_counter()
import jax, jaxsched
from jaxsched.compilation import COMPILED
from jaxsched.problem.generate import generate_regions
a = json.loads(sys.argv[1])
regions = generate_regions(a["seed"], a["count"], 2, a["max_size"])
t1 = time.perf_counter()
res = jaxsched.schedule(regions, jaxsched.gfx906(), seed=a["seed"], ants=a["ants"],
                        wavefront_size=min(64, a["ants"]), construction=a["construction"])
wall = time.perf_counter() - t1
for r, x in zip(regions, res):
    jaxsched.verify(r, jaxsched.gfx906(), x.cycles, order=x.order)
print(json.dumps({"wall_s": wall,
                  "compile_s": COMPILED.compile_seconds + COMPILED.load_seconds,
                  "compilations": COMPILED.compilations, "loads": COMPILED.loads,
                  "import_s": t1 - t0,
                  "backend": jax.default_backend(),
                  "orders": [list(x.order) for x in res],
                  "length": sum(x.length for x in res)}))
"""


def corpus_run(construction: str, cache: str, args: argparse.Namespace) -> dict:
    """`schedule` on the corpus in a new process using the executable store ``cache``."""
    env = {**os.environ, "JAXSCHED_CACHE_DIR": cache}
    if args.xla_flags:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + args.xla_flags).strip()
    spec = dict(
        seed=args.seed,
        count=args.corpus,
        max_size=args.corpus_max_size,
        ants=args.corpus_ants,
        construction=construction,
    )
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(spec)],
        env=env,
        capture_output=True,
        text=True,
        cwd=HERE.parent,
    )
    if done.returncode:
        raise RuntimeError(f"corpus run ({construction}) failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["regions_per_s"] = args.corpus / out["wall_s"]
    out["regions_per_s_without_compile"] = args.corpus / max(out["wall_s"] - out["compile_s"], 1e-9)
    out["compile_share"] = out["compile_s"] / out["wall_s"]
    return out


def corpus(args: argparse.Namespace) -> dict:
    """Cold and warm runs of both constructions; their schedules must agree."""
    result: dict = {"regions": args.corpus, "max_size": args.corpus_max_size}
    orders = {}
    for name in ("lax", _fused_name()):
        with tempfile.TemporaryDirectory() as cache:
            cold = corpus_run(name, cache, args)
            warm = corpus_run(name, cache, args)
        orders[name] = cold.pop("orders")
        warm.pop("orders")
        result[name] = {"cold": cold, "warm": warm}
        print(
            f"corpus {name}: cold {cold['wall_s']:.1f} s ({cold['compile_s']:.1f} s compiling, "
            f"{cold['compilations']} executables), {cold['regions_per_s_without_compile']:.1f} "
            f"regions/s without compilation; warm {warm['wall_s']:.1f} s",
            flush=True,
        )
    a, b = orders.values()
    result["identical_orders"] = sum(x == y for x, y in zip(a, b, strict=True)) / len(a)
    return result


# ---------------------------------------------------------------------------------- report
def _rate(x: float) -> str:
    return f"{x / 1e9:.2f} G" if x >= 1e9 else f"{x / 1e6:.2f} M" if x >= 1e5 else f"{x:.0f}"


def markdown(data: dict) -> str:
    """The report's Markdown."""
    m = data["meta"]
    gpu = m["fused"] == "pallas"
    lines = [
        f"# GPU benchmark (issue 13): fused construction kernel vs lax — {m['device']}",
        "",
        harness.environment_markdown(m),
        "",
        f"Medians of {m['repeats']} runs; compile times apart. `XLA_FLAGS` of the corpus "
        f"processes: `{m['xla_flags'] or '-'}`.",
        "",
    ]
    if not gpu:
        lines += [
            "**No GPU in this run.** The fused kernel ran in the Pallas *interpreter* on the "
            "CPU (`construction='interpret'`): these numbers check that both paths run, agree "
            "and are wired through `schedule`; they say nothing about GPU speed. The GPU "
            "figures of issue 13 (construction >= 1 G ant-steps/s at n = 128 and 512 with "
            ">= 16,384 ants and >= 10x lax at 1,024 ants; `schedule` >= 500 regions/s without "
            "compilation, compilation below half the cold wall time) are still to be measured: "
            "`python benchmarks/gpu.py` on the GPU machine.",
            "",
        ]
    lines += [
        "## Construction (one construction, both passes)",
        "",
        "| n | ants | pass | lax ant-steps/s | fused ant-steps/s | fused / lax | identical | "
        "compile lax s | compile fused s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data["construction"]:
        lines.append(
            f"| {r['n']} | {r['ants']} | {r['pass']} | {_rate(r['ant_steps_per_s']['lax'])} | "
            f"{_rate(r['ant_steps_per_s']['fused'])} | {r['ratio_fused_over_lax']:.2f}x | "
            f"{r['identical']:.0%} | {r['compile_s']['lax']:.1f} | "
            f"{r['compile_s']['fused']:.1f} |"
        )
    c = data.get("corpus")
    if c:
        lines += [
            "",
            f"## `schedule` on {c['regions']} generated regions (2..{c['max_size']}), "
            f"{m['corpus_ants']} ants",
            "",
            "Each run in a new process; cold: empty executable store; warm: a second process on "
            "that store (compile time then is loading, executables counts those compiled). "
            "Every schedule "
            f"verified; identical orders lax vs fused: {c['identical_orders']:.0%}.",
            "",
            "| construction | cache | wall s | compile s | compile share | executables | "
            "regions/s | regions/s without compile |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for name, runs in c.items():
            if not isinstance(runs, dict):
                continue
            for kind, r in runs.items():
                lines.append(
                    f"| {name} | {kind} | {r['wall_s']:.1f} | {r['compile_s']:.1f} | "
                    f"{r['compile_share']:.0%} | {r['compilations']} | "
                    f"{r['regions_per_s']:.1f} | {r['regions_per_s_without_compile']:.1f} |"
                )
    lines += _annealing_lines(data["annealing"])
    return "\n".join(lines) + "\n"


def _annealing_lines(a: dict) -> list[str]:
    lines = ["", "## Annealing (`jaxsched.makespan`: run vs run_fused)", ""]
    if "rows" not in a:
        return [*lines, a.get("status", "Not measured."), ""]
    m = a["meta"]
    gpu = m["fused"] == "pallas"
    lines += [
        harness.environment_markdown(m),
        "",
        f"Medians of {m['repeats']} runs; compile times apart; the 128-position instance of "
        "benchmarks/makespan.py (16 warps x `LCCSLCCL`)"
        + (" (this section was run alone, `--only anneal`)." if m.get("only") else "."),
        "",
    ]
    if not gpu:
        lines += [
            "The fused annealer ran in the Pallas interpreter: the rows check that it runs and "
            "gives results identical to lax; the GPU figures of issue 13 (>= 100 M chain-steps/s "
            "at 65,536 chains) are still to be measured on the GPU machine.",
            "",
        ]
    lines += [
        "| positions | chains | steps | lax chain-steps/s | fused chain-steps/s | fused / lax | "
        "identical | compile lax s | compile fused s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in a["rows"]:
        lines.append(
            f"| {r['positions']} | {r['chains']} | {r['steps']} | "
            f"{_rate(r['chain_steps_per_s']['lax'])} | {_rate(r['chain_steps_per_s']['fused'])} "
            f"| {r['ratio_fused_over_lax']:.2f}x | {r['identical']:.0%} | "
            f"{r['compile_s']['lax']:.1f} | {r['compile_s']['fused']:.1f} |"
        )
    return [*lines, ""]


def _meta(a: argparse.Namespace) -> dict:
    return harness.environment(
        repeats=a.repeats,
        fused=_fused_name(),
        xla_flags=a.xla_flags,
        corpus_ants=a.corpus_ants,
        quick=a.quick,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (CPU: a few minutes)")
    ap.add_argument("--only", choices=("anneal",), help="run only the annealing part (c)")
    ap.add_argument("--sizes", default=None, help="region sizes (default 128,512; quick 32)")
    ap.add_argument("--ants", default=None, help="ant counts (default 1024,16384; quick 64,256)")
    ap.add_argument("--chains", default=None, help="default 1,1024,16384,65536; quick 1,64,1024")
    ap.add_argument("--anneal-steps", type=int, default=None, help="default 256; quick 64")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--corpus", type=int, default=None, help="regions (default 1000; quick 40)")
    ap.add_argument("--corpus-max-size", type=int, default=None, help="default 64; quick 24")
    ap.add_argument("--corpus-ants", type=int, default=None, help="default 4096; quick 64")
    ap.add_argument("--xla-flags", default="", help="XLA_FLAGS of the corpus processes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="report path without suffix")
    a = ap.parse_args(argv)
    sizes = [int(x) for x in (a.sizes or ("32" if a.quick else "128,512")).split(",")]
    ants = [int(x) for x in (a.ants or ("64,256" if a.quick else "1024,16384")).split(",")]
    chains = [
        int(x) for x in (a.chains or ("1,64,1024" if a.quick else "1,1024,16384,65536")).split(",")
    ]
    a.corpus = a.corpus if a.corpus is not None else (40 if a.quick else 1000)
    a.corpus_max_size = a.corpus_max_size or (24 if a.quick else 64)
    a.corpus_ants = a.corpus_ants or (64 if a.quick else 4096)
    steps = a.anneal_steps or (64 if a.quick else 256)
    out = Path(a.out) if a.out else HERE / "reports" / f"gpu-{jax.default_backend()}"
    t0 = time.perf_counter()
    if a.only == "anneal":
        data = json.loads(out.with_suffix(".json").read_text())
    else:
        rows = [
            r for n in sizes for A in ants for r in construction_cell(n, A, a.seed + n, a.repeats)
        ]
        data = {
            "meta": _meta(a),
            "construction": rows,
            "corpus": corpus(a) if a.corpus > 0 else None,
        }
    meta = {**_meta(a), "only": a.only == "anneal"}
    data["annealing"] = {**annealing(chains, steps, a.seed, a.repeats), "meta": meta}
    data["annealing"]["meta"]["total_s"] = time.perf_counter() - t0
    if a.only is None:
        data["meta"]["total_s"] = time.perf_counter() - t0
    harness.write_report_at(out, data, markdown(data))
    print(f"wrote {out}.md/.json in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
