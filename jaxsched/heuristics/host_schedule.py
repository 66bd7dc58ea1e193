"""The list scheduler of `jaxsched.heuristics.list_scheduler` on the host (NumPy), step for
step: the same padded region (`DeviceRegion` of NumPy arrays, no batch axis) gives bit for bit
the same orders, cycles, lengths, peaks and costs as the jitted functions, with nothing to
compile.

The JAX scheduler evaluates every instruction at every step (fixed shapes); here each step
looks only at the candidates (unscheduled instructions whose predecessors are all scheduled),
which is where every decision of the JAX one is taken: the same keys, the same lexicographic
choice (ties to the lowest id), the same register-pressure model and RP-limit filter, so
regions of thousands of instructions take a fraction of a second.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from jaxsched.heuristics.list_scheduler import (
    DEFAULT_PRIORITY,
    DEFAULT_TARGET,
    PRIORITIES,
    ListSchedule,
    _check_issue_width,
    priority_codes,
)
from jaxsched.machines.model import occupancy_jax
from jaxsched.problem.padded import DeviceRegion

__all__ = [
    "list_schedule_host",
    "order_peak_rp_host",
    "stall_schedule_host",
    "target_schedule_host",
]

_BIG = 2**30
_CP, _LUC, _SUCC, _NID = (PRIORITIES.index(k) for k in ("cp", "luc", "succ", "nid"))


class _Tables(NamedTuple):
    """A region's constant arrays with a dummy row/slot for the sentinels (N instructions,
    R registers, F files), as `list_scheduler._tables` builds them on device."""

    valid: np.ndarray  # bool[N + 1]: dummy False
    succ: np.ndarray  # int32[N + 1, D]: sentinel N
    succ_lat: np.ndarray  # int32[N + 1, D]
    pred: np.ndarray  # int32[N + 1, P]: sentinel N
    pred_lat: np.ndarray  # int32[N + 1, P]
    uses: np.ndarray  # int32[N + 1, U]: sentinel R
    defs: np.ndarray  # int32[N + 1, V]: sentinel R
    reg_file: np.ndarray  # int32[R + 1]
    reg_width: np.ndarray  # int32[R + 1]: dummy 0
    reg_live_out: np.ndarray  # bool[R + 1]: dummy True (never killed)
    files: np.ndarray  # int32[F]: 0 .. F - 1


def _append(a: np.ndarray, fill) -> np.ndarray:
    """``a`` with one extra leading-axis row filled with ``fill`` (same dtype)."""
    a = np.asarray(a)
    return np.concatenate([a, np.full((1, *a.shape[1:]), fill, a.dtype)], axis=0)


def _tables(dev: DeviceRegion) -> _Tables:
    N = dev.valid.shape[0]
    R = dev.reg_width.shape[0]
    return _Tables(
        valid=_append(dev.valid, False),
        succ=_append(dev.succ, N),
        succ_lat=_append(dev.succ_lat, 0),
        pred=_append(dev.pred, N),
        pred_lat=_append(dev.pred_lat, 0),
        uses=_append(dev.uses, R),
        defs=_append(dev.defs, R),
        reg_file=_append(dev.reg_file, 0),
        reg_width=_append(dev.reg_width, 0),
        reg_live_out=_append(dev.reg_live_out, True),
        files=np.arange(dev.live_through.shape[0], dtype=np.int32),
    )


# ------------------------------------------------------------------------------ registers
class _Regs(NamedTuple):
    """Register-tracking state, updated in place (the JAX `_Regs` as mutable arrays)."""

    remaining: np.ndarray  # int32[R + 1]: unscheduled uses per register
    live: np.ndarray  # bool[R + 1]: live now (dummy always False)
    rp: np.ndarray  # int32[F]: live width per file, live-through included
    peak: np.ndarray  # int32[F]: peak of ``rp`` so far (start included)


def _widths(t: _Tables, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """int32[..., F]: total width of registers ``ids`` (int[..., K]) where ``mask``
    (bool[..., K]), by file (summed over the last axis of ``ids``)."""
    w = np.where(mask, t.reg_width[ids], 0)
    onehot = t.reg_file[ids][..., None] == t.files
    return np.sum(np.where(onehot, w[..., None], 0), axis=-2, dtype=np.int32)


def _init_regs(dev: DeviceRegion, t: _Tables) -> _Regs:
    R = dev.reg_width.shape[0]
    live = _append(dev.reg_live_in, False)
    rp = np.asarray(dev.live_through, np.int32) + _widths(t, np.arange(R), live[:R])
    remaining = _append(dev.reg_num_uses, 0).astype(np.int32)
    return _Regs(remaining=remaining, live=live, rp=rp, peak=rp.copy())


def _issue_regs(t: _Tables, regs: _Regs, j: int) -> None:
    """Issue instruction ``j`` (``N`` = nothing): uses, defs, record the peak, dead defs."""
    R = t.reg_width.shape[0] - 1
    u = t.uses[j]
    real_u = u < R
    np.add.at(regs.remaining, u, np.where(real_u, -1, 0))
    kill = real_u & (regs.remaining[u] == 0) & regs.live[u] & ~t.reg_live_out[u]
    regs.live[u[kill]] = False
    regs.rp[:] -= _widths(t, u, kill)
    d = t.defs[j]
    real_d = d < R
    born = real_d & ~regs.live[d]
    regs.live[d[born]] = True
    regs.rp[:] += _widths(t, d, born)
    np.maximum(regs.peak, regs.rp, out=regs.peak)
    dead = real_d & (regs.remaining[d] == 0) & ~t.reg_live_out[d] & regs.live[d]
    regs.live[d[dead]] = False
    regs.rp[:] -= _widths(t, d, dead)


def _kills(t: _Tables, regs: _Regs, rows: np.ndarray) -> np.ndarray:
    """bool[k, U]: the uses of instructions ``rows`` (int[k]) that are last uses now."""
    R = t.reg_width.shape[0] - 1
    u = t.uses[rows]
    return (u < R) & (regs.remaining[u] == 1) & regs.live[u] & ~t.reg_live_out[u]


def _rp_after(t: _Tables, regs: _Regs, rows: np.ndarray) -> np.ndarray:
    """int32[k, F]: the RP recorded if each of ``rows`` (int[k]) issued now (its last uses
    die first, then its defs are born; live-through included)."""
    R = t.reg_width.shape[0] - 1
    u, d = t.uses[rows], t.defs[rows]
    kill = _kills(t, regs, rows)  # [k, U]
    reborn = (d[:, :, None] == np.where(kill, u, -1)[:, None, :]).any(axis=-1)  # [k, V]
    born = (d < R) & (~regs.live[d] | reborn)
    return regs.rp[None, :] - _widths(t, u, kill) + _widths(t, d, born)


def _within_limit(
    t: _Tables, regs: _Regs, cand: np.ndarray, rp_limit: np.ndarray, defer_sinks: bool
) -> np.ndarray:
    """int[k']: the candidates ``cand`` (int[k], ascending) to choose from under the per-file
    ``rp_limit`` (int32[F]), as `list_scheduler._within_limit` chooses them."""
    N = t.valid.shape[0] - 1
    after = _rp_after(t, regs, cand)
    excess = np.maximum(after - rp_limit, 0).sum(axis=1)
    safe = excess == 0
    least = excess == (excess.min() if cand.size else _BIG)
    pool = safe if safe.any() else least
    sink = (t.succ[cand] == N).all(axis=1) & (after > regs.rp[None, :]).any(axis=1)
    rest = pool & ~sink
    return cand[rest if defer_sinks and rest.any() else pool]


# ------------------------------------------------------------------------------ selection
class _Keys(NamedTuple):
    """What the priority keys of `list_scheduler._key_table` read (one list schedule)."""

    cp: np.ndarray  # int32[N]: latency or unit critical path
    succ: np.ndarray  # int32[N]: successor counts
    nid: np.ndarray  # int32[N]: the negated rank (default: the negated original position)


def _key(t: _Tables, regs: _Regs, keys: _Keys, code: int, rows: np.ndarray) -> np.ndarray:
    """int[k]: priority key ``code`` (an index into `PRIORITIES`) of instructions ``rows``."""
    if code == _LUC:
        return _kills(t, regs, rows).sum(axis=1)
    return {_CP: keys.cp, _SUCC: keys.succ, _NID: keys.nid}[code][rows]


def _select(t: _Tables, regs: _Regs, keys: _Keys, codes: Sequence[int], rows: np.ndarray):
    """The lexicographic argmax of the keys ``codes`` over ``rows`` (int[k], ascending): ties
    to the lowest id; ``N`` when ``rows`` is empty."""
    mask = np.ones(rows.shape[0], bool)
    for code in codes:
        if mask.sum() <= 1:
            break
        key = _key(t, regs, keys, code, rows)
        mask &= key == key[mask].max()
    return int(rows[np.argmax(mask)]) if rows.size else t.valid.shape[0] - 1


# ------------------------------------------------------------------------------ list schedule
class _Clock(NamedTuple):
    cycle: int  # the current cycle
    used: int  # instructions issued in it


def _advance_clock(clock: _Clock, earliest: np.ndarray, iw: int) -> _Clock:
    """The cycle and slot count of this step's issue, given the candidates' earliest cycles
    (int[k]): the next cycle once ``iw`` issued, then a stall to the earliest candidate."""
    full = clock.used >= iw
    cyc = clock.cycle + 1 if full else clock.cycle
    used = 0 if full else clock.used
    now = max(cyc, int(earliest.min()) if earliest.size else _BIG)
    return _Clock(cycle=now, used=0 if now > cyc else used)


class _State(NamedTuple):
    """A list schedule in progress (arrays updated in place)."""

    regs: _Regs
    candidate: np.ndarray  # bool[N + 1]: unscheduled with every predecessor scheduled
    preds_left: np.ndarray  # int32[N + 1]: unscheduled predecessors
    earliest: np.ndarray  # int32[N + 1]: earliest issue cycle from scheduled predecessors
    order: np.ndarray  # int32[N]: issue sequence, padding N
    cycles: np.ndarray  # int32[N + 1]: issue cycle per instruction (dummy slot N)


def _init_state(dev: DeviceRegion, t: _Tables) -> _State:
    N = dev.valid.shape[0]
    preds_left = _append(dev.num_preds, 0).astype(np.int32)
    return _State(
        regs=_init_regs(dev, t),
        candidate=t.valid & (preds_left == 0),
        preds_left=preds_left,
        earliest=np.zeros(N + 1, np.int32),
        order=np.full(N, N, np.int32),
        cycles=np.zeros(N + 1, np.int32),
    )


def _issue(t: _Tables, s: _State, k: int, j: int, now: int) -> None:
    """Issue ``j`` (``N``: nothing) at step ``k`` in cycle ``now``; release its successors."""
    N = t.valid.shape[0] - 1
    _issue_regs(t, s.regs, j)
    succ = t.succ[j]
    s.candidate[j] = False
    np.add.at(s.preds_left, succ, -1)
    np.maximum.at(s.earliest, succ, now + t.succ_lat[j])
    free = succ[(succ < N) & (s.preds_left[succ] == 0)]
    s.candidate[free] = t.valid[free]
    s.order[k], s.cycles[j] = j, now


def list_schedule_host(
    dev: DeviceRegion,
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
      A `ListSchedule` of NumPy arrays: order int32[N], cycles int32[N], length, peak
      int32[F], occupancy and rp_cost (int32 scalars).
    """
    codes = _codes(priority)
    iw = _check_issue_width(issue_width)
    t = _tables(dev)
    N = dev.valid.shape[0]
    ident = np.arange(N, dtype=np.int32)
    keys = _Keys(
        cp=np.asarray(dev.cp if latencies else dev.cp_unit, np.int32),
        succ=np.asarray(dev.num_succs, np.int32),
        nid=-(ident if rank is None else np.asarray(rank, np.int32)),
    )
    s, clock = _init_state(dev, t), _Clock(cycle=0, used=0)
    for k in range(int(dev.n)):
        cand = np.flatnonzero(s.candidate)
        if rp_limit is not None:
            cand = _within_limit(t, s.regs, cand, rp_limit, bool(defer_sinks))
        if latencies:
            clock = _advance_clock(clock, s.earliest[cand], iw)
            cand = cand[s.earliest[cand] <= clock.cycle]
            now = clock.cycle
        else:
            now = k
        _issue(t, s, k, _select(t, s.regs, keys, codes, cand), now)
        clock = clock._replace(used=clock.used + 1)
    cycles = np.where(t.valid[:N], s.cycles[:N], 0).astype(np.int32)
    length = cycles.max() + 1 if latencies else dev.n
    return _finish(s.order, cycles, length, s.regs.peak, lut, target)


def _codes(priority) -> list[int]:
    """Priority codes (Python ints) from names or an int array of codes."""
    if isinstance(priority, str) or (
        isinstance(priority, Sequence) and all(isinstance(x, str) for x in priority)
    ):
        return [int(c) for c in priority_codes(priority)]
    return [int(c) for c in np.asarray(priority).reshape(-1)]


def _finish(order, cycles, length, peak, lut, target) -> ListSchedule:
    """A `ListSchedule` of NumPy int32 arrays (occupancy and RP cost as the JAX one has them)."""
    lut = np.asarray(lut)
    peak = np.asarray(peak, np.int32)
    occ = np.int32(occupancy_jax(peak, lut, xp=np))
    tgt = np.min(lut[:, 0]) if target is None else np.int32(target)
    return ListSchedule(
        order=np.asarray(order, np.int32),
        cycles=np.asarray(cycles, np.int32),
        length=np.int32(length),
        peak=peak,
        occupancy=occ,
        rp_cost=np.int32(max(0, int(tgt) - int(occ))),
    )


def positions_host(order: np.ndarray) -> np.ndarray:
    """int32[N]: the position of each instruction in ``order`` (int[N], padding N last)."""
    N = order.shape[0]
    pos = np.zeros(N + 1, np.int32)
    pos[np.asarray(order)] = np.arange(N, dtype=np.int32)
    return pos[:N]


def target_schedule_host(
    dev: DeviceRegion,
    lut: np.ndarray,
    rp_limit: np.ndarray,
    target: int,
    feasible: np.ndarray,
    issue_width: int = 1,
) -> ListSchedule:
    """`list_scheduler.target_schedule` on the host, bit for bit: the best (lowest RP cost,
    then shortest, then first) of the critical-path schedule, ``feasible``'s order first
    (int[N]), and the critical-path schedule with RP-raising sinks deferred, all under
    ``rp_limit`` (int32[F])."""
    N = dev.valid.shape[0]
    ident = np.arange(N, dtype=np.int32)
    variants = (
        (DEFAULT_TARGET, ident, False),
        (("nid",), positions_host(feasible), False),
        (DEFAULT_TARGET, ident, True),
    )
    kw = dict(latencies=True, issue_width=issue_width, target=target, rp_limit=rp_limit)
    every = [
        list_schedule_host(dev, lut, priority=p, rank=rank, defer_sinks=defer, **kw)
        for p, rank, defer in variants
    ]
    cost = np.array([int(x.rp_cost) for x in every])
    length = np.array([int(x.length) for x in every])
    return every[int(np.argmin(np.where(cost == cost.min(), length, _BIG)))]


# ------------------------------------------------------------------------------ given orders
def stall_schedule_host(
    dev: DeviceRegion, order: np.ndarray, issue_width: int = 1
) -> tuple[np.ndarray, np.int32]:
    """`list_scheduler.stall_schedule` on the host, bit for bit: ``order`` (int[N], a
    topological order of the real instructions, then padding N) issued in order with the
    stalls latencies force. Returns (cycles int32[N] (padding 0), length int32)."""
    iw = _check_issue_width(issue_width)
    N = dev.valid.shape[0]
    pred, lat = np.asarray(dev.pred).tolist(), np.asarray(dev.pred_lat).tolist()
    cycles = [0] * (N + 1)
    cycle = used = 0
    for j in np.asarray(order).tolist():
        if j >= N:
            continue  # the dummy slot; the clock stays
        ready = max(
            (cycles[p] + w for p, w in zip(pred[j], lat[j], strict=True) if p < N), default=0
        )
        c = max(cycle + 1 if used >= iw else cycle, ready)
        used = used + 1 if c == cycle else 1
        cycles[j] = cycle = c
    out = np.where(np.asarray(dev.valid), np.asarray(cycles[:N], np.int32), 0).astype(np.int32)
    return out, np.int32(out.max() + 1)


def order_peak_rp_host(dev: DeviceRegion, order: np.ndarray) -> np.ndarray:
    """int32[F]: `list_scheduler.order_peak_rp` on the host: the per-file peak RP of issuing
    ``order`` (int[N], padding N)."""
    t = _tables(dev)
    N = dev.valid.shape[0]
    regs = _init_regs(dev, t)
    for j in np.asarray(order).tolist():
        if j < N:  # the sentinel changes nothing
            _issue_regs(t, regs, j)
    return regs.peak
