"""LLVM AMDGPU MIR in and out: import regions, schedule them, write MIR back, compare with llc.

Typical use::

    module = read_mir("kernel.mir")            # llc -stop-before=machine-scheduler output
    regions = [r.region for r in module.regions if r.region is not None]
    machine = gfx906()
    orders, notes = schedule_orders(
        module, lambda rs: [r.order for r in jaxsched.colony.schedule(rs, machine)]
    )
    text = write_mir(module, orders)           # same MIR, instructions reordered

The front end imports no solver: the caller passes the scheduling function.

`compare` runs ``llc`` twice (LLVM's own scheduler, and our order with
``-start-after=machine-scheduler``) and reads VGPRs, SGPRs, occupancy, spills, scratch and code
size from the assembler output of each.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from jaxsched.files import open_binary
from jaxsched.io.mir_parse import MirError
from jaxsched.io.mir_regions import MirModule, MirRegion, extract_regions, read_mir
from jaxsched.io.mir_write import OrderError, check_order, write_mir
from jaxsched.problem.region import Region

__all__ = [
    "AsmStats",
    "LlcError",
    "MirError",
    "MirModule",
    "MirRegion",
    "OrderError",
    "Scheduler",
    "asm_stats",
    "check_order",
    "compare",
    "extract_regions",
    "find_llc",
    "ll_to_asm",
    "ll_to_mir",
    "llvm_orders",
    "mir_to_asm",
    "read_input",
    "read_mir",
    "schedule_orders",
    "write_mir",
]

#: Default target CPU for llc.
MCPU = "gfx906"

#: A scheduler for `schedule_orders`: the regions in, one order per region out (original
#: instruction ids in issue order), e.g. ``lambda rs: [r.order for r in schedule(rs, m)]``.
Scheduler = Callable[[list[Region]], Sequence[Sequence[int]]]


class LlcError(MirError):
    """``llc`` is missing or failed; the message carries its stderr."""


def find_llc() -> str | None:
    """Path of ``llc`` (or ``llc-14``...), honouring ``$JAXSCHED_LLC``; None if absent."""
    env = os.environ.get("JAXSCHED_LLC")
    if env:
        return env if shutil.which(env) or Path(env).exists() else None
    for name in ("llc", "llc-14", "llc-15", "llc-16", "llc-17", "llc-18"):
        p = shutil.which(name)
        if p:
            return p
    return None


def run_llc(args: Sequence[str], timeout: float = 120.0) -> str:
    """Run llc with ``args``; return its stdout. `LlcError` if missing or failing."""
    llc = find_llc()
    if llc is None:
        raise LlcError("llc not found (install LLVM, e.g. apt-get install llvm-14)")
    try:
        proc = subprocess.run(
            [llc, *args], capture_output=True, text=True, errors="replace", timeout=timeout
        )
    except subprocess.TimeoutExpired:
        raise LlcError(f"llc {' '.join(args)} did not finish in {timeout:g} s") from None
    except OSError as e:
        raise LlcError(f"cannot run {llc}: {e.strerror or e}") from None
    if proc.returncode != 0:
        lines = [x.strip() for x in proc.stderr.splitlines() if x.strip()]
        first = next((x for x in lines if "error" in x), lines[-1] if lines else "no message")
        raise LlcError(f"llc failed (exit {proc.returncode}): {first}", proc.stderr)
    return proc.stdout


def read_input(path: str | os.PathLike, *, mcpu: str = MCPU) -> MirModule:
    """A MIR file, or a ``.ll`` file compiled by llc up to the machine scheduler, parsed."""
    p = Path(path)
    if p.suffix != ".ll":
        return read_mir(p)
    open_binary(p, MirError).close()  # missing, a directory, unreadable: a clear MirError
    return read_mir(str(p), text=ll_to_mir(p, mcpu=mcpu))


def ll_to_mir(
    path: str | os.PathLike, *, mcpu: str = MCPU, stop_before: str = "machine-scheduler"
) -> str:
    """MIR of an LLVM IR file, stopped before ``stop_before`` (amdgcn target)."""
    return run_llc(
        ["-march=amdgcn", f"-mcpu={mcpu}", f"-stop-before={stop_before}", str(path), "-o", "-"]
    )


def ll_to_asm(path: str | os.PathLike, *, mcpu: str = MCPU) -> str:
    """Assembly of an LLVM IR file with LLVM's own scheduler."""
    return run_llc(["-march=amdgcn", f"-mcpu={mcpu}", str(path), "-o", "-"])


def mir_to_asm(mir_text: str, *, mcpu: str = MCPU, start: str = "-start-after") -> str:
    """Assembly from MIR stopped before the machine scheduler.

    ``start="-start-after"`` keeps the MIR's instruction order (ours);
    ``start="-start-before"`` runs LLVM's scheduler on it (LLVM's order).
    """
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "in.mir"
        p.write_text(mir_text)
        return run_llc(
            ["-march=amdgcn", f"-mcpu={mcpu}", f"{start}=machine-scheduler", str(p), "-o", "-"]
        )


class AsmStats(NamedTuple):
    """Per-function figures from llc's AMDGPU assembler output (-1 where not printed)."""

    vgprs: int
    sgprs: int
    occupancy: int
    scratch: int
    spills: int  # SGPR + VGPR spill count (metadata), else count of "Spill" comments
    code_size: int  # bytes (codeLenInByte)


def asm_stats(asm: str) -> dict[str, AsmStats]:
    """Parse ``; NumVgprs:``, ``; NumSgprs:``, ``; Occupancy:``, ``; ScratchSize:``,
    ``; codeLenInByte =`` and spill counts per function of an llc AMDGPU assembly text."""
    out: dict[str, AsmStats] = {}
    current = ""
    spill_comments: dict[str, int] = {}
    fields: dict[str, dict[str, int]] = {}
    meta_spills: dict[str, int] = {}
    meta_name = ""
    for line in asm.splitlines():
        m = re.match(r"^([A-Za-z_.$][\w.$]*):", line)
        if m and not m.group(1).startswith("."):
            current = m.group(1)
        if "Spill" in line and current:
            spill_comments[current] = spill_comments.get(current, 0) + 1
        m = re.match(r"^\s*\.size\s+([\w.$]+),\s*\.Lfunc_end", line)
        if m:
            current = m.group(1)
        m = re.match(r"^; (NumVgprs|NumSgprs|Occupancy|ScratchSize): (-?\d+)", line)
        if m and current:
            fields.setdefault(current, {})[m.group(1)] = int(m.group(2))
        m = re.match(r"^; codeLenInByte = (\d+)", line)
        if m and current:
            fields.setdefault(current, {})["code"] = int(m.group(1))
        m = re.match(r"^\s*\.name:\s+(\S+)", line)
        if m:
            meta_name = m.group(1)
        m = re.match(r"^\s*\.(sgpr|vgpr)_spill_count:\s+(\d+)", line)
        if m and meta_name:
            meta_spills[meta_name] = meta_spills.get(meta_name, 0) + int(m.group(2))
    for name, f in fields.items():
        out[name] = AsmStats(
            vgprs=f.get("NumVgprs", -1),
            sgprs=f.get("NumSgprs", -1),
            occupancy=f.get("Occupancy", -1),
            scratch=f.get("ScratchSize", -1),
            spills=meta_spills.get(name, spill_comments.get(name, 0)),
            code_size=f.get("code", -1),
        )
    return out


# ---------------------------------------------------------------------- scheduling
def schedule_orders(
    module: MirModule | Sequence[MirRegion], scheduler: Scheduler | None, *, name: str = ""
) -> tuple[list[tuple[int, ...] | None], list[str]]:
    """An order per region of ``module`` and notes on regions kept in input order.

    ``scheduler`` maps the modelled regions to one order each (original ids in issue order);
    None keeps every input order. The front end depends on no solver: the caller passes one,
    e.g. the CLI binds `jaxsched.colony.schedule` to a machine and seed. Any order that fails
    `check_order` is replaced by the input order and reported in the notes (with ``name``).
    """
    regions = list(module.regions if isinstance(module, MirModule) else module)
    notes: list[str] = []
    orders: list[tuple[int, ...] | None] = [None] * len(regions)
    todo = [k for k, r in enumerate(regions) if r.region is not None and r.problem is None]
    for r in regions:
        if r.region is None or r.problem is not None:
            notes.append(f"{r.name}: kept in input order ({r.problem})")
    if scheduler is None or not todo:
        return orders, notes
    got = list(scheduler([regions[k].region for k in todo]))
    if len(got) != len(todo):
        raise ValueError(f"scheduler {name!r} gave {len(got)} orders for {len(todo)} regions")
    for k, order in zip(todo, got, strict=True):
        try:
            orders[k] = check_order(regions[k], order)
        except OrderError as e:
            notes.append(f"{regions[k].name}: {name or 'the'} order rejected, kept input ({e})")
    return orders, notes


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
) -> tuple[list[KernelComparison], MirModule, list[str]]:
    """Compile ``path`` (``.ll`` or pre-scheduler ``.mir``) with LLVM's scheduler and with
    ``scheduler`` (see `schedule_orders`).

    Returns the per-function comparison, the imported module and the scheduling notes.
    """
    module = read_input(path, mcpu=mcpu)
    # Both sides start from the same MIR: compiling the .ll directly can differ (from MIR, llc
    # re-derives callee resource usage conservatively).
    llvm_asm = mir_to_asm(module.text, mcpu=mcpu, start="-start-before")
    orders, notes = schedule_orders(module, scheduler, name=name)
    ours_asm = mir_to_asm(write_mir(module, orders), mcpu=mcpu)
    a, b = asm_stats(llvm_asm), asm_stats(ours_asm)
    rows = [KernelComparison(f, a[f], b[f]) for f in a if f in b]
    return rows, module, notes


def llvm_orders(module: MirModule, scheduled: MirModule) -> list[tuple[int, ...] | None]:
    """The order LLVM's scheduler gave each region of ``module``.

    ``scheduled`` is the same code dumped after LLVM's scheduler (``llc -stop-before=si-wqm``);
    instructions are matched by text within their block (the k-th copy of a text to the k-th).
    None where a region's instructions cannot all be found.
    """
    blocks = {
        (f.name, b.number): [i.text for i in b.instrs]
        for f in scheduled.functions
        for b in f.blocks
    }
    out: list[tuple[int, ...] | None] = []
    for mr in module.regions:
        texts = blocks.get((mr.function, mr.block), [])
        where: dict[str, list[int]] = {}
        for j, t in enumerate(texts):
            where.setdefault(t, []).append(j)
        seen: dict[str, int] = {}
        pos: list[int] = []
        for ins in mr.instrs:
            k = seen.get(ins.text, 0)
            cand = where.get(ins.text, [])
            if k >= len(cand):
                pos = []
                break
            pos.append(cand[k])
            seen[ins.text] = k + 1
        out.append(tuple(sorted(range(len(pos)), key=pos.__getitem__)) if pos else None)
    return out
