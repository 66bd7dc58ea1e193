"""Kill flags of a reordered region: a ``killed`` use must stay the last read of its value.

LLVM marks the last read of a register value ``killed`` (LLVM 16 and later print them on
physical registers such as ``$scc`` before the machine scheduler, and on some virtual ones).
When a region is reordered, another read of the same value may now come after the killed one:
llc's machine verifier then rejects the MIR ("Using an undefined physical register", "Live
range continues after kill flag"). `fix_kills` moves each such flag to the value's new last
read when that read names the register the same way (same sub-register), and otherwise drops
it (a missing kill flag is always legal: LLVM recomputes liveness).

Why moving is right: the order keeps every data, anti and output edge, so the reads of one
value all stay between its definition and the next full definition; a read that now follows
the killed one read the same value before it in the input, and after the new last read the
value is dead, as it was after the killed read.
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxsched.io.mir_parse import (
    MirInstr,
    RegOperand,
    find_top_level,
    parse_reg_operand,
    top_level_indices,
)
from jaxsched.io.mir_regions import MirRegion, phys_units

#: A position of a register operand: (instruction id in the region, index into its ``regs``).
Slot = tuple[int, int]


def _overlaps(a: RegOperand, b: RegOperand) -> bool:
    if a.virtual or b.virtual:
        return a.name == b.name
    return bool(phys_units(a.name) & phys_units(b.name))


def _reads(op: RegOperand) -> bool:
    """Whether the operand reads its register (a use, or a sub-register def without undef)."""
    if op.undef:
        return False
    return not op.is_def or (op.virtual and bool(op.subreg))


def _ends(op: RegOperand, killed: RegOperand) -> bool:
    """Whether the def ``op`` replaces every part of the killed register's value."""
    if not op.is_def or not _overlaps(op, killed):
        return False
    if op.virtual:
        return not op.subreg or op.undef
    return phys_units(op.name) >= phys_units(killed.name)


def _readers_after(
    instrs: Sequence[MirInstr], order: Sequence[int], start: int, killed: RegOperand
) -> list[int]:
    """Ids of the instructions after position ``start`` of ``order`` that read the killed
    operand's register before a def replaces it."""
    out: list[int] = []
    for i in order[start + 1 :]:
        ops = instrs[i].regs
        if any(_reads(op) and _overlaps(op, killed) for op in ops):
            out.append(i)
        if any(_ends(op, killed) for op in ops):
            break
    return out


def _new_slot(ins: MirInstr, i: int, killed: RegOperand) -> Slot | None:
    """The operand of ``ins`` (id ``i``) that can take the kill flag: its only operand touching
    the register, a plain use naming it as the killed one does; else None."""
    touching = [k for k, op in enumerate(ins.regs) if _overlaps(op, killed)]
    if len(touching) != 1:
        return None
    op = ins.regs[touching[0]]
    if op.is_def or op.undef or op.name != killed.name or op.subreg != killed.subreg:
        return None
    return (i, touching[0])


def kill_changes(mr: MirRegion, order: Sequence[int]) -> tuple[set[Slot], set[Slot]]:
    """(slots to clear, slots to mark) so that every ``killed`` use of the region is the last
    read of its value in ``order``."""
    pos = {x: k for k, x in enumerate(order)}
    clear: set[Slot] = set()
    mark: set[Slot] = set()
    for i, ins in enumerate(mr.instrs):
        for k, op in enumerate(ins.regs):
            if op.is_def or "killed" not in op.flags:
                continue
            readers = _readers_after(mr.instrs, order, pos[i], op)
            if not readers:
                continue
            clear.add((i, k))
            slot = _new_slot(mr.instrs[readers[-1]], readers[-1], op)
            if slot is not None:
                mark.add(slot)
    return clear - mark, mark - {s for s in mark if "killed" in _op(mr, s).flags}


def _op(mr: MirRegion, slot: Slot) -> RegOperand:
    return mr.instrs[slot[0]].regs[slot[1]]


def operand_spans(text: str) -> list[tuple[int, int]]:
    """Character spans in ``text`` (an instruction without indentation) of its top-level
    operand pieces before ``::``, in the order `jaxsched.io.mir_parse.parse_instruction` reads
    them (definitions, then the operands after the opcode); non-register pieces included."""
    end = find_top_level(text, " :: ")
    body_end = len(text) if end < 0 else end
    eq = find_top_level(text[:body_end], " = ")
    spans = _pieces(text, 0, eq) if eq >= 0 else []
    k = eq + 3 if eq >= 0 else 0
    while k < body_end and text[k].isspace():
        k += 1
    while k < body_end:  # instruction flags, then the opcode
        j = k
        while j < body_end and not text[j].isspace():
            j += 1
        word = text[k:j]
        k = j
        while k < body_end and text[k].isspace():
            k += 1
        if word[:1].isupper() or word[:1] == "_":
            break
    return spans + (_pieces(text, k, body_end) if k < body_end else [])


def _pieces(text: str, lo: int, hi: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    start = lo
    for i in top_level_indices(text[lo:hi]):
        if text[lo + i] == ",":
            out.append(_strip(text, start, lo + i))
            start = lo + i + 1
    out.append(_strip(text, start, hi))
    return out


def _strip(text: str, lo: int, hi: int) -> tuple[int, int]:
    while lo < hi and text[lo].isspace():
        lo += 1
    while hi > lo and text[hi - 1].isspace():
        hi -= 1
    return lo, hi


def set_killed(ins: MirInstr, line: str, changes: dict[int, bool]) -> str:
    """``line`` (the instruction's line, with indentation and line end) with the ``killed``
    flag of register operands ``changes`` (index into ``ins.regs`` -> killed) set or cleared.
    The line is returned unchanged if its operands cannot be matched to ``ins.regs``."""
    indent = len(line) - len(line.lstrip())
    text = ins.text
    if line[indent : indent + len(text)] != text:
        return line
    # The register operands, as parse_instruction keeps them.
    reg_spans = [s for s in operand_spans(text) if _is_reg_piece(text[s[0] : s[1]])]
    if len(reg_spans) != len(ins.regs):
        return line
    for k in sorted(changes, reverse=True):
        lo, hi = reg_spans[k]
        text = text[:lo] + _flagged(text[lo:hi], changes[k]) + text[hi:]
    return line[:indent] + text + line[indent + len(ins.text) :]


def _is_reg_piece(piece: str) -> bool:
    return parse_reg_operand(piece, in_defs=False) is not None


def _flagged(piece: str, killed: bool) -> str:
    words = piece.split(" ")
    if not killed:
        return " ".join(w for w in words if w != "killed")
    if "killed" in words:
        return piece
    k = 1 if words[0] == "implicit" else 0
    return " ".join([*words[:k], "killed", *words[k:]])
