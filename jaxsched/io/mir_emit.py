"""Final code of scheduled MIR: what llc writes after our schedule, so that a build can call
``jaxsched mir schedule --emit asm|obj`` in llc's place.

The MIR (`jaxsched.mir_files.FileSchedule.text`) is compiled with llc's scheduler off and every
later pass on (`jaxsched.io.mir.KEEP_ORDER`), by the llc, ``-mcpu`` and ``-mattr`` it was
scheduled with::

    asm = emit(text, "asm", mcpu="gfx942", llc="/usr/lib/llvm-19/bin/llc")  # str
    obj = emit(text, "obj", mcpu="gfx942", llc="/usr/lib/llvm-19/bin/llc")  # bytes (ELF)
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from jaxsched.io.mir_llc import MCPU, LlcError, compile_mir, find_llc, mir_to_asm

__all__ = ["EMITS", "SUFFIXES", "emit", "mir_to_obj", "require_llc", "save"]

#: What ``--emit`` writes: the scheduled MIR, llc's assembly of it, or llc's object file.
EMITS = ("mir", "asm", "obj")
#: The file suffix of each kind of output.
SUFFIXES = {"mir": ".mir", "asm": ".s", "obj": ".o"}


def emit(
    mir_text: str,
    kind: str,
    *,
    mcpu: str = MCPU,
    mattr: str = "",
    llc: str | os.PathLike | None = None,
) -> str | bytes:
    """``mir_text`` itself (``mir``), llc's assembly of it (``asm``, `mir_to_asm`: our order
    kept) or llc's AMDGPU ELF relocatable object (``obj``, `mir_to_obj`). `LlcError` if llc is
    missing or fails; `ValueError` for another ``kind``."""
    if kind == "mir":
        return mir_text
    if kind == "asm":
        return mir_to_asm(mir_text, mcpu=mcpu, mattr=mattr, llc=llc)
    if kind == "obj":
        return mir_to_obj(mir_text, mcpu=mcpu, mattr=mattr, llc=llc)
    raise ValueError(f"unknown output kind {kind!r} (choose {', '.join(EMITS)})")


def mir_to_obj(
    mir_text: str,
    *,
    mcpu: str = MCPU,
    mattr: str = "",
    llc: str | os.PathLike | None = None,
) -> bytes:
    """llc's object file (``-filetype=obj``) of pre-scheduler MIR compiled in its own order
    (`jaxsched.io.mir.KEEP_ORDER`), as `mir_to_asm` compiles it to assembly."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "out.o"
        compile_mir(mir_text, mcpu=mcpu, mattr=mattr, llc=llc, extra=["-filetype=obj"], output=out)
        return out.read_bytes()


def require_llc(kind: str, llc: str | os.PathLike | None = None) -> str | None:
    """The llc that ``kind`` needs (`find_llc`; None for ``mir``, which needs none).
    `LlcError` naming what is missing when there is none."""
    if kind == "mir":
        return None
    found = find_llc(llc)
    if found is not None:
        return found
    wanted = llc or os.environ.get("JAXSCHED_LLC")
    what = (
        f"llc {str(wanted)!r} not found"
        if wanted
        else "no llc found (llc, llc-14 ... llc-19 on the PATH; install LLVM or pass --llc)"
    )
    raise LlcError(f"--emit {kind} compiles the scheduled MIR with llc: {what}")


def save(path: str | os.PathLike, data: str | bytes) -> None:
    """Write an `emit` result: bytes as they are, text as `pathlib.Path.write_text` writes it
    (as ``mir schedule`` has always written MIR)."""
    if isinstance(data, bytes):
        Path(path).write_bytes(data)
    else:
        Path(path).write_text(data)
