"""Exact best-first branch and bound over schedule prefixes, for both passes of the two-pass
problem.

**Branching: on schedule prefixes.** A node is a prefix of the issue order; its children append
one ready instruction (all predecessors issued). In the length pass each appended instruction
is placed at its earliest cycle that is not before the previous one (``max(current cycle, latest
predecessor + latency)``, next cycle when the current one is full). Every schedule is dominated by
such a greedy timing of its own issue order (same order, no later cycles), and the register
pressure depends only on the order, so enumerating orders loses no optimum. In the RP pass
(latencies ignored) a node's cost is its peak RP vector so far.

**Bounds** (`jaxsched.exact.expand`): per-file RP lower bounds, the optimistic longest path
through the unscheduled instructions from their earliest cycles (the partially specified
schedule's bound: the prefix fixes an order between every issued instruction and the rest),
release-time and tail resource bounds. A child whose bound is not better than the incumbent is
pruned; so is one that cannot meet the RP limit (length pass).

**Dominance.** Two prefixes with the same scheduled set have the same live registers (the
liveness model makes them a function of the set). In the RP pass a prefix is dominated by
another with the same set and no larger peak in any file; in the length pass by one with the
same set, no later next issue slot and no later earliest cycle for any unscheduled instruction.
Dominated prefixes are dropped (a bounded number of labels is stored per set; storing fewer only
prunes less).

**Order of search.** Best first on (bound, deeper first), popping K nodes at a time whose
children are evaluated in one jitted call. When the best open bound is not better than the
incumbent, the incumbent is optimal. Budgets (expanded nodes, seconds) stop the search early
with a proven interval ``[lower, upper]``; ``lower`` is the best open bound.

Objectives (match the colony): RP pass, key ``(machine.rp_cost(peaks), sum of per-file peaks)``
lexicographically, lowest first; length pass, key ``(length,)`` with length = max cycle + 1, under
``machine.rp_cost(peaks) <= rp_target`` (the RP of the issue order).
"""

from __future__ import annotations

import heapq
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.errors import InputError
from jaxsched.exact.expand import MachineConstants, Nodes, expand, root
from jaxsched.exact.tables import (
    Tables,
    build_tables,
    check_order,
    order_from_cycles,
    order_peaks,
    rp_limit,
)
from jaxsched.heuristics.list_scheduler import issue_cycles
from jaxsched.machines.model import Machine
from jaxsched.problem.padded import next_pow2
from jaxsched.problem.region import Region

OBJECTIVES = ("rp", "length")
#: Labels stored per scheduled set for dominance checks.
MAX_LABELS = 16
#: The lower bound of an infeasible length search.
_BIG = np.iinfo(np.int32).max // 4


class ExactError(InputError):
    """Bad arguments to the exact solver (the message names the argument and the region)."""


class ExactResult(NamedTuple):
    """Outcome of an exact search.

    Attributes:
      status: ``"optimal"`` (``lower == upper``, the schedule is optimal), ``"bounded"`` (budget
        ran out: optimum in ``[lower, upper]``) or ``"infeasible"`` (no schedule meets the RP
        target; ``cycles``/``order`` None).
      objective: ``"rp"`` or ``"length"``.
      lower: proven lower bound on the key: ``(rp_cost, peak_sum)`` or ``(length,)``.
      upper: key of the best schedule found (``None`` if none was found).
      order: int64[n] issue order of the best schedule, or None.
      cycles: int64[n] issue cycle per instruction (RP pass: positions), or None.
      peaks: per-file peak RP (machine file order) of the best schedule, or None.
      rp_cost: ``machine.rp_cost(peaks)`` of the best schedule (-1 if none).
      length: length in cycles of the best schedule (RP pass: n; -1 if none).
      nodes: search nodes expanded.
      seconds: wall time (compilation included).
    """

    status: str
    objective: str
    lower: tuple[int, ...]
    upper: tuple[int, ...] | None
    order: np.ndarray | None
    cycles: np.ndarray | None
    peaks: tuple[int, ...] | None
    rp_cost: int
    length: int
    nodes: int
    seconds: float

    @property
    def optimal(self) -> bool:
        return self.status == "optimal"


class _Pool:
    """Growable host store of search nodes (rows), with parent links for reconstruction."""

    def __init__(self, n: int, f: int, cap: int = 1024) -> None:
        self.sched = np.zeros((cap, n), bool)
        self.est = np.zeros((cap, n), np.int32)
        self.slot = np.zeros(cap, np.int32)
        self.peaks = np.zeros((cap, f), np.int32)
        self.parent = np.zeros(cap, np.int64)
        self.inst = np.zeros(cap, np.int64)
        self.size = 0

    def add(self, sched, est, slot, peaks, parent, inst) -> np.ndarray:
        """Append rows; returns their ids."""
        k = len(slot)
        need = self.size + k
        if need > len(self.slot):
            cap = max(need, 2 * len(self.slot))
            for name in ("sched", "est", "slot", "peaks", "parent", "inst"):
                old = getattr(self, name)
                new = np.zeros((cap, *old.shape[1:]), old.dtype)
                new[: self.size] = old[: self.size]
                setattr(self, name, new)
        ids = np.arange(self.size, need)
        self.sched[ids], self.est[ids], self.slot[ids] = sched, est, slot
        self.peaks[ids], self.parent[ids], self.inst[ids] = peaks, parent, inst
        self.size = need
        return ids

    def order(self, node: int) -> list[int]:
        out = []
        while node > 0:
            out.append(int(self.inst[node]))
            node = int(self.parent[node])
        return out[::-1]


def _key(objective: str, machine: Machine, peaks: np.ndarray, length: int) -> tuple[int, ...]:
    if objective == "rp":
        return (machine.rp_cost(peaks), int(np.sum(peaks)))
    return (int(length),)


def _check_args(
    region: Region, machine: Machine, objective: str, rp_target, node_budget, time_budget, batch
) -> None:
    where = f"region {region.name!r}"
    if objective not in OBJECTIVES:
        raise ExactError(f"{where}: objective must be one of {OBJECTIVES}, got {objective!r}")
    if rp_target is not None and (
        isinstance(rp_target, bool) or not isinstance(rp_target, int | np.integer) or rp_target < 0
    ):
        raise ExactError(f"{where}: rp_target must be an integer >= 0 or None, got {rp_target!r}")
    if isinstance(node_budget, bool) or not isinstance(node_budget, int) or node_budget < 1:
        raise ExactError(f"{where}: node_budget must be an integer >= 1, got {node_budget!r}")
    if not isinstance(time_budget, int | float) or not time_budget > 0:
        raise ExactError(f"{where}: time_budget must be seconds > 0, got {time_budget!r}")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ExactError(f"{where}: batch must be an integer >= 1, got {batch!r}")
    try:
        region.check_machine(machine)
    except ValueError as e:
        raise ExactError(str(e)) from None


def _initial_orders(region: Region, t: Tables) -> list[np.ndarray]:
    """A few list-scheduling orders (critical path, input order) as starting incumbents."""
    n = len(region)
    preds = [set(p for p, _ in ps) for ps in region.predecessors()]
    cp = region.critical_path()
    out = [np.asarray(region.topological_order(), np.int64)]
    done: set[int] = set()
    order: list[int] = []
    while len(order) < n:
        ready = [i for i in range(n) if i not in done and preds[i] <= done]
        j = max(ready, key=lambda i: (cp[i], -i))
        order.append(j)
        done.add(j)
    out.append(np.asarray(order, np.int64))
    return out


def solve_exact(
    region: Region,
    machine: Machine,
    *,
    objective: str = "rp",
    rp_target: int | None = None,
    node_budget: int = 200_000,
    time_budget: float = 10.0,
    incumbent_cycles: np.ndarray | list[int] | None = None,
    incumbent_order: np.ndarray | list[int] | None = None,
    batch: int = 32,
) -> ExactResult:
    """Best-first branch and bound for one pass (see the module docstring).

    Args:
      region: the region (n instructions).
      machine: target machine (issue width and register files).
      objective: ``"rp"`` (lowest RP cost, then lowest sum of per-file peaks; latencies ignored)
        or ``"length"`` (shortest schedule with latencies and issue width).
      rp_target: length pass only: the RP cost the schedule must not exceed; None = no limit.
      node_budget: stop after expanding about this many nodes (a batch may finish). Results
        under a node budget alone are reproducible on any machine.
      time_budget: stop after about this many seconds (checked once per batch; compilation
        counts). A search that stops on time depends on the machine and its load.
      incumbent_cycles: optional int[n] cycles of a known schedule (e.g. the colony's), used as the
        starting upper bound if it meets the RP target; its issue order is by cycle.
      incumbent_order: optional int[n] issue order of a known schedule (alternative to cycles).
      batch: K, nodes expanded per jitted call.

    Returns:
      `ExactResult`; its schedule (if any) is valid and meets the RP target.

    Raises:
      ExactError: bad arguments, or an incumbent that is not a valid schedule.
    """
    start = time.perf_counter()
    _check_args(region, machine, objective, rp_target, node_budget, time_budget, batch)
    t_np = build_tables(region, machine)
    w = machine.issue_width if objective == "length" else 1
    limit = rp_limit(machine, rp_target if objective == "length" else None)
    best = _Incumbent(region, machine, t_np, objective, limit, w)
    if incumbent_cycles is not None:
        best.offer(order_from_cycles(region, incumbent_cycles, "incumbent_cycles"))
    if incumbent_order is not None:
        best.offer(check_order(region, incumbent_order, "incumbent_order"))
    for order in _initial_orders(region, t_np):
        best.offer(order)

    r = root(t_np, batch)
    if objective == "length" and np.any(r.peaks[0] > limit):
        return _result("infeasible", objective, (_BIG,), None, None, None, None, machine, 0, start)
    params = MachineConstants(
        issue_width=jnp.int32(w),
        rp_limit=jnp.asarray(limit, jnp.int32),
        lut=jnp.asarray(machine.occupancy_lut),
        target=jnp.int32(machine.target_occupancy),
    )
    front = _Frontier(t_np, r, objective, batch, region.ready_list_bound())
    status, lower = front.search(best, params, node_budget, start + time_budget)
    if status == "optimal":
        lower = best.key
    elif status == "infeasible":
        lower = (_BIG,) if objective == "length" else lower
    elif best.key is not None:
        lower = min(lower, best.key)
    cycles = best.cycles(best.order) if best.order is not None else None
    return _result(
        status, objective, lower, best.key, best.order, cycles, best.peaks, machine,
        front.expanded, start,
    )  # fmt: skip


class _Incumbent:
    """The best complete order offered so far that meets the RP limit, with its key."""

    def __init__(self, region, machine, t_np: Tables, objective: str, limit, width: int):
        self.region, self.machine, self.t_np = region, machine, t_np
        self.objective, self.limit, self.width = objective, limit, width
        self.order: np.ndarray | None = None
        self.key: tuple[int, ...] | None = None
        self.peaks: np.ndarray | None = None

    def cycles(self, order: np.ndarray) -> np.ndarray:
        """int64[n]: the order's cycles (RP pass: positions; length pass: greedy timing)."""
        if self.objective == "rp":
            cyc = np.empty(len(order), np.int64)
            cyc[order] = np.arange(len(order))
            return cyc
        return issue_cycles(self.region, order, self.width)

    def offer(self, order: np.ndarray) -> None:
        """Keep ``order`` (int64[n], complete) if it meets the limit and beats the best."""
        peaks = order_peaks(self.t_np, order)
        if np.any(peaks > self.limit):
            return
        key = _key(self.objective, self.machine, peaks, int(self.cycles(order).max()) + 1)
        if self.beaten_by(key):
            self.order, self.key, self.peaks = order, key, peaks

    def beaten_by(self, key: tuple[int, ...]) -> bool:
        return self.key is None or key < self.key


class _Frontier:
    """The open nodes: a host pool of prefixes, a heap on (bound key, -depth, id) and the
    dominance labels per scheduled set; expanded ``batch`` nodes per jitted call."""

    def __init__(self, t_np: Tables, r: Nodes, objective: str, batch: int, ready_bound: int):
        N, F = t_np.valid.shape[0], r.peaks.shape[1]
        self.t_np, self.t = t_np, jax.tree.map(jnp.asarray, t_np)
        self.objective, self.batch = objective, batch
        self.n = int(t_np.valid.sum())
        self.pool = _Pool(N, F)
        self.pool.add(r.sched[:1], r.est[:1], r.slot[:1], r.peaks[:1], [0], [-1])
        self.heap: list[tuple] = [((0,) * (2 if objective == "rp" else 1), 0, 0)]
        self.labels: dict[bytes, list[np.ndarray]] = {}
        # Each parent has at most `ready_list_bound` children: this capacity never overflows,
        # so the search compiles once per (bucket, capacity, objective); the overflow re-run
        # is a safeguard.
        self.capacity = int(min(next_pow2(batch * ready_bound), batch * N))
        self.expanded = 0

    def search(self, best: _Incumbent, params: MachineConstants, node_budget: int, deadline: float):
        """Expand until the frontier cannot beat ``best`` or a budget runs out: (status,
        lower bound key)."""
        lower: tuple[int, ...] = (0, 0) if self.objective == "rp" else (1,)
        while True:
            if self.heap and best.key is not None and self.heap[0][0] >= best.key:
                self.heap.clear()  # every open node is no better than the incumbent
            if not self.heap:
                return ("optimal" if best.key is not None else "infeasible"), lower
            lower = max(lower, self.heap[0][0])
            if self.expanded >= node_budget or time.perf_counter() > deadline:
                return "bounded", lower
            ids = []
            while self.heap and len(ids) < self.batch:
                key, _, nid = heapq.heappop(self.heap)
                if best.beaten_by(key):
                    ids.append(nid)
            if ids:
                self.expanded += len(ids)
                self._expand(ids, best, params)

    def _expand(self, ids: list[int], best: _Incumbent, params: MachineConstants) -> None:
        """Expand the nodes ``ids``: offer complete children to ``best``, push the others
        that are neither bounded out nor dominated."""
        nodes = _gather(self.pool, ids, self.batch)
        while True:
            ch = expand(self.t, nodes, params, capacity=self.capacity, objective=self.objective)
            if not bool(ch.overflow):
                break
            self.capacity = int(2 ** np.ceil(np.log2(int(ch.count))))
        ch = jax.tree.map(np.asarray, ch)
        keep = np.flatnonzero(ch.valid)
        depth = ch.sched[keep].sum(axis=1) - int((~self.t_np.valid).sum())
        for c in keep[depth == self.n]:
            parent = ids[int(ch.parent[c])]
            best.offer(np.asarray([*self.pool.order(parent), int(ch.inst[c])], np.int64))
        rest, depth = keep[depth < self.n], depth[depth < self.n]
        rp = self.objective == "rp"
        keys = np.stack([ch.key[rest], ch.tie[rest]], 1) if rp else ch.key[rest][:, None]
        packed = np.packbits(ch.sched[rest], axis=1)
        lab = ch.peaks[rest] if rp else np.concatenate([ch.slot[rest][:, None], ch.est[rest]], 1)
        chosen = [
            k
            for k in range(rest.size)
            if best.beaten_by(tuple(int(v) for v in keys[k]))
            and not _dominated(self.labels, packed[k].tobytes(), lab[k])
        ]
        if not chosen:
            return
        sel = rest[chosen]
        parents = [ids[int(p)] for p in ch.parent[sel]]
        new = self.pool.add(ch.sched[sel], ch.est[sel], ch.slot[sel], ch.peaks[sel], parents,
                            ch.inst[sel])  # fmt: skip
        for k, nid in zip(chosen, new, strict=True):
            entry = (tuple(int(v) for v in keys[k]), -int(depth[k]), int(nid))
            heapq.heappush(self.heap, entry)


def _gather(pool: _Pool, ids: list[int], batch: int) -> Nodes:
    k = len(ids)
    idx = np.zeros(batch, np.int64)
    idx[:k] = ids
    valid = np.zeros(batch, bool)
    valid[:k] = True
    return Nodes(
        sched=pool.sched[idx],
        est=pool.est[idx],
        slot=pool.slot[idx],
        peaks=pool.peaks[idx],
        valid=valid,
    )


def _dominated(labels: dict[bytes, list[np.ndarray]], key: bytes, lab: np.ndarray) -> bool:
    """True if a stored label of the same set is <= ``lab`` everywhere; else store ``lab``."""
    lst = labels.get(key)
    if lst is None:
        labels[key] = [lab]
        return False
    for other in lst:
        if np.all(other <= lab):
            return True
    if len(lst) < MAX_LABELS:
        lst.append(lab)
    return False


def _result(status, objective, lower, upper, order, cycles, peaks, machine, nodes, start):
    return ExactResult(
        status=status,
        objective=objective,
        lower=tuple(int(v) for v in lower),
        upper=None if upper is None else tuple(int(v) for v in upper),
        order=order,
        cycles=cycles,
        peaks=None if peaks is None else tuple(int(v) for v in peaks),
        rp_cost=-1 if peaks is None else int(machine.rp_cost(peaks)),
        length=-1 if cycles is None else int(cycles.max()) + 1,
        nodes=int(nodes),
        seconds=time.perf_counter() - start,
    )


class TwoPassResult(NamedTuple):
    """Both passes: ``rp`` (pass 1) and ``length`` (pass 2 under pass 1's best RP cost)."""

    rp: ExactResult
    length: ExactResult

    @property
    def optimal(self) -> bool:
        return self.rp.optimal and self.length.optimal


def solve_two_pass(
    region: Region,
    machine: Machine,
    *,
    node_budget: int = 200_000,
    time_budget: float = 10.0,
    incumbent_cycles: np.ndarray | list[int] | None = None,
    batch: int = 32,
) -> TwoPassResult:
    """Pass 1 (lowest RP cost, order only) then pass 2 (shortest length at that RP cost).

    Each pass gets ``node_budget`` and ``time_budget``. Pass 2's target is the RP cost of pass
    1's best order (proven optimal or not), and that order, timed greedily, is its first
    incumbent, so pass 2 always returns a schedule. ``incumbent_cycles`` (e.g. the colony's
    schedule) seeds both passes.
    """
    rp = solve_exact(
        region,
        machine,
        objective="rp",
        node_budget=node_budget,
        time_budget=time_budget,
        incumbent_cycles=incumbent_cycles,
        batch=batch,
    )
    length = solve_exact(
        region,
        machine,
        objective="length",
        rp_target=rp.rp_cost,
        node_budget=node_budget,
        time_budget=time_budget,
        incumbent_cycles=incumbent_cycles,
        incumbent_order=rp.order,
        batch=batch,
    )
    return TwoPassResult(rp, length)
