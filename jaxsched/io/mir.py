"""LLVM AMDGPU MIR in and out: import regions, schedule them, write MIR back, compare with llc.

Typical use::

    module = read_mir("kernel.mir")            # llc -stop-before=machine-scheduler output
    regions = [r.region for r in module.regions if r.region is not None]
    machine = gfx906()
    orders, notes = schedule_orders(
        module, lambda rs: [r.order for r in jaxsched.colony.schedule(rs, machine)]
    )
    text = write_mir(module, orders)           # same MIR, instructions reordered

The front end imports no solver: the caller passes the scheduling function
(`jaxsched.mir_files.schedule_files` wires the colony, many files in one call).

`compare` runs ``llc`` twice (LLVM's own scheduler, and our order with `KEEP_ORDER`) and reads
VGPRs, SGPRs, occupancy, spills, scratch and code size from the assembler output of each
(`AsmStats`).

The public names are `__all__` (docs/api.md); the parser, region builder, writer and llc
runner behind them live in the internal modules ``mir_parse``, ``mir_regions``, ``mir_write``
and ``mir_llc``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from jaxsched.files import open_binary
from jaxsched.io.mir_llc import (
    KEEP_ORDER,
    MCPU,
    AsmStats,
    LlcError,
    asm_stats,
    ll_to_mir,
    mir_to_asm,
)
from jaxsched.io.mir_parse import MirError
from jaxsched.io.mir_regions import MirModule, MirRegion, read_mir
from jaxsched.io.mir_write import OrderError, Orders, check_order, write_mir
from jaxsched.problem.region import Region

__all__ = [
    "KEEP_ORDER",
    "AsmStats",
    "LlcError",
    "MirError",
    "MirModule",
    "MirRegion",
    "OrderError",
    "Scheduler",
    "check_order",
    "compare",
    "read_input",
    "read_mir",
    "schedule_modules",
    "schedule_orders",
    "write_mir",
]

#: A scheduler for `schedule_orders`: the regions in, one order per region out (original
#: instruction ids in issue order), e.g. ``lambda rs: [r.order for r in schedule(rs, m)]``.
Scheduler = Callable[[list[Region]], Sequence[Sequence[int]]]


def read_input(
    path: str | os.PathLike,
    *,
    mcpu: str = MCPU,
    mattr: str = "",
    llc: str | os.PathLike | None = None,
) -> MirModule:
    """A MIR file, or a ``.ll`` file compiled by llc up to the machine scheduler, parsed
    (regions with ``mcpu``'s latencies)."""
    p = Path(path)
    if p.suffix != ".ll":
        return read_mir(p, mcpu=latency_cpu(mcpu))
    open_binary(p, MirError).close()  # missing, a directory, unreadable: a clear MirError
    try:
        text = ll_to_mir(p, mcpu=mcpu, mattr=mattr, llc=llc)
    except LlcError as e:
        raise LlcError(f"{p}: {e}", e.stderr) from None
    return read_mir(str(p), text=text, mcpu=latency_cpu(mcpu))


def latency_cpu(mcpu: str) -> str:
    """The latency table (`jaxsched.io.latency.LATENCY_BY_CPU`) used for llc's ``mcpu``: its
    own, else its model's (`jaxsched.machines.amdgpu_names.nearest_model`: ``gfx940`` and
    ``gfx950`` get gfx942's, ``tonga`` gfx906's), else gfx906's."""
    from jaxsched.io.latency import LATENCY_BY_CPU
    from jaxsched.machines.amdgpu_names import nearest_model

    cpu = mcpu if mcpu in LATENCY_BY_CPU else nearest_model(mcpu)
    return cpu if cpu in LATENCY_BY_CPU else MCPU


_TARGET_CPU = re.compile(r'"target-cpu"="([^"]*)"')


def target_cpus(module: MirModule) -> set[str]:
    """The ``"target-cpu"`` attributes of the module's embedded LLVM IR (empty without IR)."""
    return set(_TARGET_CPU.findall(module.text))


def check_target(module: MirModule, mcpu: str) -> None:
    """`MirError` naming the file and both targets if the module's IR says another
    ``target-cpu`` than ``mcpu`` (llc would compile it for that one); LLVM's aliases of a
    processor agree (``tonga`` is ``gfx802``, `jaxsched.machines.amdgpu_names.canonical`)."""
    from jaxsched.machines.amdgpu_names import canonical

    want = canonical(mcpu) or mcpu
    other = sorted(cpu for cpu in target_cpus(module) if (canonical(cpu) or cpu) != want)
    if other:
        named = (
            cpu if canonical(cpu) in (None, cpu) else f"{cpu} ({canonical(cpu)})" for cpu in other
        )
        raise MirError(
            f"{module.source}: compiled for target-cpu {', '.join(named)}, not {mcpu} "
            f"(choose the matching --mcpu or --machine, or --force-target to schedule it as "
            f"{mcpu})"
        )


# ---------------------------------------------------------------------- scheduling


def schedule_orders(
    module: MirModule | Sequence[MirRegion], scheduler: Scheduler | None, *, name: str = ""
) -> tuple[Orders, list[str]]:
    """An order per region of ``module`` and notes on regions kept in input order.

    ``scheduler`` maps the modelled regions to one order each (original ids in issue order);
    None keeps every input order. The front end depends on no solver: the caller passes one,
    e.g. the CLI binds `jaxsched.colony.schedule` to a machine and seed. Any order that fails
    `check_order` is replaced by the input order and reported in the notes (with ``name``).
    The one-module case of `schedule_modules`.
    """
    regions = list(module.regions if isinstance(module, MirModule) else module)
    return schedule_modules([regions], scheduler, name=name)[0]


def schedule_modules(
    modules: Sequence[MirModule | Sequence[MirRegion]],
    scheduler: Scheduler | None,
    *,
    name: str = "",
) -> list[tuple[Orders, list[str]]]:
    """`schedule_orders` of several modules with ONE call of ``scheduler`` on all their
    modelled regions (one compilation for a whole build); (orders, notes) per module."""
    per = [list(m.regions if isinstance(m, MirModule) else m) for m in modules]
    out: list[tuple[Orders, list[str]]] = []
    todo: list[tuple[int, int]] = []  # (module, region) of the regions to schedule
    for f, regions in enumerate(per):
        notes = [
            f"{r.name}: kept in input order ({r.problem})"
            for r in regions
            if r.region is None or r.problem is not None
        ]
        out.append(([None] * len(regions), notes))
        todo += [(f, k) for k, r in enumerate(regions) if r.region is not None and not r.problem]
    if scheduler is None or not todo:
        return out
    got = list(scheduler([per[f][k].region for f, k in todo]))
    if len(got) != len(todo):
        raise ValueError(f"scheduler {name!r} gave {len(got)} orders for {len(todo)} regions")
    for (f, k), order in zip(todo, got, strict=True):
        orders, notes = out[f]
        try:
            orders[k] = check_order(per[f][k], order)
        except OrderError as e:
            notes.append(f"{per[f][k].name}: {name or 'the'} order rejected, kept input ({e})")
    return out


# ---------------------------------------------------------------------- compare
class KernelComparison(NamedTuple):
    """LLVM's schedule and ours for one function, after register allocation."""

    function: str
    llvm: AsmStats
    ours: AsmStats


def compare(
    path: str | os.PathLike,
    scheduler: Scheduler | None,
    *,
    name: str = "",
    mcpu: str = MCPU,
    mattr: str = "",
    llc: str | os.PathLike | None = None,
) -> tuple[list[KernelComparison], MirModule, list[str]]:
    """Compile ``path`` (``.ll`` or pre-scheduler ``.mir``) with LLVM's scheduler and with
    ``scheduler`` (see `schedule_orders`).

    Returns the per-function comparison, the imported module and the scheduling notes.
    """
    module = read_input(path, mcpu=mcpu, mattr=mattr, llc=llc)
    # Both sides start from the same MIR: compiling the .ll directly can differ (from MIR, llc
    # re-derives callee resource usage conservatively).
    llvm_asm = mir_to_asm(module.text, mcpu=mcpu, start="-start-before", mattr=mattr, llc=llc)
    orders, notes = schedule_orders(module, scheduler, name=name)
    ours_asm = mir_to_asm(write_mir(module, orders), mcpu=mcpu, mattr=mattr, llc=llc)
    a, b = asm_stats(llvm_asm), asm_stats(ours_asm)
    rows = [KernelComparison(f, a[f], b[f]) for f in a if f in b]
    return rows, module, notes


def machine_target(machine_name: str) -> tuple[str, str] | None:
    """(llc ``-mcpu``, ``-mattr``) of an AMDGPU machine preset (``gfx942``,
    ``gfx1100-wave64``...), or None for a preset that is no LLVM target (``generic``)."""
    from jaxsched.machines.amdgpu import TARGETS

    t = TARGETS.get(machine_name)
    return None if t is None else (t.mcpu, t.mattr)
