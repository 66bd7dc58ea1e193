"""``jaxsched mir import|schedule|compare``: LLVM AMDGPU MIR front end.

jaxsched mir import IN.mir -o regions.jsonl      # or IN.ll (runs llc first)
jaxsched mir schedule IN.mir -o OUT.mir [--machine gfx906] [--seed 0] [--time-limit S]
jaxsched mir schedule A.mir B.ll C.mir -o OUTDIR # every region of every file in one call
jaxsched mir schedule IN.ll -o OUT.o --emit obj  # llc's final code of the schedule (or asm)
jaxsched mir compare IN.ll [--json]              # llc with LLVM's scheduler vs ours

--machine NAME (an AMDGPU preset) or --mcpu CPU (an LLVM AMDGPU processor or alias: gfx908,
tonga...) names the target: llc's -mcpu, the machine model and the MIR latency table (a CPU
without a model of its own gets the nearest modelled one, with a warning; both options given
must agree; neither: gfx906).
A MIR file compiled for another target-cpu is an error unless --force-target. --llc PATH (or
$JAXSCHED_LLC) chooses the llc run on .ll inputs, by the guard and by compare; by default
the PATH's llc, then each other installed one, newest last, until one succeeds.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from jaxsched.cli.main import MACHINES, UsageError, machine_named, seconds_type, seed_type
from jaxsched.errors import InputError

if TYPE_CHECKING:  # the CLI imports the library lazily (start-up time)
    from jaxsched.machines.amdgpu_names import TargetChoice
    from jaxsched.machines.model import Machine

#: Values of ``--emit`` (`jaxsched.io.mir_emit.EMITS`, spelled out so that building the parser
#: imports no more of the package).
EMITS = ("mir", "asm", "obj")


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

    _register_schedule(sub)

    cmp_ = sub.add_parser("compare", help="compile with LLVM's scheduler and with ours")
    cmp_.add_argument("input", help=".ll file (or pre-scheduler .mir)")
    cmp_.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _common(cmp_, schedule=True)
    cmp_.set_defaults(func=run_compare)


def _register_schedule(sub: argparse._SubParsersAction) -> None:
    """``jaxsched mir schedule``: its inputs, output, colony options and the guard."""
    sch = sub.add_parser(
        "schedule", help="schedule every region of one or more files and write the MIR back"
    )
    sch.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="MIR (llc -stop-before=machine-scheduler) or .ll files, all scheduled in one call",
    )
    sch.add_argument(
        "-o",
        "--output",
        required=True,
        help="output file (one input), or directory (several: each output keeps its "
        "input's base name, with .mir, .s or .o as --emit says)",
    )
    sch.add_argument(
        "--emit",
        choices=EMITS,
        default="mir",
        help="what to write: the scheduled MIR (default), or what llc makes of it with its "
        "scheduler off and every later pass on (llc -start-before=machine-scheduler "
        "-enable-misched=false): asm, assembly; obj, an AMDGPU ELF object (ld.lld -shared "
        "links it into a code object)",
    )
    _common(sch, schedule=True)
    sch.add_argument(
        "--time-limit",
        type=seconds_type,
        default=None,
        metavar="SECONDS",
        help="stop the colony after this many seconds; every region keeps its best order",
    )
    sch.add_argument(
        "--force-target",
        action="store_true",
        help="schedule MIR compiled for another target-cpu than --machine's or --mcpu's",
    )
    sch.add_argument(
        "--llvm-strategies",
        type=_strategies,
        default=None,
        metavar="NAMES",
        help="LLVM's other scheduling strategies the guard also tries, comma-separated -misched "
        "names (e.g. gcn-max-ilp), or 'none' (default: gcn-max-ilp,gcn-iterative-ilp with "
        "LLVM 16+, gcn-ilp with LLVM 14/15)",
    )
    guard = sch.add_mutually_exclusive_group()
    guard.add_argument(
        "--guard",
        dest="guard",
        action="store_const",
        const=True,
        default=None,
        help="require the guard after register allocation (default: on when llc is found): "
        "each file compiled both ways by llc, LLVM's schedule kept for every function where "
        "ours ends with lower occupancy, more spills or more scratch",
    )
    guard.add_argument(
        "--no-guard",
        dest="guard",
        action="store_const",
        const=False,
        help="no guard: the colony's schedule for every function",
    )
    sch.set_defaults(func=run_schedule)


def _strategies(text: str) -> tuple[str, ...]:
    """argparse type of ``--llvm-strategies``: ``none`` or comma-separated ``-misched`` names."""
    if text.strip() == "none":
        return ()
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    if not names or not all(re.fullmatch(r"[\w.-]+", x) for x in names):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of names")
    return names


def _allowance(text: str) -> float:
    """argparse type of ``--headroom-allowance``: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value < 1e9:
        raise argparse.ArgumentTypeError(f"{text} is not a number >= 0")
    return value


def _common(p: argparse.ArgumentParser, schedule: bool) -> None:
    p.add_argument(
        "--mcpu",
        default=None,
        metavar="CPU",
        help="the target: an LLVM AMDGPU processor or alias (gfx908, tonga...), llc's -mcpu; "
        "alone, it also picks the machine model and latency table, its own or the nearest "
        "modelled one with a warning (docs/frontends.md) (default: --machine's, else gfx906)",
    )
    p.add_argument(
        "--llc",
        default=None,
        metavar="PATH",
        help="the llc to run (default $JAXSCHED_LLC, else llc, llc-14 ... on the PATH: the "
        "first found, then each other installed one, newest last, until one succeeds)",
    )
    if schedule:
        p.add_argument("--machine", default=None, help=_MACHINE_HELP)
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
        p.add_argument(
            "--headroom-allowance",
            type=_allowance,
            default=None,
            metavar="A",
            help="the colony's headroom rule: the fraction of an occupancy level's register "
            "limit a region may take in the level's top eighth per fraction of length it gains "
            "(default 0: none, as LLVM's register allocator needs more than the model's peak; "
            "docs/colony.md)",
        )


#: Values of ``--method``.
METHODS = ("auto", "schedule", "heuristic", "original")
#: Help of ``--machine``.
_MACHINE_HELP = (
    f"machine preset: {', '.join(MACHINES)} (default: --mcpu's model, else gfx906; "
    "docs/machines.md)"
)


def _llc(args: argparse.Namespace) -> str | None:
    """``--llc`` checked (`UsageError` if it names no program), or None for the default."""
    from jaxsched.io.mir_llc import find_llc

    if args.llc is None:
        return None
    found = find_llc(args.llc)
    if found is None:
        raise UsageError(f"--llc {args.llc}: no such program")
    return found


def _choice(args: argparse.Namespace) -> TargetChoice:
    """The target of ``--machine`` / ``--mcpu``
    (`jaxsched.machines.amdgpu_names.choose_target`), a warning on stderr when its model is
    another processor's; `UsageError` for an unknown ``--mcpu`` or a disagreement."""
    from jaxsched.io.mir_llc import MCPU
    from jaxsched.machines.amdgpu_names import canonical, choose_target

    try:
        choice = choose_target(getattr(args, "machine", None), args.mcpu, MCPU)
    except InputError as e:
        raise UsageError(str(e)) from None
    if choice.fallback:
        print(
            f"jaxsched {args.command}: warning: no model of {canonical(choice.mcpu)} "
            f"(--mcpu {choice.mcpu}): using {choice.machine}'s, the nearest modelled target "
            f"(docs/frontends.md); llc still compiles for {choice.mcpu}",
            file=sys.stderr,
        )
    return choice


def _target(args: argparse.Namespace) -> tuple[str, str]:
    """llc's (mcpu, mattr) of ``--machine`` / ``--mcpu`` (`_choice`)."""
    choice = _choice(args)
    return choice.mcpu, choice.mattr


def _machine_target(args: argparse.Namespace) -> tuple[Machine, str, str]:
    """The machine and llc's (mcpu, mattr) of ``--machine`` / ``--mcpu`` (`_choice`)."""
    choice = _choice(args)
    return machine_named(choice.machine), choice.mcpu, choice.mattr


def _load(args: argparse.Namespace):
    from jaxsched.io.mir import read_input

    mcpu, mattr = _target(args)
    return read_input(args.input, mcpu=mcpu, mattr=mattr, llc=_llc(args))


def scheduler_for(
    method: str,
    machine,
    seed: int,
    time_limit: float | None = None,
    headroom_allowance: float | None = None,
):
    """(scheduler for `jaxsched.io.mir.schedule_orders` or None, its name) for ``--method``.

    The front end depends on no solver; this is where the CLI wires one in.
    """
    if method in ("auto", "schedule"):
        from jaxsched.mir_files import MIR_HEADROOM_ALLOWANCE, colony_scheduler

        if headroom_allowance is None:
            headroom_allowance = MIR_HEADROOM_ALLOWANCE
        colony = colony_scheduler(machine, seed, time_limit, headroom_allowance)
        return colony, "jaxsched.colony.schedule"
    if method == "heuristic":
        from jaxsched.heuristics import heuristic_schedule

        def heuristic(regions):
            return [tuple(heuristic_schedule(r, machine, latencies=True)[1]) for r in regions]

        return heuristic, "heuristic_schedule"
    if method == "original":
        return None, "input order"
    raise UsageError(f"unknown --method {method!r} (choose {', '.join(METHODS)})")


def _report(module, notes: list[str] | None = None, prefix: str = "") -> None:
    """The module's size, its regions kept in input order and ``notes``, on stderr."""
    kept = [r for r in module.regions if r.region is None or r.problem]
    n = sum(len(r) for r in module.regions)
    print(
        f"{prefix}{len(module.functions)} functions, {len(module.regions)} regions, "
        f"{n} instructions",
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
    """``mir schedule``: every input's regions in one scheduler call, each file written (or
    its error printed); exit 2 if any file failed."""
    from jaxsched.io.mir_emit import SUFFIXES, require_llc
    from jaxsched.mir_files import schedule_files

    machine, mcpu, mattr = _machine_target(args)
    llc = _llc(args)
    require_llc(args.emit, llc)  # before any work: asm and obj need llc
    outputs = output_paths(args.inputs, args.output, SUFFIXES[args.emit])
    if args.method in ("auto", "schedule"):  # schedule_files' colony, with its candidates
        scheduler, name = None, "jaxsched.colony.schedule"
    else:
        scheduler, name = scheduler_for(args.method, machine, args.seed)
        scheduler = scheduler or _input_orders
    files = schedule_files(
        args.inputs,
        machine,
        seed=args.seed,
        time_limit=args.time_limit,
        headroom_allowance=args.headroom_allowance,
        scheduler=scheduler,
        name=name,
        mcpu=mcpu,
        llc=llc,
        force_target=args.force_target,
        guard=args.guard,
        strategies=args.llvm_strategies,
    )
    failed = 0
    for f, out in zip(files, outputs, strict=True):
        if f.error is None:
            _write_output(f, out, args.emit, mcpu=mcpu, mattr=mattr, llc=llc)
        if f.error is not None:
            failed += 1
            print(f"jaxsched {args.command}: error: {f.error}", file=sys.stderr)
            continue
        _report(f.module, f.notes, f"{f.path}: " if len(files) > 1 else "")
        print(_summary_line(f, name, out, len(files) > 1))
        _report_guard(f)
    if len(files) > 1:
        print(f"{len(files) - failed} of {len(files)} files scheduled in one call")
    return 2 if failed else 0


def _write_output(f, out: Path, kind: str, *, mcpu: str, mattr: str, llc: str | None) -> None:
    """Write ``f``'s MIR, or what llc makes of it (``kind``, `jaxsched.io.mir_emit.emit`), to
    ``out``; a failing llc or an unwritable ``out`` becomes ``f.error``."""
    from jaxsched.io.mir import LlcError
    from jaxsched.io.mir_emit import emit, save

    try:
        save(out, emit(f.text, kind, mcpu=mcpu, mattr=mattr, llc=llc))
    except LlcError as e:
        f.error = f"{f.path}: --emit {kind}: {e}"
    except OSError as e:
        f.error = f"{out}: cannot write: {e.strerror or e}"


def _report_guard(f) -> None:
    """Per function, the final code after register allocation (llc) and its time by the judge
    (llvm-mca cycles per wave slot): LLVM's scheduler -> what is written, and why."""
    if f.guard_note:
        print(f"  {f.guard_note}", file=sys.stderr)
    for c in f.guard:
        a, b = c.llvm, c.final
        line = (
            f"  {c.function}: after RA (llc), LLVM's scheduler -> written: VGPRs "
            f"{a.stats.vgprs} -> {b.stats.vgprs}, occupancy {a.occupancy} -> {b.occupancy}, "
            f"spills {a.stats.spills} -> {b.stats.spills}, cycles per wave slot "
            f"{_cycles(a)} -> {_cycles(b)}"
        )
        print(f"{line}; {_kept(c)}")


def _cycles(fig) -> str:
    """A judge's figure: cycles per wave slot (llvm-mca cycles x block frequencies /
    occupancy), or why there is none."""
    return "? (no llvm-mca)" if math.isnan(fig.time) else f"{fig.time:.1f}"


def _kept(c) -> str:
    """What the guard wrote for a function and why."""
    from jaxsched.io.mir_select import LLVM, LLVM_MIR

    if c.kept == LLVM_MIR:
        return f"kept LLVM's schedule ({c.reason})"
    if c.kept == LLVM or c.kept.startswith(f"{LLVM}:"):
        strategy = c.kept.partition(":")[2] or "default"
        return f"kept LLVM's schedule ({strategy} strategy, as our orders; {c.reason})"
    gain = 1 - c.final.time / c.llvm.time if c.llvm.time > 0 else math.nan
    if math.isnan(gain):
        return f"kept ours ({c.kept})"
    return f"kept ours ({c.kept}: {100 * gain:.1f}% less time per wave slot)"


def _input_orders(regions) -> list[tuple[int, ...]]:
    return [tuple(range(len(r))) for r in regions]


def _summary_line(f, name: str, out: Path, several: bool) -> str:
    """``[FILE: ]scheduled with NAME: C of R regions reordered, occupancy A -> B, length
    X -> Y cycles; wrote OUT``."""
    n = len(f.orders)
    line = f"{f.path}: " if several else ""
    line += f"scheduled with {name}: {f.changed} of {n} regions reordered"
    if f.before is not None and f.after is not None and f.before.occupancy >= 0:
        line += (
            f", occupancy {f.before.occupancy} -> {f.after.occupancy}, length "
            f"{f.before.length} -> {f.after.length} cycles"
        )
    return f"{line}; wrote {out}"


def output_paths(inputs: list[str], output: str, suffix: str = ".mir") -> list[Path]:
    """Where each input's output goes: ``output`` itself for one input (or
    ``output/NAME{suffix}`` when it is a directory); for several, ``output/NAME{suffix}`` with
    the directory created. `UsageError` when ``output`` is not a directory, two inputs share a
    name or an output would overwrite its input."""
    out = Path(output)
    if len(inputs) == 1 and not out.is_dir():
        paths = [out]
    else:
        if len(inputs) > 1 and (out.exists() and not out.is_dir()):
            raise UsageError(f"-o {output}: with {len(inputs)} inputs -o must name a directory")
        if len(inputs) > 1 and not out.exists() and out.suffix in (".mir", ".ll", suffix):
            raise UsageError(
                f"-o {output} names a file; with {len(inputs)} inputs -o must name a directory"
            )
        paths = [out / (Path(p).stem + suffix) for p in inputs]
        seen: dict[Path, str] = {}
        for p, src in zip(paths, inputs, strict=True):
            if p in seen:
                raise UsageError(f"inputs {seen[p]} and {src} would both be written to {p}")
            seen[p] = src
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(f"-o {output}: cannot create the directory: {e.strerror}") from None
    for p, src in zip(paths, inputs, strict=True):
        if p.exists() and Path(src).exists() and p.resolve() == Path(src).resolve():
            raise UsageError(f"-o would overwrite the input {src}")
    return paths


def run_compare(args: argparse.Namespace) -> int:
    from jaxsched.io.mir import compare

    machine, mcpu, mattr = _machine_target(args)
    scheduler, name = scheduler_for(args.method, machine, args.seed, None, args.headroom_allowance)
    rows, module, notes = compare(
        args.input, scheduler, name=name, mcpu=mcpu, mattr=mattr, llc=_llc(args)
    )
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
