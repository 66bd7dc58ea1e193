"""``jaxsched mir import|schedule|compare``: LLVM AMDGPU MIR front end.

jaxsched mir import IN.mir -o regions.jsonl      # or IN.ll (runs llc first)
jaxsched mir schedule IN.mir -o OUT.mir [--machine gfx906] [--seed 0]
jaxsched mir compare IN.ll [--json]              # llc with LLVM's scheduler vs ours
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from jaxsched.cli.main import MACHINE_HELP, UsageError, machine_named, seed_type


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "mir",
        help="import, schedule and compare LLVM AMDGPU MIR",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="mir_command", metavar="ACTION")
    sub.required = True

    imp = sub.add_parser("import", help="write the scheduling regions of a MIR file")
    imp.add_argument("input", help="MIR (llc -stop-before=machine-scheduler) or .ll file")
    imp.add_argument("-o", "--output", required=True, help="regions file (.jsonl or .json)")
    _common(imp, schedule=False)
    imp.set_defaults(func=run_import)

    sch = sub.add_parser("schedule", help="schedule every region and write the MIR back")
    sch.add_argument("input", help="MIR (llc -stop-before=machine-scheduler) or .ll file")
    sch.add_argument("-o", "--output", required=True, help="output MIR file")
    _common(sch, schedule=True)
    sch.set_defaults(func=run_schedule)

    cmp_ = sub.add_parser("compare", help="compile with LLVM's scheduler and with ours")
    cmp_.add_argument("input", help=".ll file (or pre-scheduler .mir)")
    cmp_.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _common(cmp_, schedule=True)
    cmp_.set_defaults(func=run_compare)


def _common(p: argparse.ArgumentParser, schedule: bool) -> None:
    p.add_argument("--mcpu", default="gfx906", help="llc target CPU for .ll input (gfx906)")
    if schedule:
        p.add_argument("--machine", default="gfx906", help=MACHINE_HELP)
        p.add_argument(
            "--seed", type=seed_type, default=0, help="random seed of the scheduler (>= 0)"
        )
        p.add_argument(
            "--method",
            default="auto",
            choices=METHODS,
            help="auto or schedule: the ant colony (jaxsched.colony.schedule); heuristic: the "
            "list-scheduling heuristic; original: keep the input order",
        )


#: Values of ``--method``.
METHODS = ("auto", "schedule", "heuristic", "original")


def _load(args: argparse.Namespace):
    from jaxsched.io.mir import read_input

    return read_input(args.input, mcpu=args.mcpu)


def scheduler_for(method: str, machine, seed: int):
    """(scheduler for `jaxsched.io.mir.schedule_orders` or None, its name) for ``--method``.

    The front end depends on no solver; this is where the CLI wires one in.
    """
    if method in ("auto", "schedule"):
        from jaxsched.colony import schedule

        def colony(regions):
            return [tuple(res.order) for res in schedule(regions, machine, seed=seed)]

        return colony, "jaxsched.colony.schedule"
    if method == "heuristic":
        from jaxsched.heuristics import heuristic_schedule

        def heuristic(regions):
            return [tuple(heuristic_schedule(r, machine, latencies=True)[1]) for r in regions]

        return heuristic, "heuristic_schedule"
    if method == "original":
        return None, "input order"
    raise UsageError(f"unknown --method {method!r} (choose {', '.join(METHODS)})")


def _report(module, notes: list[str] | None = None) -> None:
    kept = [r for r in module.regions if r.region is None or r.problem]
    n = sum(len(r) for r in module.regions)
    print(
        f"{len(module.functions)} functions, {len(module.regions)} regions, {n} instructions",
        file=sys.stderr,
    )
    for r in kept:
        print(f"  kept in input order: {r.name}: {r.problem}", file=sys.stderr)
    for line in notes or []:
        if "kept in input order (" not in line:
            print(f"  {line}", file=sys.stderr)


def run_import(args: argparse.Namespace) -> int:
    from jaxsched.problem.format import save_regions

    module = _load(args)
    regions = [r.region for r in module.regions if r.region is not None]
    save_regions(regions, args.output)
    _report(module)
    print(f"wrote {len(regions)} regions to {args.output}")
    return 0


def run_schedule(args: argparse.Namespace) -> int:
    from jaxsched.io.mir import schedule_orders, write_mir

    machine = machine_named(args.machine)
    module = _load(args)
    scheduler, name = scheduler_for(args.method, machine, args.seed)
    orders, notes = schedule_orders(module, scheduler, name=name)
    Path(args.output).write_text(write_mir(module, orders))
    _report(module, notes)
    changed = sum(o is not None and o != tuple(range(len(o))) for o in orders)
    print(
        f"scheduled with {name}: {changed} of {len(orders)} regions reordered; wrote {args.output}"
    )
    return 0


def run_compare(args: argparse.Namespace) -> int:
    from jaxsched.io.mir import compare

    scheduler, name = scheduler_for(args.method, machine_named(args.machine), args.seed)
    rows, module, notes = compare(args.input, scheduler, name=name, mcpu=args.mcpu)
    if args.json:
        print(
            json.dumps(
                [
                    {"function": r.function, "llvm": r.llvm._asdict(), "ours": r.ours._asdict()}
                    for r in rows
                ],
                indent=1,
            )
        )
        return 0
    _report(module, notes)
    print(f"scheduler: {name}   (llvm / ours)")
    head = (
        f"{'function':<24} {'VGPRs':>9} {'SGPRs':>9} {'occupancy':>9} {'spills':>9} "
        f"{'scratch':>11} {'code bytes':>11}"
    )
    print(head)
    for r in rows:
        a, b = r.llvm, r.ours
        print(
            f"{r.function:<24} {a.vgprs:>4}/{b.vgprs:<4} {a.sgprs:>4}/{b.sgprs:<4} "
            f"{a.occupancy:>4}/{b.occupancy:<4} {a.spills:>4}/{b.spills:<4} "
            f"{a.scratch:>5}/{b.scratch:<5} {a.code_size:>5}/{b.code_size:<5}"
        )
    return 0
