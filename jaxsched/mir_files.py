"""Schedule LLVM MIR files with a solver: every region of every file in one scheduler call,
each file's MIR written back, checked and measured, and, when llc is at hand, guarded after
register allocation (`jaxsched.io.mir_guard`: never worse than LLVM's own scheduler).

The front end (`jaxsched.io`) imports no solver; this module wires it to the colony::

    for f in schedule_files(["a.mir", "b.ll"], get_machine("gfx942"), seed=0):
        print(f.path, f.error or f"{f.changed} regions reordered, {f.before} -> {f.after}")
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from jaxsched.errors import InputError
from jaxsched.io.mir import (
    MCPU,
    LlcError,
    MirModule,
    Orders,
    Scheduler,
    check_target,
    find_llc,
    machine_target,
    read_input,
    schedule_modules,
    write_mir,
)
from jaxsched.io.mir_guard import Decision, GuardError
from jaxsched.io.mir_guard import guard as guard_module
from jaxsched.machines.model import Machine
from jaxsched.problem.region import Region


class Summary(NamedTuple):
    """A file's schedule as `jaxsched.verify.verify` measures it: the lowest occupancy of its
    modelled regions (-1 without any) and the sum of their lengths (cycles, latencies
    included, each region issued in order at the earliest cycles)."""

    occupancy: int
    length: int


@dataclass
class FileSchedule:
    """One input of `schedule_files`: either ``error`` (why the file failed: it names the
    file), or the module, its orders and notes, the MIR text to write, the input's and the
    schedule's `Summary` (the model's), and the guard's decision per function (llc's figures
    with LLVM's scheduler and with ours; ``text`` holds LLVM's schedule where it kept it)."""

    path: str
    error: str | None = None
    module: MirModule | None = None
    orders: Orders = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    text: str = ""
    before: Summary | None = None
    after: Summary | None = None
    guard: list[Decision] = field(default_factory=list)  # per function, when guarded
    guard_note: str = ""  # why the guard did not run (llc missing or failing), if it did not

    @property
    def changed(self) -> int:
        """How many regions are reordered."""
        return sum(o is not None and o != tuple(range(len(o))) for o in self.orders)


def schedule_files(
    paths: Sequence[str | os.PathLike],
    machine: Machine | None = None,
    *,
    seed: int = 0,
    time_limit: float | None = None,
    scheduler: Scheduler | None = None,
    name: str = "jaxsched.colony.schedule",
    mcpu: str | None = None,
    llc: str | os.PathLike | None = None,
    force_target: bool = False,
    guard: bool | None = None,
) -> list[FileSchedule]:
    """Schedule every region of every file in ONE scheduler call; one `FileSchedule` per path.

    Args:
      paths: pre-scheduler ``.mir`` files, or ``.ll`` files (llc runs first).
      machine: a `jaxsched.machines.Machine` (default gfx906); an AMDGPU preset also gives
        llc's ``-mcpu``/``-mattr`` and the MIR latency table (`machine_target`).
      seed / time_limit: of `jaxsched.colony.schedule`, the default ``scheduler``
        (`colony_scheduler`: no register of the headroom spent for length).
      scheduler: regions -> orders (see `schedule_orders`), e.g. a heuristic.
      name: the scheduler's name in the notes.
      mcpu: the target where the machine is none (default gfx906); it must agree with the
        machine's.
      llc: the llc to run (`find_llc`).
      force_target: schedule a MIR file whose IR names another ``target-cpu`` (`check_target`).
      guard: after scheduling, compile each file both ways with llc and keep LLVM's schedule
        for every function where ours ends with lower occupancy, more spills or more scratch
        (`jaxsched.io.mir_guard`). None (default): when llc is found, and a failing llc only
        leaves a ``guard_note``; True: llc is required (a failure is the file's error); False:
        off.
    A file that cannot be read (missing, malformed, llc fails, another target) gets its
    ``error``; the others are still scheduled. Every order is checked (`check_order`) and
    measured (`jaxsched.verify.verify`); results do not depend on which files share the call.
    """
    machine = machine or _default_machine()
    mcpu, mattr = _machine_cpu(machine.name, mcpu)
    files = [FileSchedule(path=str(p)) for p in paths]
    for f in files:
        _read_one(f, mcpu, mattr, llc, force_target)
    good = [f for f in files if f.error is None]
    if scheduler is None:
        scheduler = colony_scheduler(machine, seed, time_limit)
    results = schedule_modules([f.module for f in good], scheduler, name=name)
    guarded = guard if guard is not None else find_llc(llc) is not None
    for f, (orders, notes) in zip(good, results, strict=True):
        f.orders, f.notes = orders, notes
        _finish_one(f, machine)
        if guarded and f.error is None:
            _guard_one(f, mcpu, mattr, llc, required=guard is True)
    return files


def _guard_one(
    f: FileSchedule, mcpu: str, mattr: str, llc: str | os.PathLike | None, required: bool
) -> None:
    """Guard ``f.text`` after register allocation (`jaxsched.io.mir_guard.guard`)."""
    assert f.module is not None
    try:
        f.text, f.guard = guard_module(
            f.module.text, f.text, mcpu=mcpu, mattr=mattr, llc=llc, source=f.path
        )
    except GuardError as e:
        f.error, f.text = _named(f.path, str(e)), ""
    except LlcError as e:
        if required:
            f.error, f.text = _named(f.path, f"the guard needs llc: {e}"), ""
        else:
            f.guard_note = f"not guarded after register allocation: {e}"


def _default_machine() -> Machine:
    from jaxsched.machines.model import gfx906

    return gfx906()


def _machine_cpu(machine_name: str, mcpu: str | None) -> tuple[str, str]:
    """(mcpu, mattr) for a machine and an optional explicit ``mcpu``; `InputError` if they
    disagree."""
    target = machine_target(machine_name)
    if target is None:
        return mcpu or MCPU, ""
    if mcpu is not None and mcpu != target[0]:
        raise InputError(f"--mcpu {mcpu} disagrees with machine {machine_name} ({target[0]})")
    return target


#: The colony's headroom allowance on the MIR path, where LLVM's register allocator follows
#: the schedule: no register of an occupancy level's headroom is spent for length (the
#: headroom rule, docs/colony.md; `benchmarks/reports/postra.md`).
MIR_HEADROOM_ALLOWANCE = 0.0


def colony_scheduler(
    machine: Machine,
    seed: int,
    time_limit: float | None = None,
    headroom_allowance: float = MIR_HEADROOM_ALLOWANCE,
) -> Scheduler:
    """`jaxsched.colony.schedule` on ``machine`` as a `Scheduler` (imported when called),
    with the MIR path's ``headroom_allowance``."""

    def colony(regions: list[Region]) -> list[tuple[int, ...]]:
        from jaxsched.colony import schedule

        got = schedule(
            regions,
            machine,
            seed=seed,
            time_limit=time_limit,
            headroom_allowance=headroom_allowance,
        )
        return [tuple(r.order) for r in got]

    return colony


def _named(path: str, message: str) -> str:
    return message if path in message or Path(path).name in message else f"{path}: {message}"


def _read_one(
    f: FileSchedule, mcpu: str, mattr: str, llc: str | os.PathLike | None, force: bool
) -> None:
    """Read ``f.path`` into ``f.module``, or set ``f.error``."""
    try:
        f.module = read_input(f.path, mcpu=mcpu, mattr=mattr, llc=llc)
        if not force:
            check_target(f.module, mcpu)
    except InputError as e:
        f.module, f.error = None, _named(f.path, str(e))
    except OSError as e:
        f.module, f.error = None, _named(f.path, e.strerror or str(e))


def _finish_one(f: FileSchedule, machine: Machine) -> None:
    """Write ``f``'s MIR text and measure its input and scheduled orders (``f.error`` if an
    order fails)."""
    from jaxsched.heuristics import issue_cycles
    from jaxsched.verify import InvalidSchedule, verify

    assert f.module is not None
    try:
        f.text = write_mir(f.module, f.orders)
        before, after = [], []
        for mr, order in zip(f.module.regions, f.orders, strict=True):
            if mr.region is None or mr.problem:
                continue
            ident = tuple(range(len(mr)))
            for out, o in ((before, ident), (after, order or ident)):
                rep = verify(mr.region, machine, issue_cycles(mr.region, o), order=o)
                out.append(rep)
        f.before, f.after = _summary(before), _summary(after)
    except (InputError, InvalidSchedule) as e:
        f.error, f.text = _named(f.path, str(e)), ""


def _summary(reports: list) -> Summary:
    if not reports:
        return Summary(-1, 0)
    return Summary(min(r.occupancy for r in reports), sum(r.length for r in reports))
