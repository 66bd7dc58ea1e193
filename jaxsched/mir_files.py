"""Schedule LLVM MIR files with a solver: every region of every file in one scheduler call,
each file's MIR written back, checked and measured, and, when llc is at hand, the allocator in
the loop (`jaxsched.io.mir_select`): per function, the fastest of our schedule and LLVM's own
after register allocation, judged by LLVM's machine model, never worse than LLVM's.

The front end (`jaxsched.io`) imports no solver; this module wires it to the colony::

    for f in schedule_files(["a.mir", "b.ll"], get_machine("gfx942"), seed=0):
        print(f.path, f.error or f"{f.changed} regions reordered, {f.before} -> {f.after}")
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

from jaxsched.errors import InputError
from jaxsched.io.mir import (
    LlcError,
    MirModule,
    OrderError,
    Scheduler,
    check_order,
    check_target,
    machine_target,
    read_input,
    schedule_modules,
    write_mir,
)
from jaxsched.io.mir_judge import McaError
from jaxsched.io.mir_llc import MCPU, find_llc, llc_reading, llvm_version
from jaxsched.io.mir_llvm import llvm_schedule
from jaxsched.io.mir_select import (
    LLVM,
    Candidate,
    Choice,
    SelectError,
    reference_figures,
    select,
)
from jaxsched.io.mir_write import Orders
from jaxsched.machines.model import Machine
from jaxsched.problem.region import Region

__all__ = [
    "LLVM_OCCUPANCY",
    "LLVM_OCCUPANCY_RESERVE",
    "LLVM_OCCUPANCY_SHORTEST",
    "MIR_HEADROOM_ALLOWANCE",
    "MIR_HOIST_BELOW",
    "MIR_RESERVES",
    "OWN_OCCUPANCY",
    "SHORTEST",
    "FileSchedule",
    "Summary",
    "colony_scheduler",
    "default_strategies",
    "function_targets",
    "schedule_files",
]


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
    schedule's `Summary` (the model's), and the guard's choice per function (the judge's and
    llc's figures with LLVM's scheduler, of every candidate and of what is written; ``text``
    holds LLVM's schedule where it kept it)."""

    path: str
    error: str | None = None
    module: MirModule | None = None
    orders: Orders = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    text: str = ""
    before: Summary | None = None
    after: Summary | None = None
    guard: list[Choice] = field(default_factory=list)  # per function, when guarded
    guard_note: str = ""  # why the guard did not run (llc missing or failing), if it did not
    llvm_mir: str | None = None  # LLVM's scheduled MIR of the module, when guarded and our
    #                               writer cannot express all of LLVM's orders
    alternatives: dict[str, Orders] = field(default_factory=dict)  # other candidates of
    #                                  the scheduler by label (e.g. `SHORTEST`), for the guard

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
    strategies: Sequence[str] | None = None,
    mca: str | os.PathLike | None = None,
    headroom_allowance: float | None = None,
) -> list[FileSchedule]:
    """Schedule every region of every file in ONE scheduler call; one `FileSchedule` per path.

    Args:
      paths: pre-scheduler ``.mir`` files, or ``.ll`` files (llc runs first).
      machine: a `jaxsched.machines.Machine` (default gfx906); an AMDGPU preset also gives
        llc's ``-mcpu``/``-mattr`` and the MIR latency table (`machine_target`).
      seed / time_limit / headroom_allowance: of `jaxsched.colony.schedule`, the default
        ``scheduler`` (`colony_scheduler`: by default no register of the headroom spent for
        length, `MIR_HEADROOM_ALLOWANCE`; the orders without the headroom rule are a second
        candidate of the guard).
      scheduler: regions -> orders (see `schedule_orders`), e.g. a heuristic.
      name: the scheduler's name in the notes.
      mcpu: the target where the machine is none (default gfx906); it must agree with the
        machine's.
      llc: the llc to run (`find_llc`).
      force_target: schedule a MIR file whose IR names another ``target-cpu`` (`check_target`).
      guard: after scheduling, the allocator in the loop (`jaxsched.io.mir_select.select`):
        each file compiled with llc with our schedule, LLVM's, and LLVM's ``strategies``, the
        final code judged by llvm-mca (``mca``), and per function the fastest written that
        does not end with lower occupancy, more spills or more scratch than LLVM's. None
        (default): when llc is found, and a failing llc only leaves a ``guard_note``; True:
        llc is required (a failure is the file's error); False: off.
      strategies: LLVM's other scheduling strategies also tried (``-misched`` names, e.g.
        ``gcn-max-ilp``); one that llc cannot run on a file is left out with a note. None:
        `default_strategies` of the llc.
      mca: the llvm-mca to run (`jaxsched.io.mir_judge.find_mca`); without one, functions are
        chosen by llc's occupancy, spills and scratch alone (ours unless worse).
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
    alternatives: dict[str, list] = {}
    guarded = guard if guard is not None else find_llc(llc) is not None
    strategies = None if strategies is None else tuple(strategies)
    tools = _Tools(mcpu=mcpu, mattr=mattr, llc=llc, mca=mca, strategies=strategies)
    pool = ThreadPoolExecutor(_LLC_JOBS)
    try:
        # LLVM's own schedules do not depend on ours: llc makes them while the colony runs.
        early = [pool.submit(_llvm_runs, f.module, tools) if guarded else None for f in good]
        if scheduler is None:
            scheduler = _default_scheduler(
                good, machine, seed, time_limit, headroom_allowance, alternatives, early
            )
        results = _schedule(good, scheduler, name, alternatives)
        for f, (orders, notes), runs in zip(good, results, early, strict=True):
            f.orders, f.notes = orders, notes
            _finish_one(f, machine)
            if runs is not None and f.error is None:
                _guard_one(f, runs, required=guard is True)
    finally:
        pool.shutdown(cancel_futures=True)  # an interrupted call leaves no llc queued
    return files


def _default_scheduler(
    good: list[FileSchedule],
    machine: Machine,
    seed: int,
    time_limit: float | None,
    headroom_allowance: float | None,
    alternatives: dict[str, list],
    early: list,
) -> Scheduler:
    """`colony_scheduler` for the ``good`` files: each region's function by (file, function),
    llc's occupancy of it under LLVM's scheduler from ``early`` (each file's `_llvm_runs`
    future, or None)."""
    allowance = MIR_HEADROOM_ALLOWANCE if headroom_allowance is None else headroom_allowance
    functions = _functions(good)
    return colony_scheduler(
        machine,
        seed,
        time_limit,
        allowance,
        alternatives,
        function_of=lambda r: functions[id(r)],
        llvm_occupancy=lambda r: _llvm_occupancy(early, *functions[id(r)]),
    )


def _functions(files: list[FileSchedule]) -> dict[int, tuple[int, str]]:
    """(file, function) of every modelled region of ``files``, by the region's ``id``: the
    same function name in two files is two functions."""
    out = {}
    for i, f in enumerate(files):
        assert f.module is not None
        for mr in f.module.regions:
            if mr.region is not None:
                out[id(mr.region)] = (i, mr.function)
    return out


def default_strategies(llc: str | os.PathLike | None = None) -> tuple[str, ...]:
    """LLVM's other AMDGPU scheduling strategies the guard also tries by default, by the llc's
    LLVM version: ``gcn-max-ilp`` and ``gcn-iterative-ilp`` (LLVM 16 and newer), else
    ``gcn-ilp`` (LLVM 14 and 15; ``gcn-minreg`` is rarely faster); none for an unknown
    version."""
    exe = find_llc(llc)
    version = llvm_version(exe) if exe else 0
    if version >= 16:
        return ("gcn-max-ilp", "gcn-iterative-ilp")
    return ("gcn-ilp",) if version >= 14 else ()


def _schedule(
    good: list[FileSchedule], scheduler: Scheduler, name: str, alternatives: dict[str, list]
) -> list[tuple[Orders, list[str]]]:
    """One ``scheduler`` call on every region of the ``good`` files: (orders, notes) per
    file; the other candidates it leaves in ``alternatives`` go, checked, to each file's
    ``alternatives``."""
    modules = [f.module for f in good]
    results = schedule_modules(modules, scheduler, name=name)
    for label, orders in alternatives.items():  # the same orders, checked per module
        replayed = schedule_modules(modules, lambda _regions, o=orders: o, name=label)
        for f, (alt, _) in zip(good, replayed, strict=True):
            f.alternatives[label] = alt
    return results


class _Tools(NamedTuple):
    """What the guard runs: llc's target, llc, llvm-mca and LLVM's other strategies."""

    mcpu: str
    mattr: str
    llc: str | os.PathLike | None
    mca: str | os.PathLike | None
    strategies: tuple[str, ...] | None  # None: `default_strategies` of the llc


def _pinned(module: MirModule, tools: _Tools) -> _Tools:
    """``tools`` with one llc for every compile of ``module`` (the first installed one that
    reads it, `llc_reading`, when none is chosen) and its LLVM version's strategies."""
    llc = llc_reading(module.text, mcpu=tools.mcpu, mattr=tools.mattr, llc=tools.llc)
    strategies = tools.strategies
    return tools._replace(
        llc=llc, strategies=default_strategies(llc) if strategies is None else strategies
    )


#: llc processes the guard runs at once (each file's LLVM schedules, then its candidates).
_LLC_JOBS = max(1, min(2, os.cpu_count() or 1))


class _LlvmRuns(NamedTuple):
    """What llc makes of a module before our schedule is known (`_llvm_runs`)."""

    tools: _Tools  # pinned to the llc that reads the module (`_pinned`)
    runs: list  # `LlvmSchedule` or `LlcError`: LLVM's default strategy, then ``tools.strategies``
    reference: dict | Exception  # the judge's figures per function with LLVM's scheduler
    #                              (`reference_figures`), or the `LlcError` / `McaError`


def _llvm_runs(module: MirModule, tools: _Tools) -> _LlvmRuns:
    """LLVM's schedules of ``module``: its default strategy and each of ``tools.strategies``
    (`LlcError` raised when no llc reads the module; a strategy's own error kept in place),
    and the guard's reference (the final code of LLVM's schedule, judged)."""
    tools = _pinned(module, tools)
    kw = dict(mcpu=tools.mcpu, mattr=tools.mattr, llc=tools.llc)
    extras = [(), *([f"-misched={name}"] for name in tools.strategies)]
    with ThreadPoolExecutor(_LLC_JOBS) as pool:
        judged = pool.submit(_reference_or_error, module, dict(kw, mca=tools.mca))
        runs = list(pool.map(lambda extra: _llvm_or_error(module, extra, kw), extras))
        return _LlvmRuns(tools=tools, runs=runs, reference=judged.result())


def _reference_or_error(module: MirModule, kw: dict) -> dict | Exception:
    """`reference_figures` of ``module``, or the `LlcError` / `McaError`."""
    try:
        return reference_figures(module, **kw)
    except (LlcError, McaError) as e:
        return e


def _llvm_occupancy(early: list, file: int, function: str) -> int | None:
    """llc's occupancy of ``function`` of the ``file``-th module with LLVM's scheduler, from
    its `_llvm_runs` (waited for); None without one (no guard, llc failed, no occupancy)."""
    run = early[file]
    if run is None:
        return None
    try:
        reference = run.result().reference
    except LlcError:
        return None
    fig = reference.get(function) if isinstance(reference, dict) else None
    return fig.occupancy if fig is not None and fig.occupancy > 0 else None


def _guard_one(f: FileSchedule, early: Future, required: bool) -> None:
    """Choose each function's schedule of ``f`` after register allocation
    (`jaxsched.io.mir_select.select`), ours among LLVM's (``early``: the `_llvm_runs` of
    ``f``'s module, started before our schedule was known)."""
    assert f.module is not None
    try:
        llvm = early.result()
        f.text, f.guard = select(
            f.module,
            _candidates(f, llvm),
            mcpu=llvm.tools.mcpu,
            mattr=llvm.tools.mattr,
            llc=llvm.tools.llc,
            mca=llvm.tools.mca,
            llvm_mir=f.llvm_mir,
            reference=llvm.reference if isinstance(llvm.reference, dict) else None,
        )
    except SelectError as e:
        f.error, f.text = _named(f.path, str(e)), ""
    except (LlcError, McaError) as e:
        if required:
            f.error, f.text = _named(f.path, f"the guard needs llc and llvm-mca: {e}"), ""
        else:
            f.guard_note = f"not guarded after register allocation: {e}"


def _candidates(f: FileSchedule, llvm: _LlvmRuns) -> list[Candidate]:
    """Our schedule, LLVM's default one and its other strategies (``llvm``) as orders of
    ``f``'s regions (an LLVM order our model cannot write, e.g. one crossing a dependence
    our model keeps, is the input order)."""
    assert f.module is not None
    if isinstance(llvm.runs[0], LlcError):
        raise llvm.runs[0]
    theirs = _writable(f.module, llvm.runs[0].orders)
    modelled = [mr.region is not None and not mr.problem for mr in f.module.regions]
    complete = all(o is not None or not m for o, m in zip(theirs, modelled, strict=True))
    f.llvm_mir = None if complete else llvm.runs[0].mir  # LLVM's text: where ours cannot say it
    out = [Candidate("ours", f.orders), Candidate(LLVM, theirs)]
    out += [
        Candidate(label, orders) for label, orders in f.alternatives.items() if orders != f.orders
    ]
    for name, run in zip(llvm.tools.strategies, llvm.runs[1:], strict=True):
        if isinstance(run, LlcError):
            f.notes.append(f"LLVM's strategy {name} left out: {run}")
            continue
        out.append(Candidate(f"{LLVM}:{name}", _writable(f.module, run.orders)))
    return out


def _llvm_or_error(module: MirModule, extra: list[str], kw: dict):
    """`llvm_schedule` of ``module`` with llc options ``extra``, or the `LlcError`."""
    try:
        return llvm_schedule(module, extra=extra, **kw)
    except LlcError as e:
        return e


def _writable(module: MirModule, orders: Orders) -> Orders:
    """``orders`` with each one `check_order` refuses replaced by None (the input order)."""
    out: Orders = []
    for mr, order in zip(module.regions, orders, strict=True):
        try:
            out.append(None if order is None else check_order(mr, order))
        except OrderError:
            out.append(None)
    return out


def _default_machine() -> Machine:
    from jaxsched.machines.model import gfx906

    return gfx906()


def _machine_cpu(machine_name: str, mcpu: str | None) -> tuple[str, str]:
    """(mcpu, mattr) for a machine and an optional explicit ``mcpu``: the machine's own
    processor (an alias too), or one it is the nearest model of
    (`jaxsched.machines.amdgpu_names.nearest_model`, e.g. gfx908 on gfx906's model);
    `InputError` otherwise."""
    from jaxsched.machines.amdgpu_names import canonical, nearest_model

    target = machine_target(machine_name)
    if target is None:
        return mcpu or MCPU, ""
    if mcpu is None:
        return target
    if canonical(mcpu) != target[0] and nearest_model(mcpu) != machine_name:
        raise InputError(f"--mcpu {mcpu} disagrees with machine {machine_name} ({target[0]})")
    return mcpu, target[1]


#: The guard's label of the colony's orders with the headroom rule off (`colony_scheduler`).
SHORTEST = "ours-shortest"

#: The colony's headroom allowance on the MIR path, where LLVM's register allocator follows
#: the schedule: no register of an occupancy level's headroom is spent for length (the
#: headroom rule, docs/colony.md; `benchmarks/reports/postra.md`).
MIR_HEADROOM_ALLOWANCE = 0.0


def colony_scheduler(
    machine: Machine,
    seed: int,
    time_limit: float | None = None,
    headroom_allowance: float = MIR_HEADROOM_ALLOWANCE,
    alternatives: dict[str, list] | None = None,
    function_of: Callable[[Region], Hashable] | None = None,
    llvm_occupancy: Callable[[Region], int | None] | None = None,
) -> Scheduler:
    """`jaxsched.colony.schedule` on ``machine`` as a `Scheduler` (imported when called),
    with the MIR path's ``headroom_allowance``, each function's regions retargeted to the
    function's occupancy (`function_targets`: a kernel runs at the lowest occupancy of its
    regions, so a region above it spends the registers up to that level for length).
    ``function_of`` names each region's function (default: its name up to ``:bb.``, the MIR
    front end's ``function:bb.N:k``). With ``alternatives`` (a dict), each call also leaves
    there candidates for the guard, by label: under `SHORTEST` the orders the same search
    gives with the headroom rule off (`jaxsched.colony.Result.order_without_headroom`), which
    lets llc's allocator say whether the registers it takes fit; under `OWN_OCCUPANCY` the
    orders before the retargeting (where it changed any); under `LLVM_OCCUPANCY`, with
    ``llvm_occupancy`` (llc's occupancy of each region's function with LLVM's scheduler, or
    None), the regions above LLVM's occupancy solved again for it (`_at_llvm_occupancy`);
    `_reserved` and `_hoisted_to_level`. A function a few moves lift to the next occupancy
    level is solved again from there first (`_lifted`; under `UNLIFTED` the orders before)."""
    function_of = function_of or _function_by_name

    def colony(regions: list[Region]) -> list[tuple[int, ...]]:
        from jaxsched.colony import schedule

        def solve(subset: list[Region], m: Machine) -> list:
            kw = dict(seed=seed, time_limit=time_limit, headroom_allowance=headroom_allowance)
            return schedule(subset, m, **kw)

        got = solve(regions, machine)
        unlifted = [tuple(r.order) for r in got]
        got = _lifted(regions, got, machine, function_of, solve)
        own = [tuple(r.order) for r in got]
        targets = function_targets(regions, got, machine, function_of)
        got, targets = _retargeted(regions, got, targets, machine, solve)
        orders = [tuple(r.order) for r in got]
        if alternatives is not None:
            alternatives[SHORTEST] = [tuple(r.order_without_headroom) for r in got]
            if orders != own:
                alternatives[OWN_OCCUPANCY] = own
            if own != unlifted:  # after OWN_OCCUPANCY, whose label a file lifting nothing keeps
                alternatives[UNLIFTED] = unlifted
            if llvm_occupancy is not None:
                frugal, shortest = _at_llvm_occupancy(regions, got, machine, llvm_occupancy, solve)
                if frugal != orders:
                    alternatives[LLVM_OCCUPANCY] = frugal
                if shortest not in (orders, frugal):
                    alternatives[LLVM_OCCUPANCY_SHORTEST] = shortest
            alternatives.update(_reserved(regions, got, targets, machine, seed, time_limit))
            alternatives.update(_hoisted_to_level(regions, got, targets, machine))
        return orders

    return colony


#: The guard's label of the colony's orders before `_lifted` raised some function's occupancy.
UNLIFTED = "ours-unlifted"
#: `_lifted` tries a function whose regions at its lowest occupancy are at most this many
#: registers (summed over files) above the next level's limits.
LIFT_EXCESS = 4


def _lifted(
    regions: list[Region],
    got: list,
    machine: Machine,
    function_of: Callable[[Region], Hashable],
    solve: Callable[[list[Region], Machine], list],
) -> list:
    """``got`` with each function below the machine's target occupancy whose regions at its
    lowest occupancy `jaxsched.heuristics.lower_peak` brings all within the next level's
    limits (each at most `LIFT_EXCESS` registers above them): those regions solved again
    from the moved orders (renumbered, so that the colony starts there), each new result
    kept where its occupancy is higher. The RP objective is a staircase: the colony gets no
    pull towards a level it misses by a register (parboil's lbm loop, docs/colony.md)."""
    import numpy as np

    from jaxsched.heuristics.lower_peak import lower_peak
    from jaxsched.machines.model import rp_limits

    top, files = int(machine.target_occupancy), machine.file_names
    lowest = _lowest_occupancy(regions, got, top, function_of)
    moved: dict[int, tuple[int, ...]] = {}
    for key, low in lowest.items():
        if low >= top:
            continue
        limits = rp_limits(machine.occupancy_lut, top, top - low - 1, xp=np)
        ks = [k for k, r in enumerate(got) if function_of(regions[k]) == key and r.occupancy == low]
        found = {}
        for k in ks:
            peaks = np.asarray([got[k].peak_rp[f] for f in files])
            if int(np.maximum(peaks - limits, 0).sum()) > LIFT_EXCESS:
                break
            order = lower_peak(regions[k], machine, got[k].order, limits)
            if order is None:
                break
            found[k] = order
        else:
            moved.update(found)
    if not moved:
        return got
    ks = sorted(moved)
    new = solve([regions[k].renumbered(moved[k]) for k in ks], machine)
    out = list(got)
    for k, r in zip(ks, new, strict=True):
        if r.occupancy > got[k].occupancy:
            out[k] = _renumbered_back(r, moved[k])
    return out


def _renumbered_back(result, order: Sequence[int]):
    """A `jaxsched.colony.Result` of ``region.renumbered(order)`` as one of ``region``."""
    import numpy as np

    back = lambda o: tuple(int(order[j]) for j in o)  # noqa: E731
    cycles = np.empty_like(result.cycles)
    cycles[np.asarray(order)] = result.cycles
    return replace(
        result,
        order=back(result.order),
        cycles=cycles,
        order_without_headroom=back(result.order_without_headroom),
    )


#: The guard's label of the colony's orders before each function's regions are retargeted to
#: the function's occupancy (`function_targets`).
OWN_OCCUPANCY = "ours-own-occupancy"


#: The guard's label of the colony's orders with each region above its function's occupancy
#: under LLVM's scheduler solved again for that occupancy (`_at_llvm_occupancy`).
LLVM_OCCUPANCY = "ours-llvm-occupancy"
#: The same regions solved for LLVM's occupancy with `LLVM_OCCUPANCY_RESERVE` VGPR granules
#: held back, their orders without the headroom rule: where the model's occupancy of a region
#: is one the allocator does not reach, the level below buys the length the frugal order gives
#: away.
LLVM_OCCUPANCY_SHORTEST = "ours-llvm-occupancy-shortest"
#: VGPR allocation granules held back for `LLVM_OCCUPANCY_SHORTEST`. The model counts a tuple
#: per lane (as LLVM's trackers do), but the allocator needs contiguous registers for it:
#: parboil's mb_sad_calc loop (gfx906, occupancy 4, many 128-bit tuples) takes 67 VGPRs with
#: one granule held back (occupancy 3), 62 with two (870 cycles per wave slot, LLVM's 3,317).
LLVM_OCCUPANCY_RESERVE = 2


def _at_llvm_occupancy(
    regions: list[Region],
    got: list,
    machine: Machine,
    llvm_occupancy: Callable[[Region], int | None],
    solve: Callable[[list[Region], Machine], list],
) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """(frugal, shortest): the orders of ``got`` with each region whose occupancy is above
    llc's occupancy of its function under LLVM's scheduler, and whose length is above its
    bound, solved again for that occupancy (kept where shorter at it); ``shortest``: solved
    for it with `LLVM_OCCUPANCY_RESERVE` VGPR allocation granules held back, its order
    without the headroom rule (the allocator may need more than the model's peak). The guard
    admits nothing below LLVM's occupancy, and llc's allocation can keep a function below the
    model's occupancy (scratch, or more registers than the model's peaks): the registers up to
    LLVM's level buy length."""
    top = int(machine.target_occupancy)
    targets = []
    for region, r in zip(regions, got, strict=True):
        level = llvm_occupancy(region)
        room = level is not None and level < r.occupancy and r.length > r.length_lower_bound
        targets.append(min(top, level) if room else top)
    todo = [k for k, t in enumerate(targets) if t < top]
    orders = [tuple(r.order) for r in got]
    for k, r in _by_target(regions, todo, targets, machine, solve).items():
        if r.occupancy >= targets[k] and r.length < got[k].length:
            orders[k] = tuple(r.order)
    shortest = list(orders)
    held = _held_back(machine, LLVM_OCCUPANCY_RESERVE)
    for k, r in _by_target(regions, todo, targets, held, solve).items():
        if r.occupancy >= targets[k] and r.order_without_headroom:
            shortest[k] = tuple(r.order_without_headroom)
    return orders, shortest


def _held_back(machine: Machine, granules: int) -> Machine:
    """``machine`` with ``granules`` VGPR allocation granules held back at every occupancy
    level (``machine`` itself for a machine without a VGPR file or a known target)."""
    from jaxsched.machines.amdgpu import TARGETS
    from jaxsched.machines.model import reserve_registers

    target = TARGETS.get(machine.name)
    if target is None or "VGPR" not in machine.file_names:
        return machine
    return reserve_registers(machine, "VGPR", granules * target.vgpr_granule)


def _function_by_name(region: Region) -> str:
    """A region's function by its name: ``function`` of the MIR front end's ``function:bb.N:k``
    (the whole name where it has no ``:bb.``)."""
    return region.name.split(":bb.")[0]


def function_targets(
    regions: Sequence[Region],
    results: Sequence,
    machine: Machine,
    function_of: Callable[[Region], Hashable],
) -> list[int]:
    """Per region, the occupancy to schedule it for: the lowest occupancy of its function's
    ``results`` (one `jaxsched.colony.Result` per region) where the region's own is higher and
    its length is above its lower bound, else ``machine.target_occupancy``. The final code runs
    at its function's lowest occupancy: registers above that level and below the region's own
    buy length and cost nothing (LLVM's GCN scheduler reschedules to the function's occupancy
    likewise)."""
    top = int(machine.target_occupancy)
    lowest = _lowest_occupancy(regions, results, top, function_of)
    out = []
    for region, r in zip(regions, results, strict=True):
        low = lowest[function_of(region)]
        room = r.occupancy > low and r.length > r.length_lower_bound
        out.append(low if room else top)
    return out


def _lowest_occupancy(
    regions: Sequence[Region],
    results: Sequence,
    top: int,
    function_of: Callable[[Region], Hashable],
) -> dict[Hashable, int]:
    """Per function, the lowest occupancy of its regions' ``results`` (at most ``top``)."""
    lowest: dict[Hashable, int] = {}
    for region, r in zip(regions, results, strict=True):
        key = function_of(region)
        lowest[key] = min(lowest.get(key, top), int(r.occupancy))
    return lowest


def _by_target(
    regions: Sequence[Region],
    todo: Sequence[int],
    targets: Sequence[int],
    machine: Machine,
    solve: Callable[[list[Region], Machine], list],
) -> dict[int, object]:
    """``solve`` of the regions ``todo`` (indices), one call per distinct target occupancy
    (``machine`` with ``targets[k]``): results by index."""
    out: dict[int, object] = {}
    for target in sorted({targets[k] for k in todo}):
        ks = [k for k in todo if targets[k] == target]
        m = (
            machine
            if target == machine.target_occupancy
            else replace(machine, target_occupancy=target)
        )
        out.update(zip(ks, solve([regions[k] for k in ks], m), strict=True))
    return out


def _retargeted(
    regions: list[Region],
    got: list,
    targets: list[int],
    machine: Machine,
    solve: Callable[[list[Region], Machine], list],
) -> tuple[list, list[int]]:
    """(``got`` with each region whose target (`function_targets`) is below the machine's
    solved again for it, the new result kept where it is shorter at that occupancy or above;
    each result's target occupancy: the region's where its new result is kept, else the
    machine's, so that each result's ``rp_cost`` counts from its own target)."""
    top = int(machine.target_occupancy)
    todo = [k for k, t in enumerate(targets) if t < top]
    out, used = list(got), [top] * len(got)
    for k, r in _by_target(regions, todo, targets, machine, solve).items():
        if r.occupancy >= targets[k] and r.length < got[k].length:
            out[k], used[k] = r, targets[k]
    return out, used


#: The guard's candidates with VGPRs held back: the colony run again, with this many VGPR
#: allocation granules fewer at every occupancy level, on the regions whose shortest order
#: takes registers of the headroom (the allocator needs more than the model's peak there).
#: One granule: on the shared kernels two won once, by 2% (benchmarks/reports/postra.md), for
#: another colony call per file.
MIR_RESERVES = (1,)


def _reserved(
    regions: list[Region],
    got: list,
    targets: list[int],
    machine: Machine,
    seed: int,
    time_limit: float | None,
) -> dict[str, list[tuple[int, ...]]]:
    """`SHORTEST`'s orders with the regions whose headroom rule chose another order
    rescheduled with `MIR_RESERVES` granules of VGPRs held back (each at its target
    occupancy), by label."""
    from jaxsched.colony import schedule

    todo = [k for k, r in enumerate(got) if r.order != r.order_without_headroom]
    if not todo or _held_back(machine, 1) is machine:
        return {}

    def solve(subset: list[Region], m: Machine) -> list:
        return schedule(subset, m, seed=seed, time_limit=time_limit)

    out = {}
    for reserve in MIR_RESERVES:
        held = _held_back(machine, reserve)
        orders = [tuple(r.order_without_headroom) for r in got]
        for k, r in _by_target(regions, todo, targets, held, solve).items():
            orders[k] = tuple(r.order_without_headroom)
        out[f"ours-reserve{reserve}"] = orders
    return out


#: The guard's candidates with VGPRs spent for length after the colony: on each region the
#: colony leaves far from its length bound (`jaxsched.colony.host.hoistable`), its order hoisted
#: (`jaxsched.heuristics.hoist`) up to this many VGPRs below the limit of its occupancy level
#: (other files at the order's own peaks), by label. The colony keeps a level's top eighth
#: free (the headroom rule); llc's allocator says here whether more registers fit: parboil's
#: mb_sad_calc loop on gfx942 comes to 371 cycles at occupancy 8 (62 VGPRs) with 4 below the
#: level's 64, where LLVM's is 379 and the colony's 968 (benchmarks/reports/postra.md).
MIR_HOIST_BELOW = (4, 8)


def _hoisted_to_level(
    regions: list[Region], got: list, targets: list[int], machine: Machine
) -> dict[str, list[tuple[int, ...]]]:
    """The colony's orders with each far region hoisted to `MIR_HOIST_BELOW` VGPRs under
    its occupancy level's limit (at its target occupancy, `function_targets`), by label (none
    where no region moves)."""
    import numpy as np

    from jaxsched.colony.host import hoistable
    from jaxsched.heuristics.hoist import hoist
    from jaxsched.machines.model import rp_limits

    if "VGPR" not in machine.file_names:
        return {}
    v = machine.file_index("VGPR")
    out = {}
    for below in MIR_HOIST_BELOW:
        orders, moved = [tuple(r.order) for r in got], False
        for k, r in enumerate(got):
            if not hoistable(r):
                continue
            cap = [r.peak_rp[f] for f in machine.file_names]
            level = rp_limits(machine.occupancy_lut, targets[k], r.rp_cost, xp=np)
            cap[v] = max(cap[v], int(level[v]) - below)
            found = hoist(regions[k], machine, r.order, cap)
            if found is not None:
                orders[k], moved = found[0], True
        if moved:
            out[f"ours-hoist{below}"] = orders
    return out


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
                full = mr.model_order(o)
                rep = verify(mr.region, machine, issue_cycles(mr.region, full), order=full)
                out.append(rep)
        f.before, f.after = _summary(before), _summary(after)
    except (InputError, InvalidSchedule) as e:
        f.error, f.text = _named(f.path, str(e)), ""


def _summary(reports: list) -> Summary:
    if not reports:
        return Summary(-1, 0)
    return Summary(min(r.occupancy for r in reports), sum(r.length for r in reports))
