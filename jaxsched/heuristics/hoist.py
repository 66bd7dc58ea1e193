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

Cost: a trial's peaks come from its registers' live ranges (`order_peak_rp_host`, a few NumPy
calls), and its timing starts where it departs from the current order and stops once it
cannot be shorter (`_Timing`): on myocyte's kernel file (67 searches, regions up to 1,024
instructions) the searches took 8 s instead of 36 s under cProfile, with the same orders.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jaxsched.heuristics.host_schedule import host_region, order_peak_rp_host
from jaxsched.heuristics.list_scheduler import PyScalars, check_issue_width, in_order_issue
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
        (at most a few tenths of a second on the CPU).
    """
    host = host_region(pad_region(region, machine))
    cap = np.asarray(limits)
    preds = [[p for p, _ in ps] for ps in region.predecessors()]
    succs = region.successors()
    longs = {i for i, ss in enumerate(succs) if any(lat >= min_latency for _, lat in ss)}
    if not longs:
        return None
    cur = list(order)
    timing = _Timing(preds=region.predecessors(), issue_width=machine.issue_width)
    best = length = timing.reset(cur)
    tries = [max(1, budget // len(cur))]  # moves left to try
    for _ in range(max_rounds):
        moved = False
        for i in [j for j in cur if j in longs]:
            found = _first_move(timing, host, preds, longs, cur, i, cap, length, lookback, tries)
            if found is not None:
                cur, length = found
                timing.reset(cur)
                moved = True
            if tries[0] <= 0:
                break
        if not moved or tries[0] <= 0:
            break
    return (tuple(cur), length) if length < best else None


def _first_move(timing, host, preds, longs, cur, i, cap, length, lookback, tries):
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
        n_len = timing.length(new, p, length)
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


class _Timing:
    """`issue_cycles`'s greedy timing of orders that differ from a current one (`reset`) only
    from some position on: the current order's issue cycles and clock at each position are
    kept, so an order is timed from where it departs. Issue cycles never decrease along an
    order, so its length is its last instruction's cycle + 1."""

    def __init__(self, preds: list[list[tuple[int, int]]], issue_width: int) -> None:
        self.preds = preds  # [n][(src, latency)]
        self.iw = check_issue_width(issue_width)
        self.cycles: list[int] = []  # [n]: the current order's issue cycle per instruction
        self.clock: list[tuple[int, int]] = []  # [n]: (cycle, issued in it) before position k

    def reset(self, order: Sequence[int]) -> int:
        """Make ``order`` the current one; its length (cycles)."""
        self.cycles = [0] * len(order)
        self.clock = []
        return self._run(order, 0, self.cycles)

    def length(self, order: Sequence[int], p: int, bound: int) -> int:
        """The length of ``order``, which issues the current order's first ``p`` instructions
        first, in the same order; or some figure at least ``bound`` once it is clear that
        ``order`` is no shorter than ``bound``."""
        return self._run(order, p, self.cycles[:], bound=bound)

    def _run(
        self, order: Sequence[int], p: int, cycles: list[int], *, bound: int | None = None
    ) -> int:
        cycle, used = self.clock[p] if p else (0, 0)
        iw, left = self.iw, len(order) - p
        for j in order[p:]:
            if bound is None:
                self.clock.append((cycle, used))
            ready = 0
            for q, lat in self.preds[j]:
                if cycles[q] + lat > ready:
                    ready = cycles[q] + lat
            cycle, used = in_order_issue(cycle, used, ready, iw, PyScalars)
            cycles[j] = cycle
            left -= 1
            # Every instruction left takes an issue slot (``used`` >= 1 are taken in ``cycle``):
            # the last issues at least this late.
            if bound is not None and cycle + (left + used - 1) // iw + 1 >= bound:
                return bound
        return cycle + 1
