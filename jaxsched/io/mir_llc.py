"""llc, the program behind the MIR front end: finding it, running it, compiling MIR or LLVM IR
with it, and reading its AMDGPU assembler output.

Internal (the public names are `jaxsched.io.mir`'s, which re-exports `LlcError`, `KEEP_ORDER`
and `AsmStats`): the CLI, `jaxsched.mir_files` and the guard's modules (`mir_judge`,
`mir_select`, `mir_llvm`, `mir_emit`) import the rest from here.

The llc is ``llc=`` or ``$JAXSCHED_LLC`` when given, else the first of `LLC_NAMES` on the PATH,
then every other installed llc, newest last (`llc_candidates`, `run_llc`).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from jaxsched.io.mir_parse import MirError

__all__ = [
    "KEEP_ORDER",
    "LLC_NAMES",
    "MCPU",
    "AsmStats",
    "LlcError",
    "asm_stats",
    "compile_mir",
    "find_llc",
    "ll_to_asm",
    "ll_to_mir",
    "llc_candidates",
    "llc_reading",
    "llvm_version",
    "mir_to_asm",
    "run_llc",
    "run_llc_process",
]

#: Default target CPU for llc.
MCPU = "gfx906"


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
