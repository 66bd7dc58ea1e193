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

`compare` runs ``llc`` twice (LLVM's own scheduler, and our order with
``-start-after=machine-scheduler``) and reads VGPRs, SGPRs, occupancy, spills, scratch and code
size from the assembler output of each.
"""

from __future__ import annotations

import functools
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
    "KEEP_ORDER",
    "AsmStats",
    "LlcError",
    "MirError",
    "MirModule",
    "MirRegion",
    "OrderError",
    "Scheduler",
    "asm_stats",
    "check_order",
    "check_target",
    "compare",
    "extract_regions",
    "find_llc",
    "latency_cpu",
    "ll_to_asm",
    "ll_to_mir",
    "llc_candidates",
    "llc_reading",
    "llvm_version",
    "machine_target",
    "mir_to_asm",
    "read_input",
    "read_mir",
    "schedule_modules",
    "schedule_orders",
    "target_cpus",
    "write_mir",
]

#: Default target CPU for llc.
MCPU = "gfx906"

#: A scheduler for `schedule_orders`: the regions in, one order per region out (original
#: instruction ids in issue order), e.g. ``lambda rs: [r.order for r in schedule(rs, m)]``.
Scheduler = Callable[[list[Region]], Sequence[Sequence[int]]]


class LlcError(MirError):
    """``llc`` is missing or failed; ``stderr`` holds what it printed (the message its first
    error line)."""

    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr


#: The llc names looked for on the PATH, in `find_llc`'s order.
LLC_NAMES = ("llc", *(f"llc-{v}" for v in range(14, 20)))
_VERSION = re.compile(r"LLVM version (\d+)")


def find_llc(llc: str | os.PathLike | None = None) -> str | None:
    """Path of the llc to run: ``llc`` if given, else ``$JAXSCHED_LLC``, else the first of
    `LLC_NAMES` on the PATH; None if that one is absent."""
    chosen = str(llc) if llc else os.environ.get("JAXSCHED_LLC")
    if chosen:
        found = shutil.which(chosen)
        if found:
            return found
        return chosen if Path(chosen).is_file() else None
    return next((p for name in LLC_NAMES if (p := shutil.which(name))), None)


def llc_candidates(llc: str | os.PathLike | None = None) -> list[str]:
    """The llcs `run_llc` may run, in order: the chosen one alone (``llc`` or
    ``$JAXSCHED_LLC``); else `find_llc`'s default, then every other llc on the PATH by LLVM
    version, newest last (one per program)."""
    first = find_llc(llc)
    if llc or os.environ.get("JAXSCHED_LLC") or first is None:
        return [first] if first else []
    found = {os.path.realpath(p): p for name in LLC_NAMES if (p := shutil.which(name))}
    others = sorted(set(found) - {os.path.realpath(first)}, key=llvm_version)
    return [first, *(found[p] for p in others)]


def llc_reading(
    mir_text: str, *, mcpu: str = MCPU, mattr: str = "", llc: str | os.PathLike | None = None
) -> str | None:
    """The llc that compiles ``mir_text`` from here on: ``llc`` when chosen, else the first of
    `llc_candidates` that reads it (``-run-pass=none``), so that every compile of one module
    is one LLVM's; None if none is installed. `LlcError` (each llc's error) if none reads it."""
    candidates = llc_candidates(llc)
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "in.mir"
        p.write_text(mir_text)
        args = [*_target_args(mcpu, mattr), "-run-pass=none", str(p), "-o", os.devnull]
        return run_llc_process(args, llc=llc).args[0]


@functools.cache
def llvm_version(path: str) -> int:
    """LLVM major version of an llc (``--version``), 0 if it does not say."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    match = _VERSION.search(out.stdout)
    return int(match.group(1)) if match else 0


def run_llc(
    args: Sequence[str], timeout: float = 120.0, *, llc: str | os.PathLike | None = None
) -> str:
    """Run llc with ``args``; return its stdout. `LlcError` if missing or failing.

    The llc is ``llc`` or ``$JAXSCHED_LLC`` when given; else each of `llc_candidates` in turn
    (the PATH's default, then the others, newest last) until one succeeds: an older llc
    cannot read a newer LLVM's IR or MIR, a newer one may refuse an older one's. When none
    succeeds, the error names each llc and its error line."""
    return run_llc_process(args, timeout, llc=llc).stdout


def run_llc_process(
    args: Sequence[str], timeout: float = 120.0, *, llc: str | os.PathLike | None = None
) -> subprocess.CompletedProcess:
    """`run_llc`, the whole finished process (stdout and stderr, e.g. llc's
    ``-print-machine-bfi`` report) of the llc that succeeded (its path is ``.args[0]``)."""
    candidates = llc_candidates(llc)
    if not candidates:
        wanted = llc or os.environ.get("JAXSCHED_LLC")
        raise LlcError(
            f"llc {str(wanted)!r} not found"
            if wanted
            else "llc not found (install LLVM, e.g. apt-get install llvm-15, or pass --llc)"
        )
    failed: list[tuple[str, subprocess.CompletedProcess]] = []
    for exe in candidates:
        proc = _run_llc_once(exe, args, timeout)
        if proc.returncode == 0:
            return proc
        failed.append((exe, proc))
    if len(failed) == 1:
        raise _llc_error(failed[0][1])
    each = "; ".join(f"{exe}: {_error_line(proc.stderr)}" for exe, proc in failed)
    raise LlcError(f"llc failed, each installed one: {each}", failed[0][1].stderr)


#: Lines of llc's crash report that are not its error: stack frames, the dump's banner, the
#: bug-report request and the program arguments.
_CRASH_NOISE = re.compile(
    r"^(#\d+ 0x|\d+\.\s|Stack dump|PLEASE submit|Program arguments|Running pass)"
)
_ERROR = re.compile(r"^LLVM ERROR:|\berror\b:", re.IGNORECASE)


def _error_line(stderr: str) -> str:
    """llc's own error line in what it printed: the first ``LLVM ERROR: ...`` or ``...
    error: ...`` line (never a stack frame of a crash), else the last line that is not crash
    noise."""
    lines = [x.strip() for x in stderr.splitlines() if x.strip()]
    own = [x for x in lines if not _CRASH_NOISE.match(x)]
    return next((x for x in own if _ERROR.search(x)), own[-1] if own else "no message")


def _llc_error(proc: subprocess.CompletedProcess) -> LlcError:
    """The error of a failed llc run, its message llc's error line (`_error_line`)."""
    return LlcError(f"llc failed (exit {proc.returncode}): {_error_line(proc.stderr)}", proc.stderr)


def _run_llc_once(exe: str, args: Sequence[str], timeout: float) -> subprocess.CompletedProcess:
    """One run of ``exe``; `LlcError` if it cannot start or does not finish in time."""
    try:
        return subprocess.run(
            [exe, *args], capture_output=True, text=True, errors="replace", timeout=timeout
        )
    except subprocess.TimeoutExpired:
        raise LlcError(f"llc {' '.join(args)} did not finish in {timeout:g} s") from None
    except OSError as e:
        raise LlcError(f"cannot run {exe}: {e.strerror or e}") from None


def _target_args(mcpu: str, mattr: str) -> list[str]:
    return ["-march=amdgcn", f"-mcpu={mcpu}", *([f"-mattr={mattr}"] if mattr else [])]


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


def ll_to_mir(
    path: str | os.PathLike,
    *,
    mcpu: str = MCPU,
    stop_before: str = "machine-scheduler",
    mattr: str = "",
    llc: str | os.PathLike | None = None,
) -> str:
    """MIR of an LLVM IR file, stopped before ``stop_before`` (amdgcn target)."""
    args = [*_target_args(mcpu, mattr), f"-stop-before={stop_before}", str(path), "-o", "-"]
    return run_llc(args, llc=llc)


def ll_to_asm(
    path: str | os.PathLike, *, mcpu: str = MCPU, llc: str | os.PathLike | None = None
) -> str:
    """Assembly of an LLVM IR file with LLVM's own scheduler."""
    return run_llc([*_target_args(mcpu, ""), str(path), "-o", "-"], llc=llc)


def mir_to_asm(
    mir_text: str,
    *,
    mcpu: str = MCPU,
    start: str = "-start-after",
    mattr: str = "",
    llc: str | os.PathLike | None = None,
    verify: bool = False,
    stop: str | None = None,
    extra: Sequence[str] = (),
) -> str:
    """Assembly from MIR stopped before the machine scheduler.

    ``start="-start-after"`` keeps the MIR's instruction order (ours; llc runs with
    `KEEP_ORDER`);
    ``start="-start-before"`` runs LLVM's scheduler on it (LLVM's order). ``verify`` adds
    ``-verify-machineinstrs`` (llc's machine verifier). ``stop``: a pass to stop after, the
    output then MIR instead of assembly (``stop="machine-scheduler"`` with
    ``start="-start-before"``: LLVM's schedule as MIR). ``extra``: more llc options (e.g.
    ``-misched=gcn-max-ilp``, LLVM's other scheduling strategies).
    """
    args = [*extra, *(["-verify-machineinstrs"] if verify else [])]
    return compile_mir(
        mir_text, mcpu=mcpu, start=start, mattr=mattr, llc=llc, stop=stop, extra=args
    ).stdout


def compile_mir(
    mir_text: str,
    *,
    mcpu: str = MCPU,
    start: str = "-start-after",
    mattr: str = "",
    llc: str | os.PathLike | None = None,
    stop: str | None = None,
    extra: Sequence[str] = (),
    stop_before: str | None = None,
    output: str | os.PathLike = "-",
) -> subprocess.CompletedProcess:
    """`mir_to_asm`'s llc run, the whole process (its stderr holds what ``extra`` options such
    as ``-print-machine-bfi`` report); ``stop_before``: a pass to stop before (MIR out);
    ``output``: llc's ``-o`` (default ``-``, stdout; a file for binary output such as
    ``-filetype=obj``). `LlcError` if llc is missing or fails."""
    where = list(KEEP_ORDER) if start == "-start-after" else [f"{start}=machine-scheduler"]
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "in.mir"
        p.write_text(mir_text)
        args = [*_target_args(mcpu, mattr), *where, str(p), "-o", str(output)]
        args += [f"-stop-after={stop}"] if stop else []
        args += [f"-stop-before={stop_before}"] if stop_before else []
        return run_llc_process([*args, *extra], llc=llc)


#: llc's options that compile MIR in its own instruction order: the machine scheduler's pass
#: runs but schedules nothing, and every pass after it runs. (``-start-after=machine-scheduler``
#: would also skip the passes LLVM inserts right after the scheduler, SI Whole Quad Mode, the
#: pre-RA exec mask optimisation and memory clause formation, which LLVM's own compile runs:
#: the code of an order would not be the code LLVM makes of that order.)
KEEP_ORDER = ("-start-before=machine-scheduler", "-enable-misched=false")


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
Orders = list[tuple[int, ...] | None]


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
