"""Write MIR back with the instructions of each region reordered; every other byte is kept.

An instruction moves with the lines that belong to it (the rest of its bundle, its debug
values and the comments right after it, `MirRegion.groups`); a blank line among a region's
instructions, and a comment after it, keeps its place: after the same number of the
region's instructions as in the input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from jaxsched.io.mir_kills import kill_changes, set_killed
from jaxsched.io.mir_parse import MirError, MirInstr, find_top_level
from jaxsched.io.mir_regions import MirModule, MirRegion

Order = Sequence[int] | None
#: An order per region, as `jaxsched.io.mir.schedule_orders` returns them (None: the input
#: order kept).
Orders = list[tuple[int, ...] | None]


class OrderError(MirError):
    """An order is not a permutation of a region's instructions or breaks one of its edges."""


def check_order(mr: MirRegion, order: Sequence[int]) -> tuple[int, ...]:
    """Validate ``order`` (original instruction ids in issue order) for region ``mr``; an
    order of the modelled region, with its completion pseudo-instruction last, is accepted
    without it (`MirRegion.model_order`)."""
    n = len(mr)
    try:
        order_t = tuple(int(x) for x in order)
    except (TypeError, ValueError):
        raise OrderError(f"region {mr.name!r}: order {order!r} is not a list of ids") from None
    if mr.region is not None and len(mr.region) > n and order_t[-1:] == (n,):
        order_t = order_t[:-1]  # the completion pseudo-instruction, last: not written
    if sorted(order_t) != list(range(n)):
        raise OrderError(
            f"region {mr.name!r}: order must be a permutation of 0..{n - 1}, got {list(order_t)}"
        )
    if order_t == tuple(range(n)):
        return order_t
    if mr.region is None:
        raise OrderError(f"region {mr.name!r} cannot be reordered: {mr.problem or 'not modelled'}")
    if mr.problem is not None:
        raise OrderError(f"region {mr.name!r} cannot be reordered: {mr.problem}")
    pos = {x: k for k, x in enumerate(order_t)}
    for e in mr.region.edges:
        if e.dst < n and pos[e.src] > pos[e.dst]:
            raise OrderError(
                f"region {mr.name!r}: order puts instruction {e.dst} "
                f"({mr.instrs[e.dst].text!r}) before {e.src} ({mr.instrs[e.src].text!r}), "
                f"breaking a {e.kind} edge"
            )
    return order_t


def write_mir(
    module: MirModule,
    orders: Sequence[Order] | Mapping[str, Sequence[int]],
    regions: Sequence[MirRegion] | None = None,
) -> str:
    """The MIR text with each region's instruction lines in the given order.

    Args:
      module: the parsed module (`jaxsched.io.mir.read_mir`).
      orders: per region of ``regions`` (default ``module.regions``) an order of original ids,
        or None to keep it; or a mapping from region name to order (others kept).
      regions: the regions the orders refer to.
    Returns:
      The new MIR text; with every order None (or the identity) it equals the input byte for
      byte. In a reordered region the only edit inside a line is a ``killed`` flag moved to
      the new last read of its value, or dropped (`jaxsched.io.mir_kills`). Raises
      `OrderError` for an order that is not a legal permutation.
    """
    regs = list(module.regions if regions is None else regions)
    if isinstance(orders, Mapping):
        names = {r.name for r in regs}
        unknown = sorted(set(orders) - names)
        if unknown:
            raise OrderError(f"orders name unknown regions {unknown}")
        per = [orders.get(r.name) for r in regs]
    else:
        per = list(orders)
        if len(per) != len(regs):
            raise OrderError(f"got {len(per)} orders for {len(regs)} regions")
    lines = list(module.lines)
    for mr, order in zip(regs, per, strict=True):
        if order is None:
            continue
        order_t = check_order(mr, order)
        if order_t == tuple(range(len(mr))):
            continue
        texts = _with_kills(module, mr, order_t)
        start, stop = mr.groups[0][0], mr.groups[-1][-1] + 1
        lines[start:stop] = _reordered(module.lines, mr, order_t, texts)
    return "".join(lines)


def _reordered(
    lines: Sequence[str], mr: MirRegion, order: tuple[int, ...], texts: dict[int, str]
) -> list[str]:
    """The lines of region ``mr``'s span (its first instruction's line to its last group's
    last line) with the instructions' groups in ``order`` (lines edited as ``texts`` says)
    and every other line in its place among them."""
    first = {g[0]: k for k, g in enumerate(mr.groups)}
    moving = {x for g in mr.groups for x in g}
    out: list[str] = []
    for x in range(mr.groups[0][0], mr.groups[-1][-1] + 1):
        if x in first:
            out += [texts.get(y, lines[y]) for y in mr.groups[order[first[x]]]]
        elif x not in moving:
            out.append(lines[x])
    return out


def _with_kills(module: MirModule, mr: MirRegion, order: tuple[int, ...]) -> dict[int, str]:
    """The instruction lines of ``mr`` (by line index) whose ``killed`` flags change when the
    region is issued in ``order`` (a bundle's flags are on its parts' lines)."""
    clear, mark = kill_changes(mr, order)
    per: dict[tuple[int, int], dict[int, bool]] = {}  # (instruction, part) -> changes
    for (i, k), killed in [*((s, False) for s in clear), *((s, True) for s in mark)]:
        p, j = mr.instrs[i].slots[k] if mr.instrs[i].parts else (-1, k)
        per.setdefault((i, p), {})[j] = killed
    out: dict[int, str] = {}
    for (i, p), changes in sorted(per.items(), reverse=True):  # right to left on a line
        ins = mr.instrs[i]
        part = ins if p < 0 else ins.parts[p]
        at = _column(module.lines[part.line], ins, p)
        if at >= 0:
            line = out.get(part.line, module.lines[part.line])
            out[part.line] = line[:at] + _set_kills(part, line[at:], changes)
    return out


def _column(line: str, ins: MirInstr, p: int) -> int:
    """Where part ``p`` of bundle ``ins`` (``p < 0``: ``ins`` itself) starts in ``line``, or
    -1. Parts that share a line appear on it in order."""
    if p < 0:
        return len(line) - len(line.lstrip())
    at = 0
    for part in ins.parts[:p]:
        if part.line == ins.parts[p].line and at >= 0:
            at = line.find(part.text, at)
            at = at + len(part.text) if at >= 0 else at
    return line.find(ins.parts[p].text, at) if at >= 0 else -1


def _set_kills(ins: MirInstr, tail: str, changes: dict[int, bool]) -> str:
    """``tail`` (``ins``'s text and what follows it on its line) with the ``killed`` flags
    ``changes``. An instruction spaced otherwise than llc prints it (tabs, no spaces around
    ``=`` or ``::``) is written with llc's spacing (`_llc_spacing`) when a flag changes."""
    spaced = _llc_spacing(ins.text)
    if spaced == ins.text or not tail.startswith(ins.text):
        return set_killed(ins, tail, changes)
    return set_killed(replace(ins, text=spaced), spaced + tail[len(ins.text) :], changes)


def _llc_spacing(text: str) -> str:
    """An instruction's ``text`` with one space between tokens outside quotes and around the
    top-level ``::`` and ``=``, as llc prints it."""
    out: list[str] = []
    quote = escaped = False
    for c in text:
        if quote:
            quote, escaped = escaped or c != '"', not escaped and c == "\\"
        elif c == '"':
            quote = True
        elif c.isspace():
            if out[-1:] == [" "]:
                continue
            c = " "
        out.append(c)
    spaced = "".join(out)
    for sep in ("::", "="):
        k = find_top_level(spaced, sep)
        if k >= 0:
            spaced = f"{spaced[:k].rstrip()} {sep} {spaced[k + len(sep) :].lstrip()}"
    return spaced
