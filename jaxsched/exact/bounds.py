"""Lower bounds on partially specified schedules, exposed for callers and property tests."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.exact.expand import MachineConstants, Nodes, expand
from jaxsched.exact.search import ExactError
from jaxsched.exact.tables import NEG, build_tables, live_after, rp_limit
from jaxsched.machines.model import Machine
from jaxsched.problem.region import Region


def optimistic_bound(region: Region, before: Iterable[tuple[int, int]] | np.ndarray = ()) -> int:
    """Length lower bound (cycles) of every schedule that respects fixed pairwise orders.

    The partially specified schedule's optimistic bound: the longest path in the graph with an
    edge ``i -> j`` of weight ``latency`` per dependence and of weight 1 per fixed order
    ``(a, b)`` in ``before`` ("a issues in an earlier cycle than b"), plus 1 for the last
    instruction's own issue cycle (length = max cycle + 1). With no fixed orders it is
    ``critical path + 1``; with a total order at issue width 1 and every latency <= 1 it equals
    the schedule length.

    Args:
      region: the region.
      before: pairs ``(a, b)``, or a bool[n, n] matrix with ``before[a, b]``.

    Raises:
      ExactError: an id out of range, or fixed orders that form a cycle with the dependences
        (no schedule respects them).
    """
    n = len(region)
    where = f"region {region.name!r}"
    if isinstance(before, np.ndarray) and before.dtype == bool:
        if before.shape != (n, n):
            raise ExactError(f"{where}: before matrix has shape {before.shape}, needs ({n}, {n})")
        pairs = [(int(a), int(b)) for a, b in zip(*np.nonzero(before), strict=True)]
    else:
        pairs = [(int(a), int(b)) for a, b in before]
    weight: dict[tuple[int, int], int] = {(e.src, e.dst): e.latency for e in region.edges}
    for a, b in pairs:
        if not (0 <= a < n and 0 <= b < n) or a == b:
            raise ExactError(f"{where}: fixed order ({a}, {b}) is not a pair of distinct ids")
        weight[(a, b)] = max(weight.get((a, b), 0), 1)
    succ: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    indeg = [0] * n
    for (a, b), wt in weight.items():
        succ[a].append((b, wt))
        indeg[b] += 1
    head = [0] * n
    stack = [i for i in range(n) if indeg[i] == 0]
    seen = 0
    while stack:
        i = stack.pop()
        seen += 1
        for j, wt in succ[i]:
            head[j] = max(head[j], head[i] + wt)
            indeg[j] -= 1
            if indeg[j] == 0:
                stack.append(j)
    if seen != n:
        raise ExactError(f"{where}: the fixed orders form a cycle with the dependences")
    return max(head) + 1


def _replay(region: Region, machine: Machine, prefix: Sequence[int], w: int, tables) -> Nodes:
    """The search node of ``prefix`` (greedy timing) as a batch of one (NumPy)."""
    t = tables
    N = t.valid.shape[0]
    sched = ~t.valid.copy()
    est = np.zeros(N, np.int64)
    slot = 0
    peaks = t.live_through + live_after(t, sched) @ t.width
    for j in prefix:
        if sched[j] or np.any(t.pred[j] & ~sched):
            raise ExactError(
                f"region {region.name!r}: prefix {list(prefix)} issues {j} before a predecessor "
                "or twice"
            )
        tj = max(slot // w, int(est[j]))
        slot = max(slot, tj * w) + 1
        sched[j] = True
        est = np.maximum(est, np.where(t.lat[j] > NEG, tj + t.lat[j], 0))
        peaks = np.maximum(peaks, t.live_through + (live_after(t, sched) | t.defs[j]) @ t.width)
    est = np.where(sched, 0, np.maximum(est, slot // w))
    return Nodes(
        sched=sched[None],
        est=est[None].astype(np.int32),
        slot=np.array([slot], np.int32),
        peaks=peaks[None].astype(np.int32),
        valid=np.array([True]),
    )


def prefix_bound(
    region: Region,
    machine: Machine,
    prefix: Sequence[int],
    *,
    objective: str = "length",
    rp_target: int | None = None,
) -> tuple[int, ...] | None:
    """The exact search's lower bound for every schedule whose issue order starts with ``prefix``.

    Returns ``(rp_cost, peak_sum)`` for ``objective="rp"`` or ``(length,)`` for ``"length"``
    (the best over the node's children when ``prefix`` is empty or complete: then it is the
    bound of the search's first level, or the exact value); None if no completion meets the RP
    target (length pass).
    """
    prefix = [int(j) for j in prefix]
    n = len(region)
    if objective not in ("rp", "length"):
        raise ExactError(f"objective must be 'rp' or 'length', got {objective!r}")
    if any(not 0 <= j < n for j in prefix):
        raise ExactError(f"region {region.name!r}: prefix {prefix} names ids outside 0..{n - 1}")
    tables = build_tables(region, machine)
    _replay(region, machine, prefix, 1, tables)  # validates the prefix
    if not prefix:
        return _children_min(region, machine, tables, [], objective, rp_target)
    return _children_min(region, machine, tables, prefix[:-1], objective, rp_target, prefix[-1])


def _children_min(region, machine, tables, parent_prefix, objective, rp_target, only=None):
    w = machine.issue_width if objective == "length" else 1
    nodes = _replay(region, machine, parent_prefix, w, tables)
    limit = rp_limit(machine, rp_target if objective == "length" else None)
    params = MachineConstants(
        issue_width=jnp.int32(w),
        rp_limit=jnp.asarray(limit, jnp.int32),
        lut=jnp.asarray(machine.occupancy_lut),
        target=jnp.int32(machine.target_occupancy),
    )
    t = jax.tree.map(jnp.asarray, tables)
    N = tables.valid.shape[0]
    ch = jax.tree.map(np.asarray, expand(t, nodes, params, capacity=N, objective=objective))
    ok = ch.valid & (np.arange(len(ch.valid)) < ch.count)
    if only is not None:
        ok &= ch.inst == only
    if not np.any(ok):
        return None
    keys = [
        (int(k), int(s)) if objective == "rp" else (int(k),)
        for k, s in zip(ch.key[ok], ch.tie[ok], strict=True)
    ]
    return min(keys)
