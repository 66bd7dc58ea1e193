"""Lowering an order's register peak to a limit by moving single instructions: a host-side
local search for the order that sits a register or two above an occupancy level.

Why: the RP objective (`jaxsched.machines.Machine.rp_cost`) is a staircase. Every order of
the same occupancy costs the same, so neither the list schedulers nor the colony's RP pass
are drawn towards the next level when they stop just above it. parboil's lbm loop body (211
instructions, gfx906) is such a case: every start and every ant of the RP pass ends at 33
VGPRs or more, occupancy 7, where 32 gives 8 (llc allocates 32 to LLVM's order of it); two
moves of one instruction each reach 32.

The search (`lower_peak`): while some register file's pressure is above its limit, try every
instruction at every position its dependences allow that moves it across a point of the
order where the pressure is above a limit, and keep the move that lowers the register-steps
above the limits (summed over files and points) most; stop when none is above (found) or no
move lowers them (None). Deterministic (no randomness): the first best move in issue order
wins a tie. Each trial costs a few NumPy calls (`pressure_of_permutation`); ``budget`` caps
the trials.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jaxsched.heuristics.host_schedule import host_region, pressure_of_permutation
from jaxsched.machines.model import Machine
from jaxsched.problem.padded import pad_region
from jaxsched.problem.region import Region

__all__ = ["lower_peak"]


def lower_peak(
    region: Region,
    machine: Machine,
    order: Sequence[int],
    limits: Sequence[int],
    *,
    max_moves: int = 16,
    budget: int = 100_000,
) -> tuple[int, ...] | None:
    """An order of ``region`` whose per-file peak RP (live-through included, as
    `jaxsched.heuristics.host_schedule.order_peak_rp_host` counts it) is within ``limits``
    (int per file of ``machine``), reached from ``order`` (a topological order of every
    instruction) by at most ``max_moves`` single-instruction moves; ``order`` itself when
    it is within them; None when the search stops above them (no move lowers the excess,
    ``max_moves`` or ``budget`` trials spent) or the region's registers have no live-range
    tables (an instruction naming a register twice)."""
    lives = host_region(pad_region(region, machine)).lives
    if lives is None:
        return None
    limit = np.asarray(limits, np.int64)[:, None]
    preds = [[j for j, _ in p] for p in region.predecessors()]
    succs = [[j for j, _ in s] for s in region.successors()]
    current = [int(i) for i in order]

    def excess(o: list[int]) -> tuple[int, np.ndarray]:
        over = np.maximum(pressure_of_permutation(lives, np.asarray(o)) - limit, 0)
        return int(over.sum()), np.flatnonzero(over.any(axis=0))

    area, points = excess(current)
    for _ in range(max_moves):
        if area == 0:
            return tuple(current)
        best, trials = _best_move(current, preds, succs, points, excess, area, budget)
        budget -= trials
        if best is None:
            return None
        current, area, points = best
    return tuple(current) if area == 0 else None


def _best_move(current, preds, succs, points, excess, area, budget):
    """The move of one instruction of ``current`` across a point of ``points`` (indices of
    the pressure profile above a limit) that lowers ``excess`` below ``area`` most, as
    (order, its excess, its points), or None; and the trials it took (at most ``budget``)."""
    pos = {i: k for k, i in enumerate(current)}
    first, last = int(points.min()), int(points.max())
    best, trials = None, 0
    for p, i in enumerate(current):
        lo = max((pos[j] for j in preds[i]), default=-1) + 1
        hi = min((pos[j] for j in succs[i]), default=len(current)) - 1
        rest = current[:p] + current[p + 1 :]
        for q in range(lo, hi + 1):
            # profile index k + 1 follows step k: the move changes indices min(p, q) + 1 ..
            # max(p, q) + 1, and helps only across a point above a limit
            if q == p or max(p, q) + 1 < first or min(p, q) + 1 > last:
                continue
            if trials >= budget:
                return best, trials
            trials += 1
            trial = [*rest[:q], i, *rest[q:]]
            a, pts = excess(trial)
            if a < (area if best is None else best[1]):
                best = (trial, a, pts)
    return best, trials
