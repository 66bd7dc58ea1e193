"""Never worse than LLVM after register allocation: compile a module both ways, keep LLVM's
schedule for every function where ours ends worse.

A MIR file is one YAML document per machine function, and llc compiles the functions of a
module independently after the scheduler. So the guard

1. compiles the input MIR with LLVM's scheduler (``-start-before=machine-scheduler``) and our
   scheduled MIR without it (``-start-after``), and reads each function's NumVgprs,
   Occupancy, spills and scratch from the assembly (`jaxsched.io.mir.asm_stats`);
2. for each function where ours ends with **lower occupancy**, **more spills** or **more
   scratch** than LLVM's, replaces that function's document in our MIR by LLVM's own
   scheduled document (``-start-before=machine-scheduler -stop-after=machine-scheduler``): the
   output then compiles, for that function, to exactly what llc makes of the input;
3. compiles the result once more and checks that no function is worse than LLVM's (a
   `GuardError` otherwise: never silently).

Every decision is returned (`Decision`) so that the caller reports it, like the rule "never
worse than the input order" of the colony.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from jaxsched.io.mir import MCPU, AsmStats, LlcError, asm_stats, mir_to_asm
from jaxsched.io.mir_parse import MirError, read_mir_text


class GuardError(MirError):
    """The guarded module is still worse than LLVM's somewhere (a bug, never expected)."""


class Decision(NamedTuple):
    """What the guard did with one function."""

    function: str
    kept: str  # "ours" or "llvm"
    llvm: AsmStats  # llc's figures with LLVM's scheduler
    ours: AsmStats  # llc's figures with our order
    reason: str  # why ours was dropped ("" when kept)


def worse_than_llvm(ours: AsmStats, llvm: AsmStats) -> str:
    """Why ``ours`` is worse than ``llvm`` after allocation ("" when it is not): lower
    occupancy (functions with one), more spills, more scratch bytes."""
    if 0 < ours.occupancy < llvm.occupancy:
        return f"occupancy {ours.occupancy} < LLVM's {llvm.occupancy}"
    if ours.spills > llvm.spills:
        return f"{ours.spills} spills > LLVM's {llvm.spills}"
    if ours.scratch > llvm.scratch:
        return f"scratch {ours.scratch} B > LLVM's {llvm.scratch} B"
    return ""


def function_documents(text: str, source: str = "<mir>") -> dict[str, str]:
    """Each machine function's YAML document (from its ``---`` line to the next document),
    by function name."""
    parsed = read_mir_text(source, text=text)
    lines = parsed.lines
    starts = [i for i, raw in enumerate(lines) if raw.startswith("---")]
    out = {}
    for fn in parsed.functions:
        first = max(i for i in starts if i <= fn.name_line)
        last = min((i for i in starts if i > fn.name_line), default=len(lines))
        out[fn.name] = "".join(lines[first:last])
    return out


def replace_functions(text: str, documents: dict[str, str], source: str = "<mir>") -> str:
    """``text`` with the documents of the functions named in ``documents`` replaced."""
    if not documents:
        return text
    parsed = read_mir_text(source, text=text)
    lines = parsed.lines
    starts = [i for i, raw in enumerate(lines) if raw.startswith("---")]
    out, i = [], 0
    for fn in sorted(parsed.functions, key=lambda f: f.name_line):
        if fn.name not in documents:
            continue
        first = max(j for j in starts if j <= fn.name_line)
        last = min((j for j in starts if j > fn.name_line), default=len(lines))
        out += [*lines[i:first], documents[fn.name]]
        i = last
    return "".join([*out, *lines[i:]])


def guard(
    input_mir: str,
    ours_mir: str,
    *,
    mcpu: str = MCPU,
    mattr: str = "",
    llc: str | os.PathLike | None = None,
    source: str = "<mir>",
) -> tuple[str, list[Decision]]:
    """(MIR, decisions): ``ours_mir`` with LLVM's schedule for every function where ours is
    worse after allocation (`worse_than_llvm`). ``input_mir`` is the module before any
    scheduler (what ``ours_mir`` was made from); ``mcpu``/``mattr``/``llc`` as in
    `jaxsched.io.mir.mir_to_asm`. Raises `LlcError` when llc is missing or fails, `GuardError`
    if the result is still worse somewhere."""
    kw = dict(mcpu=mcpu, mattr=mattr, llc=llc)
    llvm = asm_stats(mir_to_asm(input_mir, start="-start-before", **kw))
    ours = asm_stats(mir_to_asm(ours_mir, **kw))
    decisions = []
    for fn, theirs in llvm.items():
        if fn not in ours:
            raise LlcError(f"{source}: llc reported no figures for function {fn!r} of ours")
        why = worse_than_llvm(ours[fn], theirs)
        decisions.append(
            Decision(
                function=fn, kept="llvm" if why else "ours", llvm=theirs, ours=ours[fn], reason=why
            )
        )
    dropped = {d.function for d in decisions if d.kept == "llvm"}
    if not dropped:
        return ours_mir, decisions
    scheduled = mir_to_asm(input_mir, start="-start-before", stop="machine-scheduler", **kw)
    llvm_docs = function_documents(scheduled, f"{source} (LLVM's schedule)")
    out = replace_functions(ours_mir, {fn: llvm_docs[fn] for fn in dropped}, source)
    check = asm_stats(mir_to_asm(out, **kw))
    still = {fn: worse_than_llvm(check[fn], llvm[fn]) for fn in llvm if fn in check}
    bad = {fn: why for fn, why in still.items() if why}
    if bad:
        raise GuardError(f"{source}: still worse than LLVM after the guard: {bad}")
    return out, decisions
