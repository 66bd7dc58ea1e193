"""Import, schedule and compare a directory of LLVM IR (.ll) / pre-scheduler MIR (.mir) files.

    python benchmarks/llvm_corpus.py [DIR] [--quick] [--machine gfx906] [--seed 0]

For every file: llc -> MIR (stopped before the machine scheduler), import the regions, schedule
them (``jaxsched.colony.schedule``) and compare with
LLVM's own scheduler on the same regions (our model: schedule length by greedy list placement of
each order, occupancy by the verifier's RP) and after register allocation (llc's VGPRs, SGPRs,
occupancy, spills, code size). The scheduler is timed twice per file: the first call includes
any JIT compilation, the second is the warm run time. Writes
``benchmarks/reports/llvm_corpus.{md,json}``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import harness

from jaxsched.colony import schedule
from jaxsched.heuristics import issue_cycles
from jaxsched.io.mir import read_mir, schedule_orders, write_mir
from jaxsched.io.mir_llc import asm_stats, find_llc, ll_to_mir, mir_to_asm
from jaxsched.io.mir_llvm import llvm_orders
from jaxsched.machines.model import get_machine
from jaxsched.verify import verify

SCHEDULER = "jaxsched.colony.schedule"
ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "benchmarks" / "reports"


def _model(region, order, machine) -> tuple[int, int]:
    rep = verify(region, machine, issue_cycles(region, order, machine.issue_width), order=order)
    return rep.length, rep.occupancy


def run_file(path: Path, machine, seed: int) -> dict:
    def scheduler(regions):
        return [res.order for res in schedule(regions, machine, seed=seed)]

    t0 = time.perf_counter()
    mir_text = ll_to_mir(path) if path.suffix == ".ll" else path.read_text()
    module = read_mir(str(path), text=mir_text)
    regions = module.regions
    t_import = time.perf_counter() - t0
    t_first, t_compile, _, (orders, notes) = harness.compiles_during(
        lambda: schedule_orders(module, scheduler, name=SCHEDULER)
    )
    t0 = time.perf_counter()
    schedule_orders(module, scheduler, name=SCHEDULER)
    t_warm = time.perf_counter() - t0
    theirs = llvm_orders(module)
    rows = []
    for mr, ours, llvm in zip(regions, orders, theirs, strict=True):
        if mr.region is None or llvm is None:
            continue
        ident = tuple(range(len(mr)))
        o_len, o_occ = _model(mr.region, mr.model_order(ours or ident), machine)
        l_len, l_occ = _model(mr.region, mr.model_order(llvm), machine)
        i_len, i_occ = _model(mr.region, mr.model_order(ident), machine)
        rows.append(
            {
                "region": mr.name,
                "size": len(mr),
                "ours_length": o_len,
                "llvm_length": l_len,
                "input_length": i_len,
                "ours_occupancy": o_occ,
                "llvm_occupancy": l_occ,
                "input_occupancy": i_occ,
            }
        )
    ours_asm = mir_to_asm(write_mir(module, orders))
    llvm_asm = mir_to_asm(mir_text, start="-start-before")  # same MIR as ours
    a, b = asm_stats(llvm_asm), asm_stats(ours_asm)
    kernels = [{"function": f, "llvm": a[f]._asdict(), "ours": b[f]._asdict()} for f in a if f in b]
    return {
        "file": path.name,
        "regions": len(regions),
        "unmodelled": sum(r.region is None for r in regions),
        "notes": notes,
        "import_s": t_import,
        "schedule_first_s": t_first,
        "schedule_compile_s": t_compile,  # of schedule_first_s
        "schedule_warm_s": t_warm,
        "region_rows": rows,
        "kernels": kernels,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?", default=str(ROOT / "tests" / "data"))
    ap.add_argument("--quick", action="store_true", help="at most 3 files (well under a minute)")
    ap.add_argument("--machine", default="gfx906")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if find_llc() is None:
        print("llc not found: install LLVM 14+", file=sys.stderr)
        return 2
    files = sorted(
        p
        for p in Path(args.dir).iterdir()
        if p.suffix in (".ll", ".mir") and not p.name.startswith("nvptx")
    )
    files = [
        p
        for p in files
        if p.suffix == ".mir" or "amdgcn" in p.read_text() or "amdgpu" in p.read_text()
    ]
    if args.quick:
        files = files[:3]
    machine = get_machine(args.machine)
    env = harness.environment(quick=args.quick, seed=args.seed)
    results = []
    for p in files:
        try:
            results.append(run_file(p, machine, args.seed))
        except ValueError as e:  # bad MIR, llc failure: report, go on
            results.append({"file": p.name, "error": str(e)})
            print(f"{p.name}: {e}", file=sys.stderr)
    ok = [r for r in results if "error" not in r]
    rows = [x for r in ok for x in r["region_rows"]]
    kern = [k for r in ok for k in r["kernels"]]
    sizes = [x["size"] for x in rows] or [0]
    tot = {
        "scheduler": SCHEDULER,
        "machine": machine.name,
        "files": len(files),
        "failed": len(results) - len(ok),
        "regions": sum(r["regions"] for r in ok),
        "unmodelled": sum(r["unmodelled"] for r in ok),
        "instructions": sum(sizes),
        "size_min": min(sizes),
        "size_median": statistics.median(sizes),
        "size_max": max(sizes),
        "length_ours": sum(x["ours_length"] for x in rows),
        "length_llvm": sum(x["llvm_length"] for x in rows),
        "length_input": sum(x["input_length"] for x in rows),
        "model_occ_ours": sum(x["ours_occupancy"] for x in rows),
        "model_occ_llvm": sum(x["llvm_occupancy"] for x in rows),
        "asm_occ_ours": sum(k["ours"]["occupancy"] for k in kern if k["ours"]["occupancy"] > 0),
        "asm_occ_llvm": sum(k["llvm"]["occupancy"] for k in kern if k["llvm"]["occupancy"] > 0),
        "asm_vgprs_ours": sum(k["ours"]["vgprs"] for k in kern),
        "asm_vgprs_llvm": sum(k["llvm"]["vgprs"] for k in kern),
        "spills_ours": sum(k["ours"]["spills"] for k in kern),
        "spills_llvm": sum(k["llvm"]["spills"] for k in kern),
        "import_s": sum(r["import_s"] for r in ok),
        "schedule_first_s": sum(r["schedule_first_s"] for r in ok),
        "schedule_warm_s": sum(r["schedule_warm_s"] for r in ok),
        "schedule_compile_s": sum(r["schedule_compile_s"] for r in ok),
    }
    tot["compile_s_estimate"] = max(0.0, tot["schedule_first_s"] - tot["schedule_warm_s"])

    def ratio(a: float, b: float) -> str:
        return f"{a / b:.3f}" if b else "n/a"

    lines = [
        "# LLVM corpus: jaxsched vs LLVM's machine scheduler",
        "",
        harness.environment_markdown(env),
        "",
        f"Scheduler: `{tot['scheduler']}`, machine `{tot['machine']}`, files {tot['files']} "
        f"({tot['failed']} failed), regions {tot['regions']} ({tot['unmodelled']} unmodelled), "
        f"instructions {tot['instructions']} (region size min/median/max {tot['size_min']}/"
        f"{tot['size_median']}/{tot['size_max']}).",
        "",
        "| measure | ours | LLVM | ours / LLVM |",
        "|---|---|---|---|",
        f"| schedule length, model (sum, cycles) | {tot['length_ours']} | {tot['length_llvm']} | "
        f"{ratio(tot['length_ours'], tot['length_llvm'])} |",
        f"| input order length, model | {tot['length_input']} | {tot['length_llvm']} | "
        f"{ratio(tot['length_input'], tot['length_llvm'])} |",
        f"| occupancy, model (sum over regions) | {tot['model_occ_ours']} | "
        f"{tot['model_occ_llvm']} | {ratio(tot['model_occ_ours'], tot['model_occ_llvm'])} |",
        f"| occupancy after RA (sum over kernels) | {tot['asm_occ_ours']} | "
        f"{tot['asm_occ_llvm']} | {ratio(tot['asm_occ_ours'], tot['asm_occ_llvm'])} |",
        f"| VGPRs after RA (sum) | {tot['asm_vgprs_ours']} | {tot['asm_vgprs_llvm']} | "
        f"{ratio(tot['asm_vgprs_ours'], tot['asm_vgprs_llvm'])} |",
        f"| spills | {tot['spills_ours']} | {tot['spills_llvm']} | |",
        "",
        f"Time: import {tot['import_s']:.3f} s; schedule first call {tot['schedule_first_s']:.3f}"
        f" s (includes compilation: {tot['schedule_compile_s']:.3f} s measured, first minus "
        f"warm {tot['compile_s_estimate']:.3f} s), warm "
        f"{tot['schedule_warm_s']:.3f} s.",
        "",
        "| file | function | VGPRs llvm/ours | SGPRs | occupancy | spills | code bytes |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in ok:
        for k in r["kernels"]:
            a_, b_ = k["llvm"], k["ours"]
            lines.append(
                f"| {r['file']} | {k['function']} | {a_['vgprs']}/{b_['vgprs']} | "
                f"{a_['sgprs']}/{b_['sgprs']} | {a_['occupancy']}/{b_['occupancy']} | "
                f"{a_['spills']}/{b_['spills']} | {a_['code_size']}/{b_['code_size']} |"
            )
    harness.write_report(
        "llvm_corpus", {"environment": env, "totals": tot, "files": results}, "\n".join(lines)
    )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
