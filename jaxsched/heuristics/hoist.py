"""Hoisting long-latency instructions under a register-pressure cap: a host-side local search
that shortens an order without raising any register file's peak.

Why: in a region whose loads each feed several values that live until a later load's arrive
(a reduction over loaded words, e.g. parboil's ``histo_final_kernel``), every ant that issues
loads early runs out of registers several steps later, with no candidate left under the limit,
and dies; the list schedulers run into the same wall. The colony then returns the RP-feasible
order, loads one after another (1,387 cycles on that region at occupancy 10 on gfx906). Moving
each load, with the instructions it needs, just ahead of where it was, and keeping the move
only when no file's peak grows, reaches 503 cycles at the same peak, 18 VGPRs; llc 15 then
allocates 17 VGPRs and the function's time per wave slot by llvm-mca halves (2,852 -> 1,417,
occupancy 10 both).

The search (`hoist`): repeatedly, for each instruction of latency at least ``min_latency`` in
order, try to issue it earlier: at the region's start, or just after
one of the ``lookback`` long-latency instructions before it; the instruction moves there with
every predecessor it transitively needs from that point on (its "cone", in their order). The
first move that keeps every peak within ``limits`` and shortens the order's greedy timing
(`issue_cycles`) is kept; rounds repeat until none is, at most ``max_rounds``. Deterministic
(no randomness), so the same order gives the same result everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jaxsched.heuristics.host_schedule import host_region, order_peak_rp_host
from jaxsched.heuristics.list_scheduler import issue_cycles
from jaxsched.machines.model import Machine
from jaxsched.problem.padded import pad_region
from jaxsched.problem.region import Region

__all__ = ["hoist"]


def hoist(
    region: Region,
    machine: Machine,
    order: Sequence[int],
    limits: Sequence[int],
    *,
    min_latency: int = 8,
    lookback: int = 3,
    max_rounds: int = 64,
    budget: int = 200_000,
) -> tuple[tuple[int, ...], int] | None:
    """A shorter order than ``order`` whose per-file peak RP (live-through included, as
    `jaxsched.heuristics.host_schedule.order_peak_rp_host` counts it) stays within ``limits``
    (int per file of ``machine``), and its length; None when no move shortens ``order``.

    Args:
      order: a topological order of ``region`` (instruction ids in issue order).
      limits: the highest peak allowed per register file (e.g. ``order``'s own peaks: then no
        file needs a register more).
      min_latency: the instructions worth moving: those with an outgoing latency at least this.
      lookback: how many earlier long-latency instructions to try to move ahead of.
      max_rounds: a cap on the rounds of moves (each round keeps at most one move per
        instruction).
      budget: a cap on the work, in instructions looked at: each move tried costs the
        region's size; the search stops, keeping what it found, when the budget is spent
        (about a second on the CPU).
    """
    host = host_region(pad_region(region, machine))
    cap = np.asarray(limits)
    preds = [[p for p, _ in ps] for ps in region.predecessors()]
    succs = region.successors()
    longs = {i for i, ss in enumerate(succs) if any(lat >= min_latency for _, lat in ss)}
    if not longs:
        return None
    cur = list(order)
    best = length = _length(region, cur, machine)
    tries = [max(1, budget // len(cur))]  # moves left to try
    for _ in range(max_rounds):
        moved = False
        for i in [j for j in cur if j in longs]:
            found = _first_move(
                region, machine, host, preds, longs, cur, i, cap, length, lookback, tries
            )
            if found is not None:
                cur, length = found
                moved = True
            if tries[0] <= 0:
                break
        if not moved or tries[0] <= 0:
            break
    return (tuple(cur), length) if length < best else None


def _first_move(region, machine, host, preds, longs, cur, i, cap, length, lookback, tries):
    """(order, length) of the first shortening move of ``i`` that keeps the peaks within
    ``cap``, trying the earliest positions first; None when there is none (or ``tries[0]``,
    the moves left to try, runs out; each try takes one)."""
    pos = {x: k for k, x in enumerate(cur)}
    at = pos[i]
    before = [pos[j] + 1 for j in cur[:at] if j in longs][-lookback:]
    for p in sorted({0, *before}):
        if p >= at or tries[0] <= 0:
            continue
        tries[0] -= 1
        cone = _cone(preds, pos, i, p)
        new = cur[:p] + [x for x in cur[p:] if x in cone]
        new += [x for x in cur[p:] if x not in cone]
        if np.any(order_peak_rp_host(host, np.asarray(new, np.int32)) > cap):
            continue
        n_len = _length(region, new, machine)
        if n_len < length:
            return new, n_len
    return None


def _cone(preds: list[list[int]], pos: dict[int, int], i: int, p: int) -> set[int]:
    """``i`` and its transitive predecessors at positions ``p`` or later."""
    cone, stack = {i}, [i]
    while stack:
        for y in preds[stack.pop()]:
            if pos[y] >= p and y not in cone:
                cone.add(y)
                stack.append(y)
    return cone


def _length(region: Region, order: Sequence[int], machine: Machine) -> int:
    return int(issue_cycles(region, order, machine.issue_width).max()) + 1
