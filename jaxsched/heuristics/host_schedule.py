"""The list scheduler of `jaxsched.heuristics.list_scheduler` on the host, step for step: the
same padded region (`DeviceRegion` of NumPy arrays, no batch axis) gives bit for bit the same
orders, cycles, lengths, peaks and costs as the jitted functions, with nothing to compile.

The JAX scheduler evaluates every instruction at every step (fixed shapes); here each step
looks only at the candidates (unscheduled instructions whose predecessors are all scheduled),
which is where every decision of the JAX one is taken: the same keys, the same lexicographic
choice (ties to the lowest id), the same register-pressure model and RP-limit filter. The
state is plain Python lists (a step touches a few registers and candidates: far cheaper than
NumPy calls on tiny arrays), so regions of thousands of instructions take a fraction of a
second.

What is not a step loop comes from `list_scheduler`, written once over an array namespace:
the clock (`advance_clock`, `in_order_issue`, here on `PyScalars`), the priority codes
(`as_codes`), `target_schedule`'s variants and choice (`target_variants`, `best_variant`) and
the result (`finish`). The step loops are this module's own, for the reason
`list_scheduler`'s docstring gives (a fixed-shape `lax` loop over all N instructions there,
ragged Python lists of the candidates here); tests/test_heuristics.py and
tests/test_derive.py test that both give the same schedules.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from jaxsched.heuristics.list_scheduler import (
    DEFAULT_PRIORITY,
    PRIORITIES,
    ListSchedule,
    PyScalars,
    advance_clock,
    as_codes,
    best_variant,
    check_issue_width,
    finish,
    in_order_issue,
    target_variants,
)
from jaxsched.heuristics.tables import BIG
from jaxsched.problem.padded import DeviceRegion

__all__ = [
    "HostRegion",
    "host_region",
    "list_schedule_host",
    "order_peak_rp_host",
    "stall_schedule_host",
    "target_schedule_host",
]

_CP, _LUC, _SUCC, _NID = (PRIORITIES.index(k) for k in ("cp", "luc", "succ", "nid"))


class HostRegion(NamedTuple):
    """A padded region (`DeviceRegion`) as Python lists, what the host scheduler reads
    (`host_region`; N instructions, R registers, F files). Sentinel entries (instruction N,
    register R) are dropped from the per-instruction lists; padding rows are empty."""

    n: int  # real instructions (the first n; the rest is padding)
    N: int  # padded instructions
    valid: np.ndarray  # bool[N]: instruction exists
    succ: list[list[int]]  # [N][<= D]: successor ids
    succ_lat: list[list[int]]  # [N][<= D]: their edge latencies
    pred: list[list[int]]  # [N][<= P]: predecessor ids
    pred_lat: list[list[int]]  # [N][<= P]: their edge latencies
    num_preds: list[int]  # [N]: in-degree
    num_succs: list[int]  # [N]: out-degree
    uses: list[list[int]]  # [N][<= U]: used register ids
    defs: list[list[int]]  # [N][<= V]: defined register ids
    cp: list[int]  # [N]: latency-weighted critical path (cycles)
    cp_unit: list[int]  # [N]: critical path in edges
    reg_file: list[int]  # [R]: file index
    reg_width: list[int]  # [R]: width in 32-bit units
    reg_num_uses: list[int]  # [R]: instructions using the register
    reg_live_in: list[bool]  # [R]
    reg_live_out: list[bool]  # [R]
    live_through: list[int]  # [F]: constant pressure per file
    reg_readers: list[list[int]]  # [R]: instructions using or defining the register
    sink: np.ndarray  # bool[N]: no successor
    lives: _Lives | None  # the tables of `_peaks_of_permutation`; None: use the step loop


def _real(rows: np.ndarray, sentinel: int) -> list[list[int]]:
    """Each row of an int[N, K] table without its ``sentinel`` entries."""
    return [[x for x in row if x != sentinel] for row in rows.tolist()]


def _paired(ids: np.ndarray, values: np.ndarray, sentinel: int) -> list[list[int]]:
    """Each row of ``values`` (int[N, K]) where ``ids`` (int[N, K]) is not ``sentinel``."""
    return [
        [v for x, v in zip(r, w, strict=True) if x != sentinel]
        for r, w in zip(ids.tolist(), values.tolist(), strict=True)
    ]


def host_region(dev: DeviceRegion | HostRegion) -> HostRegion:
    """The `HostRegion` of one padded region (NumPy ``dev``, no batch axis); convert once
    when scheduling a region several times."""
    if isinstance(dev, HostRegion):
        return dev
    N, R = dev.valid.shape[0], dev.reg_width.shape[0]
    succ, pred = np.asarray(dev.succ), np.asarray(dev.pred)

    def lst(a) -> list:
        return np.asarray(a).tolist()

    uses, defs = _real(np.asarray(dev.uses), R), _real(np.asarray(dev.defs), R)
    readers: list[list[int]] = [[] for _ in range(R)]
    for i, regs in enumerate(zip(uses, defs, strict=True)):
        for r in {*regs[0], *regs[1]}:
            readers[r].append(i)
    return HostRegion(
        n=int(dev.n),
        N=N,
        valid=np.asarray(dev.valid),
        succ=_real(succ, N),
        succ_lat=_paired(succ, np.asarray(dev.succ_lat), N),
        pred=_real(pred, N),
        pred_lat=_paired(pred, np.asarray(dev.pred_lat), N),
        num_preds=lst(dev.num_preds),
        num_succs=lst(dev.num_succs),
        uses=uses,
        defs=defs,
        cp=lst(dev.cp),
        cp_unit=lst(dev.cp_unit),
        reg_file=lst(dev.reg_file),
        reg_width=lst(dev.reg_width),
        reg_num_uses=lst(dev.reg_num_uses),
        reg_live_in=lst(dev.reg_live_in),
        reg_live_out=lst(dev.reg_live_out),
        live_through=lst(dev.live_through),
        reg_readers=readers,
        sink=(succ == N).all(axis=1),
        lives=_lives(dev, uses, defs),
    )


# ------------------------------------------------------------------------------ registers
class _Regs(NamedTuple):
    """Register-tracking state (the JAX `_Regs` as mutable lists)."""

    remaining: list[int]  # [R]: unscheduled uses per register
    live: list[bool]  # [R]: live now
    rp: list[int]  # [F]: live width per file, live-through included
    peak: list[int]  # [F]: peak of ``rp`` so far (start included)


def _init_regs(t: HostRegion) -> _Regs:
    live, rp = t.reg_live_in[:], t.live_through[:]
    _add_widths(t, rp, [r for r, alive in enumerate(live) if alive], 1)
    return _Regs(remaining=t.reg_num_uses[:], live=live, rp=rp, peak=rp[:])


def _add_widths(t: HostRegion, rp: list[int], regs: list[int], sign: int) -> None:
    """Add (``sign`` 1) or remove (-1) the widths of ``regs`` to ``rp`` ([F]) in place."""
    for r in regs:
        rp[t.reg_file[r]] += sign * t.reg_width[r]


def _issue_regs(t: HostRegion, regs: _Regs, j: int) -> None:
    """Issue instruction ``j``: its uses (last uses die), then its defs are born, the peak is
    recorded, then dead defs die; every condition on the state before its phase, as the JAX
    update evaluates it on whole slot vectors."""
    rem, live, out = regs.remaining, regs.live, t.reg_live_out
    uses, defs = t.uses[j], t.defs[j]
    for r in uses:
        rem[r] -= 1
    killed = [r for r in uses if rem[r] == 0 and live[r] and not out[r]]
    for r in killed:
        live[r] = False
    _add_widths(t, regs.rp, killed, -1)
    born = [r for r in defs if not live[r]]
    for r in born:
        live[r] = True
    _add_widths(t, regs.rp, born, 1)
    regs.peak[:] = [max(p, x) for p, x in zip(regs.peak, regs.rp, strict=True)]
    dead = [r for r in defs if rem[r] == 0 and not out[r] and live[r]]
    for r in dead:
        live[r] = False
    _add_widths(t, regs.rp, dead, -1)


class _State(NamedTuple):
    """A list schedule in progress (updated in place)."""

    regs: _Regs
    candidates: list[int]  # ascending ids: unscheduled, every predecessor scheduled
    preds_left: list[int]  # [N]: unscheduled predecessors
    earliest: list[int]  # [N]: earliest issue cycle from scheduled predecessors
    order: list[int]  # [N]: issue sequence, padding N
    cycles: list[int]  # [N]: issue cycle per instruction
    # What issuing each instruction now would do (valid where ``fresh``: none of its
    # registers changed since): live registers it kills (the "luc" key), and the RP change
    # it records (its last uses die, then its defs are born), per file.
    fresh: list[bool]  # [N]
    last_uses: list[int]  # [N]
    delta: np.ndarray  # int64[N, F]


def _refresh(t: HostRegion, s: _State, rows: list[int]) -> None:
    """Recompute the effects of the instructions ``rows`` that are not fresh
    (`list_scheduler._last_use_count` and `_rp_after`)."""
    rem, live, out = s.regs.remaining, s.regs.live, t.reg_live_out
    for i in rows:
        if s.fresh[i]:
            continue
        killed = [r for r in t.uses[i] if rem[r] == 1 and live[r] and not out[r]]
        delta = [0] * s.delta.shape[1]
        _add_widths(t, delta, killed, -1)
        _add_widths(t, delta, [d for d in t.defs[i] if not live[d] or d in killed], 1)
        s.last_uses[i], s.delta[i], s.fresh[i] = len(killed), delta, True


def _within_limit(
    t: HostRegion, s: _State, cand: list[int], rp_limit: np.ndarray, defer_sinks: bool
) -> list[int]:
    """The candidates (ascending ids) to choose from under the per-file ``rp_limit``
    (int64[F]), as `list_scheduler._within_limit` chooses them: those keeping the RP within
    it, else those exceeding it least; with ``defer_sinks``, RP-raising sinks last."""
    if not cand:
        return cand
    _refresh(t, s, cand)
    rows = np.asarray(cand)
    delta = s.delta[rows]  # [k, F]
    excess = np.maximum(delta - (rp_limit - np.asarray(s.regs.rp)), 0).sum(axis=1)
    pool = excess == excess.min()
    if defer_sinks:
        rest = pool & ~(t.sink[rows] & (delta > 0).any(axis=1))
        pool = rest if rest.any() else pool
    return rows[pool].tolist()


# ------------------------------------------------------------------------------ list schedule
class _Keys(NamedTuple):
    """The static priority keys of `list_scheduler._key_table` (one list schedule)."""

    cp: list[int]  # [N]: latency or unit critical path
    succ: list[int]  # [N]: successor counts
    nid: list[int]  # [N]: the negated rank (default: the negated original position)


def _select(t: HostRegion, s: _State, keys: _Keys, codes: Sequence[int], ready: list[int]):
    """The lexicographic argmax of the keys ``codes`` over ``ready`` (ascending ids), key by
    key as `list_scheduler._select`: ties to the lowest id; ``N`` when nothing is ready."""
    static = {_CP: keys.cp, _SUCC: keys.succ, _NID: keys.nid}
    tied = ready
    for c in codes:
        if len(tied) <= 1:
            break
        if c == _LUC:
            _refresh(t, s, tied)
            values = [s.last_uses[i] for i in tied]
        else:
            values = [static[c][i] for i in tied]
        best = max(values)
        tied = [i for i, v in zip(tied, values, strict=True) if v == best]
    return tied[0] if tied else t.N


def _init_state(t: HostRegion) -> _State:
    preds_left = t.num_preds[:]
    regs = _init_regs(t)
    return _State(
        regs=regs,
        candidates=[i for i in range(t.n) if preds_left[i] == 0],
        preds_left=preds_left,
        earliest=[0] * t.N,
        order=[t.N] * t.N,
        cycles=[0] * t.N,
        fresh=[False] * t.N,
        last_uses=[0] * t.N,
        delta=np.zeros((t.N, len(regs.rp)), np.int64),
    )


def _issue(t: HostRegion, s: _State, k: int, j: int, now: int) -> None:
    """Issue ``j`` at step ``k`` in cycle ``now``; release its successors; the instructions
    that read or write a register ``j`` changed are no longer fresh."""
    _issue_regs(t, s.regs, j)
    for r in (*t.uses[j], *t.defs[j]):
        for i in t.reg_readers[r]:
            s.fresh[i] = False
    s.candidates.remove(j)
    for x, lat in zip(t.succ[j], t.succ_lat[j], strict=True):
        s.preds_left[x] -= 1
        s.earliest[x] = max(s.earliest[x], now + lat)
        if s.preds_left[x] == 0:
            bisect.insort(s.candidates, x)
    s.order[k], s.cycles[j] = j, now


def list_schedule_host(
    dev: DeviceRegion | HostRegion,
    lut: np.ndarray,
    *,
    priority: str | Sequence[str] | np.ndarray = DEFAULT_PRIORITY,
    latencies: bool,
    issue_width: int = 1,
    target: int | None = None,
    rp_limit: np.ndarray | None = None,
    rank: np.ndarray | None = None,
    defer_sinks: bool = False,
) -> ListSchedule:
    """`list_scheduler.list_schedule` on the host, bit for bit (same arguments, NumPy).

    Args:
      dev: one `DeviceRegion` of NumPy arrays (no batch axis): N instructions, F files.
      lut: int32[F, T] occupancy table.
      priority: names of `PRIORITIES` or int codes from `priority_codes`.
      latencies / issue_width / target / rp_limit (int32[F]) / rank (int32[N]) /
        defer_sinks: as in `list_schedule`.

    Returns:
      A `ListSchedule` of NumPy values: order int32[N], cycles int32[N], length, peak
      int32[F], occupancy and rp_cost (int32 scalars).
    """
    codes = as_codes(priority, np).tolist()
    iw, t = check_issue_width(issue_width), host_region(dev)
    keys = _Keys(
        cp=t.cp if latencies else t.cp_unit,
        succ=t.num_succs,
        nid=[-x for x in (range(t.N) if rank is None else np.asarray(rank).tolist())],
    )
    limit = None if rp_limit is None else np.asarray(rp_limit, np.int64)
    s, cycle, used = _init_state(t), 0, 0
    for k in range(t.n):
        cand = s.candidates
        if limit is not None:
            cand = _within_limit(t, s, cand, limit, bool(defer_sinks))
        if latencies:
            first_ready = min((s.earliest[i] for i in cand), default=BIG)
            cycle, used = advance_clock(cycle, used, first_ready, iw, PyScalars)
            cand = [i for i in cand if s.earliest[i] <= cycle]
        j = _select(t, s, keys, codes, cand)
        if j < t.N:
            _issue(t, s, k, j, cycle if latencies else k)
        used += 1
    cycles = np.where(t.valid, np.asarray(s.cycles, np.int32), 0).astype(np.int32)
    length = cycles.max() + 1 if latencies else t.n
    return finish(s.order, cycles, length, s.regs.peak, lut, target, np)


def target_schedule_host(
    dev: DeviceRegion | HostRegion,
    lut: np.ndarray,
    rp_limit: np.ndarray,
    target: int,
    feasible: np.ndarray,
    issue_width: int = 1,
) -> ListSchedule:
    """`list_scheduler.target_schedule` on the host, bit for bit: the best (`best_variant`:
    lowest RP cost, then shortest, then first) of its three list schedules
    (`target_variants`: the critical-path schedule, ``feasible``'s order first (int[N]), and
    the critical-path schedule with RP-raising sinks deferred), all under ``rp_limit``
    (int32[F])."""
    dev = host_region(dev)
    codes, ranks, defer = target_variants(np.asarray(feasible), np)
    kw = dict(latencies=True, issue_width=issue_width, target=target, rp_limit=rp_limit)
    every = [
        list_schedule_host(dev, lut, priority=c, rank=r, defer_sinks=bool(d), **kw)
        for c, r, d in zip(codes, ranks, defer, strict=True)
    ]
    rp_cost = np.array([x.rp_cost for x in every])
    best = best_variant(rp_cost, np.array([x.length for x in every]), np)
    return every[int(best)]


# ------------------------------------------------------------------------------ given orders
def stall_schedule_host(
    dev: DeviceRegion | HostRegion, order: np.ndarray, issue_width: int = 1
) -> tuple[np.ndarray, np.int32]:
    """`list_scheduler.stall_schedule` on the host, bit for bit: ``order`` (int[N], a
    topological order of the real instructions, then padding N) issued in order with the
    stalls latencies force. Returns (cycles int32[N] (padding 0), length int32)."""
    iw = check_issue_width(issue_width)
    t = host_region(dev)
    cycles = [0] * t.N
    cycle = used = 0
    for j in np.asarray(order).tolist():
        if j >= t.N:
            continue  # the sentinel: the clock stays
        ready = max(
            (cycles[p] + w for p, w in zip(t.pred[j], t.pred_lat[j], strict=True)), default=0
        )
        cycle, used = in_order_issue(cycle, used, ready, iw, PyScalars)
        cycles[j] = cycle
    out = np.where(t.valid, np.asarray(cycles, np.int32), 0).astype(np.int32)
    return out, np.int32(out.max() + 1)


def order_peak_rp_host(dev: DeviceRegion | HostRegion, order: np.ndarray) -> np.ndarray:
    """int32[F]: `list_scheduler.order_peak_rp` on the host: the per-file peak RP of issuing
    ``order`` (int[N], padding N; or the real ids alone)."""
    t = host_region(dev)
    order = np.asarray(order)
    real = order[order < t.N]
    if t.lives is not None and real.shape[0] == t.n:
        return _peaks_of_permutation(t.lives, real)
    regs = _init_regs(t)
    for j in real.tolist():
        _issue_regs(t, regs, j)
    return np.asarray(regs.peak, np.int32)


class _Lives(NamedTuple):
    """A region's register accesses as flat tables, for `_peaks_of_permutation` (A uses, B
    defs, R registers, F files, n real instructions)."""

    n: int
    files: int  # F
    use_ins: np.ndarray  # int64[A]: the instruction of each use
    use_reg: np.ndarray  # int64[A]: its register
    def_ins: np.ndarray  # int64[B]: the instruction of each def
    def_reg: np.ndarray  # int64[B]: its register
    reg_file: np.ndarray  # int64[R]
    reg_width: np.ndarray  # float64[R]: width in 32-bit units
    live_in: np.ndarray  # bool[R]
    lasting: np.ndarray  # bool[R]: never dies (live-out, or live-in and never used)
    used: np.ndarray  # bool[R]: some instruction uses it
    live_through: np.ndarray  # int64[F]


def _lives(dev: DeviceRegion, uses: list[list[int]], defs: list[list[int]]) -> _Lives | None:
    """The `_Lives` tables of a padded region; None where `_issue_regs`'s step loop is the
    only exact count (an instruction naming a register twice among its uses or defs, or use
    counts that differ from the uses)."""
    n, R = int(dev.n), int(dev.reg_width.shape[0])
    if any(len(set(x)) != len(x) for x in (*uses, *defs)):
        return None
    use_ins = np.repeat(np.arange(len(uses)), [len(x) for x in uses])
    def_ins = np.repeat(np.arange(len(defs)), [len(x) for x in defs])
    use_reg = np.fromiter((r for x in uses for r in x), np.int64, use_ins.shape[0])
    def_reg = np.fromiter((r for x in defs for r in x), np.int64, def_ins.shape[0])
    counts = np.bincount(use_reg, minlength=R)
    num_uses = np.asarray(dev.reg_num_uses)
    if (counts != num_uses).any() or (use_ins >= n).any() or (def_ins >= n).any():
        return None
    live_in, live_out = np.asarray(dev.reg_live_in, bool), np.asarray(dev.reg_live_out, bool)
    return _Lives(
        n=n,
        files=int(np.asarray(dev.live_through).shape[0]),
        use_ins=use_ins,
        use_reg=use_reg,
        def_ins=def_ins,
        def_reg=def_reg,
        reg_file=np.asarray(dev.reg_file, np.int64),
        reg_width=np.asarray(dev.reg_width, np.float64),
        live_in=live_in,
        lasting=live_out | (live_in & (counts == 0)),
        used=counts > 0,
        live_through=np.asarray(dev.live_through, np.int64),
    )


def _peaks_of_permutation(t: _Lives, order: np.ndarray) -> np.ndarray:
    """int32[F]: `_issue_regs`'s per-file peak over ``order`` (int[n], every real instruction
    once): the highest of `pressure_of_permutation`."""
    return pressure_of_permutation(t, order).max(axis=1).astype(np.int32)


def pressure_of_permutation(t: _Lives, order: np.ndarray) -> np.ndarray:
    """int64[F, n + 1]: per file, the pressure `_issue_regs` takes its peak over, at the start
    (index 0) and after each step of ``order`` (int[n], every real instruction once; step k
    is index k + 1), live-through included; from each register's live range instead of a
    step loop. A register counts from its first def's index (0 when live-in) up to its last
    use's, excluded (it dies there before the peak is taken), or to the end if it never dies;
    a def at or after its last use (or of a register never used) counts at its own index
    alone (born, counted, dead)."""
    n, R = t.n, t.reg_width.shape[0]
    index = np.empty(n, np.int64)
    index[order] = np.arange(1, n + 1)
    last_use = np.zeros(R, np.int64)
    np.maximum.at(last_use, t.use_reg, index[t.use_ins])
    first_def = np.full(R, n + 1, np.int64)
    def_at = index[t.def_ins]
    np.minimum.at(first_def, t.def_reg, def_at)
    start = np.where(t.live_in, 0, first_def)
    end = np.where(t.lasting, n + 1, np.where(t.used, last_use, start))
    end = np.maximum(end, start)
    spike = ~t.lasting[t.def_reg] & (def_at >= last_use[t.def_reg])
    row = t.reg_file * (n + 2)  # each file's first key
    at = (row[t.def_reg] + def_at)[spike]
    w_at = t.reg_width[t.def_reg][spike]
    keys = np.concatenate([row + start, row + end, at, at + 1])
    weights = np.concatenate([t.reg_width, -t.reg_width, w_at, -w_at])
    rp = np.bincount(keys, weights, minlength=t.files * (n + 2)).reshape(t.files, n + 2)
    pressure = np.cumsum(rp, axis=1)[:, : n + 1].round().astype(np.int64)
    return pressure + t.live_through[:, None]
