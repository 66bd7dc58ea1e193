"""Exact worst-case makespan for small instances: search over warp strings with merged states.

A warp string is a sequence of choices "which warp places its next instruction". After a prefix
the future depends only on each unfinished warp's progress and last cycle and on the usage of the
cycles after the earliest cycle any unfinished warp can still use (``base``). Shifting all of
these by ``base`` gives a translation-invariant key, and warps with equal progress are
interchangeable, so the key sorts them: states reached by different prefixes (or by symmetric
warps) are solved once (dynamic programming over the memo, "duplicate-state pruning"). The value
of a state is the latest cycle its best completion uses, relative to ``base``. A state stops
branching once a completion reaches the ceiling ``highest used cycle + instructions left`` (no
completion can go further), which keeps every memo entry exact.
"""

from __future__ import annotations

import sys
from typing import NamedTuple

import numpy as np

from jaxsched.makespan.model import (
    SM,
    UNITS,
    MakespanError,
    Normalized,
    as_normalized,
    check_problem,
    lower_bound,
)

#: Largest ``W * I`` the exact search accepts (recursion depth).
MAX_POSITIONS = 600


class ExactBudgetExceeded(MakespanError):
    """The exact search needed more distinct states than ``node_budget``."""


class ExactResult(NamedTuple):
    """Proven worst case.

    Attributes:
      makespan: the maximum makespan over all warp strings (cycles from 1).
      warp_string: int32[W*I], a warp string reaching it.
      lower_bound: the trivial lower bound (for comparison).
      states: distinct states solved (memo size).
      kernel: the normalised kernel string.
    """

    makespan: int
    warp_string: np.ndarray  # int32[W*I]
    lower_bound: int
    states: int
    kernel: str


class _Search:
    def __init__(self, norm: Normalized, warps: int, node_budget: int) -> None:
        self.types = [int(t) for t in norm.types]
        self.cap = [int(c) for c in norm.capacity]
        self.sigma = norm.schedulers
        self.warps = warps
        self.n_instr = len(self.types)
        horizon = warps * self.n_instr + 2
        self.sched = [0] * horizon
        self.unit = [[0] * horizon for _ in UNITS]
        self.count = [0] * warps
        self.last = [-1] * warps
        self.top = -1  # highest used cycle
        self.memo: dict[tuple, int] = {}
        self.budget = node_budget

    def earliest(self, warp: int) -> int:
        u = self.types[self.count[warp]]
        c = self.last[warp] + 1
        while self.sched[c] >= self.sigma or self.unit[u][c] >= self.cap[u]:
            c += 1
        return c

    def key(self, base: int) -> tuple:
        progress = tuple(
            sorted(
                (self.count[w], self.last[w] - base)
                for w in range(self.warps)
                if self.count[w] < self.n_instr
            )
        )
        span = range(base + 1, self.top + 1)
        usage = tuple((self.sched[c], *(row[c] for row in self.unit)) for c in span)
        return progress, usage

    def choices(self) -> list[int]:
        """Unfinished warps, one per distinct (progress, last cycle)."""
        seen = set()
        out = []
        for w in range(self.warps):
            sig = (self.count[w], self.last[w])
            if self.count[w] < self.n_instr and sig not in seen:
                seen.add(sig)
                out.append(w)
        return out

    def place(self, warp: int) -> tuple[int, int, int]:
        c = self.earliest(warp)
        u = self.types[self.count[warp]]
        undo = (warp, self.last[warp], self.top)
        self.sched[c] += 1
        self.unit[u][c] += 1
        self.count[warp] += 1
        self.last[warp] = c
        self.top = max(self.top, c)
        return (*undo, c, u)

    def unplace(self, undo) -> None:
        w, last, top, c, u = undo
        self.sched[c] -= 1
        self.unit[u][c] -= 1
        self.count[w] -= 1
        self.last[w] = last
        self.top = top

    def solve(self) -> int:
        """Latest cycle (0-based) the best completion of the current state uses; -1 if none."""
        ws = self.choices()
        if not ws:
            return -1
        base = min(self.last[w] for w in range(self.warps) if self.count[w] < self.n_instr)
        key = self.key(base)
        hit = self.memo.get(key)
        if hit is not None:
            return hit + base
        if len(self.memo) >= self.budget:
            raise ExactBudgetExceeded(
                f"exact search: more than node_budget={self.budget} distinct states; "
                "the instance is too large for a proof (use estimate)"
            )
        # Each placement lands at most one cycle after the highest used one (that cycle is empty),
        # so no completion goes past ``top + remaining``: reaching it ends the state early.
        ceiling = self.top + sum(self.n_instr - c for c in self.count)
        best = -1
        for w in ws:
            undo = self.place(w)
            best = max(best, undo[3], self.solve())
            self.unplace(undo)
            if best >= ceiling:
                break
        self.memo[key] = best - base
        return best

    def best_string(self, target: int) -> list[int]:
        """A warp string whose schedule reaches cycle ``target`` (0-based; memo filled)."""
        out = []
        for _ in range(self.warps * self.n_instr):
            for w in self.choices():
                undo = self.place(w)
                if max(self.top, self.solve()) == target:
                    out.append(w)
                    break
                self.unplace(undo)
            else:  # pragma: no cover - the memo guarantees a matching choice
                raise AssertionError("exact search: reconstruction failed")
        return out


def exact_worst_case(
    kernel: str | Normalized,
    warps: int,
    sm: SM | None = None,
    *,
    node_budget: int = 2_000_000,
) -> ExactResult:
    """The true worst-case makespan of ``warps`` warps running ``kernel`` on ``sm``.

    Exhaustive search over warp strings with merged (translation- and warp-symmetric) states.
    Practical for ``W * I`` up to a few dozen positions; raises `ExactBudgetExceeded` when more
    than ``node_budget`` distinct states are needed.
    """
    norm = as_normalized(kernel, sm, "exact_worst_case")
    warps = check_problem(norm, warps)
    if isinstance(node_budget, bool) or not isinstance(node_budget, int) or node_budget < 1:
        raise MakespanError(f"node_budget must be an int >= 1, got {node_budget!r}")
    n = warps * len(norm.kernel)
    if n > MAX_POSITIONS:
        raise MakespanError(
            f"exact search: W*I = {n} positions is too large (at most {MAX_POSITIONS})"
        )
    search = _Search(norm, warps, node_budget)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 2 * n + 200))
    try:
        worst = search.solve()
        string = search.best_string(worst)
    finally:
        sys.setrecursionlimit(limit)
    return ExactResult(
        makespan=worst + 1,
        warp_string=np.asarray(string, np.int32),
        lower_bound=lower_bound(norm, warps),
        states=len(search.memo),
        kernel=norm.kernel,
    )
