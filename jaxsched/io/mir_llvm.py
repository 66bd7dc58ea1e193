"""LLVM's own schedules of a MIR module, read back exactly.

`llvm_orders` runs LLVM's machine scheduler (its default strategy, or another one chosen with
llc options such as ``-misched=gcn-max-ilp``) on a module and returns, per region, the order
LLVM gave it, as original instruction ids: the same form as the colony's orders, so that
`jaxsched.io.mir.write_mir` writes LLVM's schedule into the input's own text and any mix of
LLVM's and our orders can be compiled and judged.

Instructions are identified by a tag llc keeps through the scheduler: each instruction line of
the input gets a unique ``debug-instr-number`` (an instruction-referencing debug-info number;
it changes no code: llc's output with and without the tags is the same), and the tags are read
back from llc's MIR right after the scheduler (``-stop-before=si-wqm``). A region's order
is None where any of its instructions is missing there or no longer contiguous (the scheduler
rematerialised or moved it): LLVM's schedule then cannot be written as an order of ours.

Compiling the result with `jaxsched.io.mir.KEEP_ORDER` (llc's scheduler off, every pass
after it run), LLVM's MIR or our writer's text in LLVM's orders, gives the same assembly as
``llc -start-before=machine-scheduler`` on the input (tests/test_mir_judge.py; with LLVM 15
the register allocator may number registers differently: llc renumbers virtual registers when
it prints MIR, and the scheduler's moves leave its slot indexes apart from a fresh count).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import NamedTuple

from jaxsched.io.mir_llc import MCPU, compile_mir
from jaxsched.io.mir_parse import MirFunction, MirInstr, read_mir_text
from jaxsched.io.mir_regions import MirModule, MirRegion

__all__ = ["LlvmSchedule", "llvm_orders", "llvm_schedule", "tag_instructions"]

_TAG = re.compile(r"debug-instr-number (\d+)")
#: The pass LLVM runs right after its machine scheduler (LLVM 14 to 19): stopping before it
#: gives the scheduled MIR that llc's `KEEP_ORDER` compile turns into LLVM's own code (the
#: MIR of ``-stop-after=machine-scheduler`` has the passes inserted after the scheduler run
#: too, and would get them twice).
AFTER_SCHEDULER = "si-wqm"
_DEBUG_LOCATION = ", debug-location "


#: Meta instructions (LLVM's ``isMetaInstruction``): llc's verifier refuses a tag on them, so
#: they are found in llc's output by their text (virtual registers renamed as the tagged
#: instructions show).
META = frozenset(
    {
        "IMPLICIT_DEF",
        "KILL",
        "CFI_INSTRUCTION",
        "EH_LABEL",
        "GC_LABEL",
        "ANNOTATION_LABEL",
        "LIFETIME_START",
        "LIFETIME_END",
        "PSEUDO_PROBE",
        "ARITH_FENCE",
        "MEMBARRIER",
        "FAKE_USE",
        "JUMP_TABLE_DEBUG_INFO",
        "SCHED_BARRIER",
        "WAVE_BARRIER",
    }
)


def tag_instructions(module: MirModule) -> tuple[str, dict[int, int]]:
    """(text, tag per instruction line): ``module``'s text with a unique
    ``debug-instr-number`` on every instruction of every region but the `META` ones (an
    instruction that has one keeps its own)."""
    lines = list(module.lines)
    used = {int(t) for line in lines for t in _TAG.findall(line)}
    fresh = max(used, default=0) + 1
    tags: dict[int, int] = {}
    for mr in module.regions:
        for ins in mr.instrs:
            own = _TAG.search(lines[ins.line])
            if own:
                tags[ins.line] = int(own.group(1))
            elif not (ins.opcode in META or ins.opcode.startswith("DBG_")):
                tags[ins.line] = fresh
                lines[ins.line] = _tagged(lines[ins.line], ins, fresh)
                fresh += 1
    return "".join(lines), tags


def _tagged(line: str, ins: MirInstr, tag: int) -> str:
    """`_with_tag` of an instruction line; for a bundle, of its header (the text before the
    ``{`` that opens it, as llc reads ``BUNDLE implicit-def $vgpr1, debug-instr-number 7 {``)."""
    if not ins.parts:
        return _with_tag(line, ins.opcode, tag)
    head = ins.parts[0]
    at = line.index(head.text) + len(head.text)
    return _with_tag(line[:at], head.opcode, tag) + line[at:]


def _with_tag(line: str, opcode: str, tag: int) -> str:
    """An instruction line with ``debug-instr-number TAG`` where llc's parser reads it: after
    the operands and instruction symbols (a comma after an operand), before
    ``debug-location`` and the memory operands."""
    body = line.rstrip("\r\n")
    end = line[len(body) :]
    core, sep, mem = body.partition(" :: ")
    at = core.find(_DEBUG_LOCATION)
    head, tail = (core, "") if at < 0 else (core[:at], core[at:])
    comma = "" if head.rstrip().endswith(opcode) else ","
    return f"{head.rstrip()}{comma} debug-instr-number {tag}{tail}{sep}{mem}{end}"


class LlvmSchedule(NamedTuple):
    """LLVM's schedule of a module (`llvm_schedule`)."""

    orders: list[tuple[int, ...] | None]  # per region, LLVM's order (None: not readable)
    mir: str  # llc's MIR right after its scheduler, our tags removed


def llvm_schedule(
    module: MirModule,
    *,
    mcpu: str = MCPU,
    mattr: str = "",
    llc: str | os.PathLike | None = None,
    extra: Sequence[str] = (),
) -> LlvmSchedule:
    """LLVM's machine scheduler on ``module``: the order it gives each region (original ids in
    issue order; None where it cannot be read back, see the module docstring) and its MIR.
    ``extra``: llc options choosing the strategy, e.g. ``["-misched=gcn-max-ilp"]``.
    `LlcError` if llc fails."""
    text, tags = tag_instructions(module)
    out = compile_mir(
        text,
        mcpu=mcpu,
        mattr=mattr,
        start="-start-before",
        stop_before=AFTER_SCHEDULER,
        llc=llc,
        extra=extra,
    ).stdout
    scheduled = read_mir_text(f"{module.source} (LLVM's schedule)", text=out)
    # llc prints blocks numbered densely: the k-th block of a function in layout order is the
    # input's k-th (the scheduler changes no control flow).
    ordinal = {(f.name, b.number): k for f in module.functions for k, b in enumerate(f.blocks)}
    blocks = {(f.name, k): b.instrs for f in scheduled.functions for k, b in enumerate(f.blocks)}
    renames = {f.name: _renaming(module, f, tags) for f in scheduled.functions}
    orders = [
        _region_order(
            mr,
            blocks.get((mr.function, ordinal[mr.function, mr.block]), []),
            tags,
            renames.get(mr.function),
        )
        for mr in module.regions
    ]
    ours = {t for line, t in tags.items() if not _TAG.search(module.lines[line])}
    untagged = _TAG_TEXT.sub(lambda m: "" if int(m.group(1)) in ours else m.group(0), out)
    return LlvmSchedule(orders=orders, mir=untagged)


def llvm_orders(
    module: MirModule,
    *,
    mcpu: str = MCPU,
    mattr: str = "",
    llc: str | os.PathLike | None = None,
    extra: Sequence[str] = (),
) -> list[tuple[int, ...] | None]:
    """`llvm_schedule`'s orders."""
    return llvm_schedule(module, mcpu=mcpu, mattr=mattr, llc=llc, extra=extra).orders


_TAG_TEXT = re.compile(r",? debug-instr-number (\d+)")


def _renaming(module: MirModule, fn: MirFunction, tags: dict[int, int]) -> dict[str, str]:
    """Virtual register names of ``module``'s function ``fn.name`` -> llc's, as the tagged
    instructions show them (llc may number virtual registers anew when it prints MIR)."""
    theirs = {
        int(t.group(1)): ins.text
        for b in fn.blocks
        for ins in b.instrs
        if (t := _TAG.search(ins.text))
    }
    out: dict[str, str] = {}
    for mr in module.regions:
        if mr.function != fn.name:
            continue
        for ins in mr.instrs:
            other = theirs.get(tags.get(ins.line, -1))
            if other is not None:
                out.update(zip(_VREG.findall(ins.text), _VREG.findall(other), strict=False))
    return out


_VREG = re.compile(r"%[0-9]+\b")


def _region_order(
    mr: MirRegion, block: Sequence[MirInstr], tags: dict[int, int], rename: dict[str, str] | None
) -> tuple[int, ...] | None:
    """LLVM's order of region ``mr`` from its block in llc's output, or None."""
    position: dict[int, int] = {}
    untagged: dict[str, list[int]] = {}
    for k, ins in enumerate(block):
        t = _TAG.search(ins.text)
        if t:
            position[int(t.group(1))] = k
        else:
            untagged.setdefault(_untagged_key(ins.text), []).append(k)
    where: list[int | None] = []
    for ins in mr.instrs:
        if ins.line in tags:
            where.append(position.get(tags[ins.line]))
            continue
        text = _VREG.sub(lambda m: (rename or {}).get(m.group(0), m.group(0)), ins.text)
        found = untagged.get(_untagged_key(text))
        where.append(found.pop(0) if found else None)
    if any(p is None for p in where):
        return None
    # Contiguous among the block's tagged instructions (llc adds untagged ones, e.g. the KILLs
    # of memory clauses): nothing moved into or out of the region.
    tagged = sorted(position.values())
    mine = sorted(where[i] for i, ins in enumerate(mr.instrs) if ins.line in tags)
    if mine and tagged.index(mine[-1]) - tagged.index(mine[0]) + 1 != len(mine):
        return None
    return tuple(sorted(range(len(where)), key=lambda i: where[i]))


def _untagged_key(text: str) -> str:
    """An untagged instruction's text without kill flags (the scheduler may move them)."""
    return re.sub(r"\b(killed|dead) ", "", text)
