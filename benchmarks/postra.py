"""Benchmark: LLVM's verdict after register allocation, LLVM's scheduler against jaxsched's, on
the real training kernels, with the model's view beside each function.

    .venv/bin/python benchmarks/postra.py [--kernels kernels.tar.gz|DIR] [--targets gfx906,gfx942]
        [--files N] [--every K] [--llc LLC15] [--llc-new LLC19] [--seed 0] [--set KEY=VALUE]
        [--name postra]

Per target: each kernel's IR (``ll/*.ll`` of ``../shared/data/kernels.tar.gz``, clang 15 for
gfx906) without its ``"target-cpu"``/``"target-features"`` attributes goes through
``llc -mcpu=TARGET -stop-before=machine-scheduler``; every region of every file is scheduled in
one `jaxsched.colony.schedule` call (the target's preset and latencies); then each file is
compiled by llc twice from the same MIR: with LLVM's scheduler (``-start-before``) and with
our order (``-start-after=machine-scheduler``). Per function: llc's NumVgprs, NumSgprs,
Occupancy, spills, ScratchSize and code size for both, and the model's view of LLVM's order
and ours (the lowest occupancy over the function's regions, the peak VGPRs, the summed
length). Each occupancy difference after allocation is classified:

* ``trade``: the model gave ours lower occupancy too (the colony bought length with it);
* ``allocator``: the model gave ours at least LLVM's occupancy, the allocator needed more;
* ``model``: ours higher after allocation as the model said (or higher without the model).

Writes ``benchmarks/reports/{name}.{md,json}``.
"""

from __future__ import annotations

import argparse
import sys
import tarfile
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness
from llc_occupancy import compile_ir, strip_target_attributes

from jaxsched.colony import schedule
from jaxsched.heuristics import issue_cycles
from jaxsched.io.mir import AsmStats, asm_stats, read_mir, schedule_orders, write_mir
from jaxsched.io.mir_select import worse_than_llvm
from jaxsched.io.mir_llvm import llvm_orders
from jaxsched.machines.amdgpu import TARGETS
from jaxsched.machines.model import get_machine
from jaxsched.mir_files import MIR_HEADROOM_ALLOWANCE
from jaxsched.verify import InvalidSchedule, verify

KERNELS = harness.ROOT.parent / "shared" / "data" / "kernels.tar.gz"


def ir_files(path: Path, tmp: Path, limit: int | None, every: int) -> list[Path]:
    """The kernels' IR files (unpacked into ``tmp`` from the tarball), every ``every``-th."""
    if path.suffix == ".gz":
        with tarfile.open(path) as tar:
            tar.extractall(tmp, filter="data")
        path = tmp / "kernels" / "ll"
    files = sorted(path.glob("*.ll"))[::every]
    return files[:limit] if limit else files


def llc(binary: str, target: str, args: list[str], text: str) -> str:
    """llc's output for ``text`` on stdin for ``target`` (`llc_occupancy.compile_ir`: MIR when
    ``args`` start after the instruction selector, else IR)."""
    return compile_ir(binary, text, TARGETS[target], args)


def model_view(regions, orders, machine) -> dict[str, dict]:
    """Per function: lowest occupancy, highest VGPR peak and summed length of ``orders``."""
    out: dict[str, dict] = defaultdict(lambda: {"occupancy": 99, "vgprs": 0, "length": 0})
    for mr, order in zip(regions, orders, strict=True):
        if mr.region is None or order is None:
            continue
        try:
            rep = verify(mr.region, machine, issue_cycles(mr.region, order, machine.issue_width))
        except InvalidSchedule:  # LLVM's order crosses an edge of our model (kept apart)
            continue
        f = out[mr.function]
        f["occupancy"] = min(f["occupancy"], rep.occupancy)
        f["vgprs"] = max(f["vgprs"], rep.peak_rp.get("VGPR", 0))
        f["length"] += rep.length
    return dict(out)


def classify(llvm: dict, ours: dict, m_llvm: dict | None, m_ours: dict | None) -> str:
    """Why the occupancies after allocation differ ("" when they do not)."""
    if ours["occupancy"] == llvm["occupancy"]:
        return ""
    if ours["occupancy"] > llvm["occupancy"]:
        return "model"
    if m_llvm and m_ours and m_ours["occupancy"] < m_llvm["occupancy"]:
        return "trade"
    return "allocator"


def llc_for(target: str, args) -> str:
    """LLVM 15 (the kernels' own) for gfx906; LLVM 19 for the newer targets (llc 15 cannot
    select some of this IR's loads for gfx942)."""
    return args.llc if target == "gfx906" else args.llc_new


def one_target(target: str, files: list[Path], args, tmp: Path) -> dict:
    """Schedule every file's regions for ``target`` in one call, then compare after RA."""
    args = argparse.Namespace(**{**vars(args), "llc": llc_for(target, args)})
    machine = get_machine(target)
    mcpu = TARGETS[target].mcpu
    mods, errors = {}, {}
    for f in files:
        try:
            ir = strip_target_attributes(f.read_text())
            mir = llc(args.llc, target, ["-stop-before=machine-scheduler"], ir)
            mods[f.name] = (mir, read_mir(f.name, text=mir, mcpu=mcpu))
        except (RuntimeError, ValueError) as e:
            errors[f.name] = str(e)
    regions = [r for _, m in mods.values() for r in m.regions]
    model = {"length": 0, "occupancy": 0}

    def solve(rs):
        results = schedule(rs, machine, seed=args.seed, **args.overrides)
        model["length"] += sum(r.length for r in results)
        model["occupancy"] += sum(r.occupancy for r in results)
        return [r.order for r in results]

    seconds, compile_s, _, (orders, notes) = harness.compiles_during(
        lambda: schedule_orders(regions, solve)
    )
    kernels, k = [], 0
    for name, (mir, module) in mods.items():
        mine = orders[k : k + len(module.regions)]
        k += len(module.regions)
        try:
            kernels += compare_file(name, mir, module, mine, machine, target, args)
        except (RuntimeError, ValueError) as e:
            errors[name] = str(e)
    print(f"{target}: {len(mods)} files, {len(regions)} regions in {seconds:.1f} s", flush=True)
    return {
        "target": target,
        "llc": Path(args.llc).parts[-3] if args.llc.startswith("/usr/lib/") else args.llc,
        "files": len(files),
        "regions": len(regions),
        "schedule_s": seconds,
        "schedule_compile_s": compile_s,  # of schedule_s
        "model_total": model,  # every modelled region: summed length and occupancy
        "errors": errors,
        "notes": notes,
        "kernels": kernels,
    }


def compare_file(name, mir, module, orders, machine, target, args) -> list[dict]:
    """Per function of one file: llc's statistics both ways and the model's view."""
    theirs = llvm_orders(
        module, mcpu=TARGETS[target].mcpu, mattr=TARGETS[target].mattr, llc=args.llc
    )
    llvm_asm = asm_stats(llc(args.llc, target, ["-start-before=machine-scheduler"], mir))
    ours_asm = asm_stats(
        llc(args.llc, target, ["-start-after=machine-scheduler"], write_mir(module, orders))
    )
    # The model's view on the regions whose LLVM order could be read back (`llvm_orders`
    # matches instructions by text; a region it cannot match counts for neither side).
    ident = [tuple(range(len(r))) if r.region is not None else None for r in module.regions]
    mine = [
        o or i if t is not None else None for o, i, t in zip(orders, ident, theirs, strict=True)
    ]
    m_llvm = model_view(module.regions, theirs, machine)
    m_ours = model_view(module.regions, mine, machine)
    matched = defaultdict(lambda: [0, 0])
    for mr, t in zip(module.regions, theirs, strict=True):
        matched[mr.function][0] += t is not None
        matched[mr.function][1] += 1
    rows = []
    for fn, a in llvm_asm.items():
        if fn not in ours_asm:
            continue
        a, b = a._asdict(), ours_asm[fn]._asdict()
        ml, mo = m_llvm.get(fn), m_ours.get(fn)
        rows.append(
            {"file": name, "function": fn, "llvm": a, "ours": b, "model_llvm": ml,
             "model_ours": mo, "model_regions": matched.get(fn, [0, 0]),
             "why": classify(a, b, ml, mo)}
        )  # fmt: skip
    return rows


#: LLVM's scheduler, stopped where our order is applied (its order, read back as MIR).
SCHEDULED_BY_LLVM = ["-start-before=machine-scheduler", "-stop-after=machine-scheduler"]


def guarded(k: dict) -> dict:
    """A function's figures with the guard (`jaxsched.io.mir_select`): LLVM's where ours is
    worse after allocation, else ours (what ``mir schedule`` writes when llc is at hand)."""
    worse = worse_than_llvm(AsmStats(**k["ours"]), AsmStats(**k["llvm"]))
    return k["llvm"] if worse else k["ours"]


def totals(result: dict) -> dict:
    """Sums and counts over a target's kernels (functions with an occupancy), the colony
    alone and with the guard."""
    ks = [k for k in result["kernels"] if k["llvm"]["occupancy"] > 0]
    allk = result["kernels"]
    equal = [k for k in ks if k["model_llvm"] and k["model_ours"]]
    equal = [k for k in equal if k["model_llvm"]["occupancy"] == k["model_ours"]["occupancy"]]
    return {
        "kernels": len(ks),
        "occupancy_higher": sum(k["ours"]["occupancy"] > k["llvm"]["occupancy"] for k in ks),
        "occupancy_lower": sum(k["ours"]["occupancy"] < k["llvm"]["occupancy"] for k in ks),
        "vgprs_llvm": sum(k["llvm"]["vgprs"] for k in allk),
        "vgprs_ours": sum(k["ours"]["vgprs"] for k in allk),
        "spilling_llvm": sum(k["llvm"]["spills"] > 0 for k in allk),
        "spilling_ours": sum(k["ours"]["spills"] > 0 for k in allk),
        "spills_llvm": sum(k["llvm"]["spills"] for k in allk),
        "spills_ours": sum(k["ours"]["spills"] for k in allk),
        "guarded_occupancy_higher": sum(
            guarded(k)["occupancy"] > k["llvm"]["occupancy"] for k in ks
        ),
        "guarded_occupancy_lower": sum(
            guarded(k)["occupancy"] < k["llvm"]["occupancy"] for k in ks
        ),
        "guarded_vgprs_ours": sum(guarded(k)["vgprs"] for k in allk),
        "guarded_spilling_ours": sum(guarded(k)["spills"] > 0 for k in allk),
        "guard_kept_llvm": sum(guarded(k) is k["llvm"] for k in allk),
        "regions_read_back": sum(k["model_regions"][0] for k in allk),
        "regions_modelled": sum(k["model_regions"][1] for k in allk),
        "code_llvm": sum(k["llvm"]["code_size"] for k in allk),
        "code_ours": sum(k["ours"]["code_size"] for k in allk),
        "model_length_llvm_equal_occupancy": sum(k["model_llvm"]["length"] for k in equal),
        "model_length_ours_equal_occupancy": sum(k["model_ours"]["length"] for k in equal),
    }


def markdown(report: dict) -> str:
    env = report["environment"]
    lines = [
        "# After register allocation: LLVM's scheduler against jaxsched's",
        "",
        harness.environment_markdown(env),
        "",
        f"Seed {report['seed']}, "
        f"overrides {report['overrides'] or 'none'}. "
        f"Kernels: `{report['kernels']}` ({report['files']} files). Each file compiled twice "
        "by llc from the same pre-scheduler MIR; the model's view (occupancy, VGPR peak, "
        "length over the function's regions) beside it. The colony alone (no guard):",
        "",
    ]
    head = ["target", "llc", "kernels", "occ higher", "occ lower", "VGPRs LLVM/ours",
            "spilling fns", "spills", "code bytes", "model length at equal occ",
            "LLVM orders read back", "schedule s (compile)", "errors"]  # fmt: skip
    rows = []
    for r in report["targets"]:
        t = r["totals"]
        rows.append(
            [r["target"], r["llc"], t["kernels"], t["occupancy_higher"], t["occupancy_lower"],
             f"{t['vgprs_llvm']}/{t['vgprs_ours']}", f"{t['spilling_llvm']}/{t['spilling_ours']}",
             f"{t['spills_llvm']}/{t['spills_ours']}", f"{t['code_llvm']}/{t['code_ours']}",
             f"{t['model_length_llvm_equal_occupancy']}/{t['model_length_ours_equal_occupancy']}",
             f"{t['regions_read_back']}/{t['regions_modelled']}",
             f"{r['schedule_s']:.1f} ({r.get('schedule_compile_s', float('nan')):.1f})",
             len(r["errors"])]
        )  # fmt: skip
    lines += [harness.table(head, rows), ""]
    lines += [
        "The model over every modelled region, our orders: "
        + "; ".join(
            f"{r['target']} summed length {r['model_total']['length']}, occupancy "
            f"{r['model_total']['occupancy']}"
            for r in report["targets"]
        )
        + ".",
        "",
    ]
    lines += [
        "With the guard (what `jaxsched mir schedule` writes when llc is at hand: LLVM's "
        "schedule for each function where ours ends with lower occupancy, more spills or more "
        "scratch):",
        "",
    ]
    head = ["target", "occ higher", "occ lower", "VGPRs LLVM/ours", "spilling fns LLVM/ours",
            "functions where LLVM's schedule is kept"]  # fmt: skip
    rows = [
        [r["target"], r["totals"]["guarded_occupancy_higher"],
         r["totals"]["guarded_occupancy_lower"],
         f"{r['totals']['vgprs_llvm']}/{r['totals']['guarded_vgprs_ours']}",
         f"{r['totals']['spilling_llvm']}/{r['totals']['guarded_spilling_ours']}",
         r["totals"]["guard_kept_llvm"]]
        for r in report["targets"]
    ]  # fmt: skip
    lines += [harness.table(head, rows), ""]
    for r in report["targets"]:
        lines += [f"## {r['target']}: every function whose allocation differs", ""]
        lines.append(differences_table(r["kernels"]))
        lines.append("")
        lines += [f"- `{f}`: {e}" for f, e in r["errors"].items()]
    return "\n".join(lines) + "\n"


def differences_table(kernels: list[dict]) -> str:
    head = ["file", "function", "occupancy LLVM/ours", "VGPRs LLVM/ours", "spills",
            "model regions", "model occ LLVM/ours", "model VGPR peak LLVM/ours",
            "model length LLVM/ours", "why"]  # fmt: skip
    rows = []
    for k in kernels:
        a, b, ml, mo = k["llvm"], k["ours"], k["model_llvm"], k["model_ours"]
        if (a["occupancy"], a["vgprs"], a["spills"]) == (b["occupancy"], b["vgprs"], b["spills"]):
            continue
        model = (
            [f"{ml['occupancy']}/{mo['occupancy']}", f"{ml['vgprs']}/{mo['vgprs']}",
             f"{ml['length']}/{mo['length']}"]
            if ml and mo else ["", "", ""]
        )  # fmt: skip
        rows.append(
            [k["file"][:48], k["function"][:32], f"{a['occupancy']}/{b['occupancy']}",
             f"{a['vgprs']}/{b['vgprs']}", f"{a['spills']}/{b['spills']}",
             "{}/{}".format(*k["model_regions"]), *model, k["why"]]
        )  # fmt: skip
    return harness.table(head, rows) if rows else "(none)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=Path, default=KERNELS, help="kernels.tar.gz or an ll dir")
    ap.add_argument("--targets", default="gfx906,gfx942")
    ap.add_argument("--files", type=int, default=None, help="only the first N files")
    ap.add_argument("--every", type=int, default=1, help="every K-th file (a sample)")
    ap.add_argument("--llc", default="/usr/lib/llvm-15/bin/llc", help="llc for gfx906")
    ap.add_argument("--llc-new", default="/usr/lib/llvm-19/bin/llc", help="llc for the others")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--name", default="postra")
    ap.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE",
        help="a `schedule` keyword (float), e.g. rp_headroom=0 (repeatable)",
    )  # fmt: skip
    args = ap.parse_args(argv)
    # The MIR path's parameters (what `jaxsched mir schedule` runs), then --set.
    args.overrides = {"headroom_allowance": MIR_HEADROOM_ALLOWANCE}
    args.overrides |= {k: float(v) for k, v in (kv.split("=", 1) for kv in args.set)}
    report = {
        "environment": harness.environment(files=args.files, every=args.every),
        "seed": args.seed,
        "overrides": args.overrides,
        "kernels": str(args.kernels),
    }
    with tempfile.TemporaryDirectory() as t:
        files = ir_files(args.kernels, Path(t), args.files, args.every)
        report["files"] = len(files)
        report["targets"] = [
            one_target(target, files, args, Path(t)) for target in args.targets.split(",")
        ]
    for r in report["targets"]:
        r["totals"] = totals(r)
    md, _ = harness.write_report(args.name, report, markdown(report))
    print(md.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
