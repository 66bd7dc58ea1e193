"""Benchmark: how much faster than LLVM any pre-RA schedule could make the final code, by the
judge (`jaxsched.io.mir_judge`) and the model's bounds; the room issue 31's targets need.

    .venv/bin/python benchmarks/headroom.py [--kernels kernels.tar.gz|DIR] [--targets gfx906,gfx942]
        [--files N] [--every K] [--name headroom]

Per function of LLVM's default compile (``llc -start-before=machine-scheduler``), judged as in
`benchmarks/postra.py` (llvm-mca 19's cycles per block x LLVM's block frequencies / llc's
occupancy), a **floor**: what the function's time per wave slot would be if

* every block of the final code that holds whole scheduling regions took llvm-mca's cycles
  scaled by ``sum of the regions' length lower bounds / sum of the model's lengths of LLVM's
  orders`` (`jaxsched.heuristics.length_lower_bound`: the latency and issue bound, registers
  ignored), every other block as it is; and
* the function ran at the highest occupancy its registers allow: the least, over its regions,
  of the occupancy of the regions' register-pressure lower bounds
  (`jaxsched.heuristics.rp_lower_bound`), no higher than what LLVM's own registers allow where
  something else (LDS, attributes) keeps llc's occupancy below that.

No order of any region, with any allocation, beats the floor unless llvm-mca's cycles fall
faster than the model's length or the allocator needs fewer registers than the pressure bound:
the floor is optimistic (the model's fixed costs per block shrink with the scaling). Its
geomean over functions against LLVM's default and against the best of LLVM's strategies per
function says how far the issue's targets (5% and 3% below) are from possible.

Also per target: how much of LLVM's strategies' gain over its default comes from an llvm-mca
rule that the hardware does not have. llvm-mca's AMDGPU wait model counts every FLAT-encoded
instruction (``global_*``, ``scratch_*`` included) on ``lgkmcnt`` (AMDGPUCustomBehaviour:
"conservatively assume" each may access LDS), so an ``s_waitcnt lgkmcnt(0)`` for a scalar load
waits there for every global load and store issued before it; the hardware counts global and
scratch accesses on ``vmcnt`` only. The same compiles are judged again with the ``lgkmcnt``
waits dropped (scalar and LDS results then wait through their registers' latencies).

Writes ``benchmarks/reports/{name}.{md,json}``.
"""

from __future__ import annotations

import argparse
import functools
import math
import re
import tempfile
import time
from collections import Counter
from pathlib import Path

import harness
from postra import KERNELS, LLC, STRATEGIES, VERSION, mir_files

from jaxsched.heuristics import issue_cycles, length_lower_bound, rp_lower_bound
from jaxsched.heuristics.bounds import length_lower_bound_at
from jaxsched.io.mir import read_mir
from jaxsched.io.mir_judge import FunctionTime, judge_mir, mca_cycles, split_blocks
from jaxsched.io.mir_llc import compile_mir
from jaxsched.io.mir_llvm import llvm_orders, tag_instructions
from jaxsched.io.mir_parse import MirError, read_mir_text
from jaxsched.machines.amdgpu import TARGETS, occupancy
from jaxsched.machines.model import get_machine

_TAG = re.compile(r"debug-instr-number (\d+)")
_LGKM = re.compile(r"\s*lgkmcnt\(\d+\)")


def one_file(target: str, path: Path) -> list[dict]:
    """Per function of ``path``: LLVM's default and strategies judged (with and without the
    ``lgkmcnt`` waits), and the floor (module docstring). `MirError` when llc fails."""
    version = VERSION.get(target, 19)
    llc, machine, t = LLC[version], get_machine(target), TARGETS[target]
    module = read_mir(path, mcpu=target)
    orders = llvm_orders(module, mcpu=t.mcpu, mattr=t.mattr, llc=llc)
    text, tags = tag_instructions(module)
    final = read_mir_text(
        "final",
        text=compile_mir(
            text,
            mcpu=t.mcpu,
            mattr=t.mattr,
            start="-start-before",
            stop="branch-relaxation",
            llc=llc,
        ).stdout,
    )
    figs, asm = judge_mir(text, mcpu=t.mcpu, mattr=t.mattr, start="-start-before", llc=llc)
    bounds, occ_rp = _block_bounds(module, orders, tags, final, machine)
    plain = _without_lgkm(figs, asm, t.mcpu, t.mattr)
    strategies = {}
    for name in STRATEGIES[version]:
        try:
            sf, sa = judge_mir(
                module.text,
                mcpu=t.mcpu,
                mattr=t.mattr,
                start="-start-before",
                llc=llc,
                extra=[f"-misched={name}"],
            )
        except MirError:
            continue
        strategies[name] = (sf, _without_lgkm(sf, sa, t.mcpu, t.mattr))
    rows = []
    for fn, f in figs.items():
        if not f.cycles > 0 or math.isnan(f.cycles):
            continue
        blocks = {b: bounds[(fn, b)] for b, _, _ in f.blocks if (fn, b) in bounds}
        cycles_floor, _, _ = _floor(f, blocks, range(f.occupancy, f.occupancy + 1))
        top = f.occupancy
        if f.occupancy > 0:  # a kernel: up to what its registers' bound allows
            by_regs = occupancy(t, f.stats.vgprs, f.stats.sgprs)
            cap = t.max_waves_per_eu if f.occupancy >= by_regs else f.occupancy
            top = max(f.occupancy, min(occ_rp.get(fn, cap), cap))
        floor, floor_occ, covered = _floor(f, blocks, range(f.occupancy, top + 1))
        rows.append(
            {
                "file": path.name,
                "function": fn,
                "occupancy": f.occupancy,
                "time": f.time,
                "covered": covered,
                "floor_cycles_time": cycles_floor,
                "floor_occupancy": floor_occ,
                "floor": floor,
                "time_no_lgkm": plain.get(fn, math.nan),
                "strategies": {
                    n: {"time": s[0][fn].time, "time_no_lgkm": s[1].get(fn, math.nan)}
                    for n, s in strategies.items()
                    if fn in s[0] and s[0][fn].occupancy == f.occupancy
                },
            }
        )
    return rows


def _floor(f: FunctionTime, blocks: dict, occupancies: range) -> tuple[float, int, float]:
    """(cycles per wave slot, occupancy, share of the cycles in blocks with a bound) of the
    best floor over ``occupancies``: at each, every block's cycles scaled by its regions'
    length bound at that occupancy over the model's length of LLVM's orders; a block without
    one (a region spread over blocks) takes the function's cycle-weighted ratio of the others
    (1 where none has one)."""
    best = (math.inf, occupancies[0], 0.0)
    total = sum(fr * c for _, fr, c in f.blocks)
    for occ in occupancies:
        ratio = {b: bound(occ) for b, bound in blocks.items()}
        known = [(fr * c, ratio[b]) for b, fr, c in f.blocks if b in ratio]
        weight = sum(w for w, _ in known)
        mean = sum(w * r for w, r in known) / weight if weight > 0 else 1.0
        scaled = sum(fr * c * ratio.get(b, mean) for b, fr, c in f.blocks) / max(occ, 1)
        if scaled < best[0]:
            best = (scaled, occ, weight / total if total > 0 else 0.0)
    return best


def _block_bounds(module, orders, tags, final, machine) -> tuple[dict, dict]:
    """((function, block) -> occupancy -> length bound at that occupancy / model length of
    LLVM's orders, for each block of LLVM's final code that holds whole regions only;
    function -> least occupancy of its regions' register-pressure bounds)."""
    owner = {
        tags[i.line]: k for k, mr in enumerate(module.regions) for i in mr.instrs if i.line in tags
    }
    occ: dict[str, int] = {}
    for mr in module.regions:
        if mr.region is not None and not mr.problem:
            peaks, _ = rp_lower_bound(mr.region, machine)
            o = machine.occupancy([peaks[name] for name in machine.file_names])
            occ[mr.function] = min(occ.get(mr.function, o), o)
    held = {
        (fn.name, b.number): {
            owner[int(m.group(1))]
            for i in b.instrs
            if (m := _TAG.search(i.text)) and int(m.group(1)) in owner
        }
        for fn in final.functions
        for b in fn.blocks
    }
    blocks_of = Counter(k for regions in held.values() for k in regions)
    bounds = {}
    for key, regions in held.items():
        if not regions or any(blocks_of[k] > 1 for k in regions):
            continue  # no region, or a region spread over blocks
        rs = [module.regions[k] for k in regions]
        pairs = [(mr, orders[k]) for k, mr in zip(regions, rs, strict=True)]
        if any(mr.region is None or mr.problem or order is None for mr, order in pairs):
            continue
        model = sum(int(issue_cycles(mr.region, mr.model_order(o)).max()) + 1 for mr, o in pairs)
        bounds[key] = functools.partial(_ratio, [mr.region for mr in rs], machine, model)
    return bounds, occ


def _ratio(regions: list, machine, model: int, occupancy: int) -> float:
    """Sum of the regions' length bounds at ``occupancy`` (the latency bound where it is below
    1: no occupancy) over ``model``, at most 1."""
    if occupancy < 1:
        bound = sum(length_lower_bound(r, machine) for r in regions)
    else:
        bound = sum(length_lower_bound_at(r, machine, occupancy) for r in regions)
    return min(1.0, bound / model) if model > 0 else 1.0


def _without_lgkm(
    figs: dict[str, FunctionTime], asm: str, mcpu: str, mattr: str
) -> dict[str, float]:
    """Each function's time per wave slot with every ``lgkmcnt`` wait of its blocks dropped."""
    blocks = split_blocks(asm)
    flat = [(fn, b) for fn, bs in blocks.items() for b in bs if fn in figs]
    strip = lambda i: _LGKM.sub("", i) if i.startswith("s_waitcnt") else i  # noqa: E731
    kept = [[s for i in b.instrs if (s := strip(i)).strip() != "s_waitcnt"] for _, b in flat]
    cycles = mca_cycles(kept, mcpu=mcpu, mattr=mattr)
    freq = {fn: {n: fr for n, fr, _ in f.blocks} for fn, f in figs.items()}
    out: dict[str, float] = {}
    for (fn, b), c in zip(flat, cycles, strict=True):
        out[fn] = out.get(fn, 0.0) + freq[fn].get(b.number, 1.0) * c
    return {fn: c / max(figs[fn].occupancy, 1) for fn, c in out.items()}


def _geo(xs: list[float]) -> float:
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else math.nan


def totals(rows: list[dict]) -> dict:
    """Geomeans over functions of the floor and of LLVM's strategies against LLVM."""
    best = lambda r, key: min([r[key], *(s[key] for s in r["strategies"].values())])  # noqa: E731
    return {
        "functions": len(rows),
        "floor_over_default": _geo([r["floor"] / r["time"] for r in rows]),
        "floor_over_best": _geo([r["floor"] / best(r, "time") for r in rows]),
        "floor_cycles_over_default": _geo([r["floor_cycles_time"] / r["time"] for r in rows]),
        "covered": _geo([r["covered"] for r in rows]),
        "occupancy_raised": sum(r["floor_occupancy"] > r["occupancy"] > 0 for r in rows),
        "best_over_default": _geo([best(r, "time") / r["time"] for r in rows]),
        "best_over_default_no_lgkm": _geo(
            [best(r, "time_no_lgkm") / r["time_no_lgkm"] for r in rows]
        ),
    }


def markdown(report: dict) -> str:
    lines = [
        "# Room for a faster schedule: the floor under LLVM's final code",
        "",
        harness.environment_markdown(report["environment"]),
        "",
        __doc__.split("\n\n", 2)[2].split("Writes ``")[0].strip(),
        "",
    ]
    rows = []
    for t in report["targets"]:
        s = t["totals"]
        rows.append(
            [
                t["target"],
                t["llc"],
                s["functions"],
                f"{s['floor_cycles_over_default']:.4f}",
                f"{s['occupancy_raised']}",
                f"{s['floor_over_default']:.4f}",
                f"{s['floor_over_best']:.4f}",
                f"{s['best_over_default']:.4f}",
                f"{s['best_over_default_no_lgkm']:.4f}",
                f"{t['wall_s']:.0f}",
            ]
        )
    header = [
        "target",
        "llc",
        "functions",
        "floor of cycles / default",
        "functions whose occupancy could rise",
        "floor / LLVM default",
        "floor / best of LLVM",
        "best of LLVM / default",
        "same, lgkmcnt waits dropped",
        "wall s",
    ]
    note = "Geomeans over functions (below 1: faster than LLVM)."
    lines += [harness.table(header, rows), "", note]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", type=Path, default=KERNELS, help="kernels.tar.gz or its dir")
    ap.add_argument("--targets", default="gfx906,gfx942")
    ap.add_argument("--files", type=int, default=None, help="only the first N files")
    ap.add_argument("--every", type=int, default=1, help="every K-th file (a sample)")
    ap.add_argument("--name", default="headroom")
    args = ap.parse_args(argv)
    report = {"environment": harness.environment(), "targets": []}
    with tempfile.TemporaryDirectory() as d:
        for target in args.targets.split(","):
            t0, rows, errors = time.perf_counter(), [], {}
            for p in mir_files(target, args.kernels, Path(d), args.files, args.every):
                try:
                    rows += one_file(target, p)
                except MirError as e:
                    errors[p.name] = str(e)[:200]
            result = {
                "target": target,
                "llc": f"llvm-{VERSION.get(target, 19)}",
                "functions": rows,
                "errors": errors,
                "totals": totals(rows),
                "wall_s": time.perf_counter() - t0,
            }
            report["targets"].append(result)
            print(target, result["totals"], flush=True)
    md, js = harness.write_report(args.name, report, markdown(report))
    print(f"wrote {md} and {js}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
