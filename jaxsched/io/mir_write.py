"""Write MIR back with the instructions of each region reordered; every other byte is kept."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from jaxsched.io.mir_kills import kill_changes, set_killed
from jaxsched.io.mir_parse import MirError
from jaxsched.io.mir_regions import MirModule, MirRegion

Order = Sequence[int] | None


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
        start = mr.groups[0][0]
        texts = _with_kills(module, mr, order_t)
        new = [texts.get(x, module.lines[x]) for k in order_t for x in mr.groups[k]]
        lines[start : start + len(new)] = new
    return "".join(lines)


def _with_kills(module: MirModule, mr: MirRegion, order: tuple[int, ...]) -> dict[int, str]:
    """The instruction lines of ``mr`` (by line index) whose ``killed`` flags change when the
    region is issued in ``order``."""
    clear, mark = kill_changes(mr, order)
    per: dict[int, dict[int, bool]] = {}
    for (i, k), killed in [*((s, False) for s in clear), *((s, True) for s in mark)]:
        per.setdefault(i, {})[k] = killed
    out: dict[int, str] = {}
    for i, changes in per.items():
        ins = mr.instrs[i]
        out[ins.line] = set_killed(ins, module.lines[ins.line], changes)
    return out
