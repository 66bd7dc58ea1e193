"""A jit-compatible, vmappable list scheduler over one padded region (`DeviceRegion`).

Two modes, one loop of ``N`` steps (N = bucket size; steps ``>= n`` are padding and change
nothing), each step issuing exactly one instruction:

* ``latencies=False`` (the RP pass): ready = all predecessors scheduled; each instruction takes
  one cycle, so ``cycles`` are positions and the length is ``n``.
* ``latencies=True``: a cycle-by-cycle list scheduler. An instruction is ready when its
  predecessors are scheduled and the current cycle has reached its earliest cycle (max over
  incoming edges of ``pred cycle + latency``). At most ``issue_width`` instructions issue per
  cycle; when none is ready the scheduler stalls (jumps to the earliest cycle of a candidate).

Among ready instructions the highest priority wins; a priority is a name or a tuple of names
compared lexicographically, ties always broken by the lowest original id:

* ``"cp"``: critical path to a sink (latency-weighted; edge count when latencies are off);
* ``"luc"``: last-use count, dynamic: live registers the instruction would kill if issued now;
* ``"succ"``: number of successors;
* ``"nid"``: original order (lower id first).

Register pressure follows the liveness model of `jaxsched.problem.region` exactly (uses before
defs, last use kills unless live-out, dead defs occupy their register only at their own
instruction, constant live-through). Sentinels (instruction ``N``, register ``R``) index one
extra dummy slot in every state array, so padding updates are harmless writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxsched.errors import InputError
from jaxsched.machines.model import Machine, occupancy_jax
from jaxsched.problem.padded import DeviceRegion, PaddedShape, padded_shape, stack
from jaxsched.problem.region import Region

__all__ = [
    "DEFAULT_PRIORITY",
    "PRIORITIES",
    "HeuristicError",
    "HostSchedule",
    "ListSchedule",
    "heuristic_schedule",
    "issue_cycles",
    "list_schedule",
    "list_schedule_batch",
    "list_schedule_jit",
    "normalize_priority",
    "order_peak_rp",
    "priority_codes",
    "stall_schedule",
    "target_schedule",
]

#: Priority names understood by `list_schedule`.
PRIORITIES = ("cp", "luc", "succ", "nid")
#: The RP-aware default of the spec: last-use count, then critical path, then original order.
DEFAULT_PRIORITY = ("luc", "cp", "nid")
#: The latency-first priority of `target_schedule`'s critical-path candidates.
DEFAULT_TARGET = ("cp", "luc", "nid")

_BIG = 2**30


class HeuristicError(InputError):
    """Bad input to a heuristic (unknown priority, bad issue width or order shape)."""


class ListSchedule(NamedTuple):
    """A list schedule of one region (add a leading batch axis when vmapped).

    Padding instructions never appear in ``order`` (they are the sentinel ``N``) and have cycle 0.
    """

    order: jax.Array  # int32[N]: instruction ids in issue order; padding = N
    cycles: jax.Array  # int32[N]: issue cycle per original instruction; padding 0
    length: jax.Array  # int32[]: max cycle + 1 (n when latencies are off)
    peak: jax.Array  # int32[F]: peak RP per register file (32-bit units, live-through included)
    occupancy: jax.Array  # int32[]: occupancy of ``peak`` (waves per SIMD)
    rp_cost: jax.Array  # int32[]: max(0, target - occupancy)


class HostSchedule(NamedTuple):
    """A list schedule of one region on the host, trimmed to its ``n`` instructions."""

    order: np.ndarray  # int64[n]: instruction ids in issue order
    cycles: np.ndarray  # int64[n]: issue cycle per instruction
    length: int
    peak: np.ndarray  # int64[F]: peak RP per file (machine order)
    occupancy: int
    rp_cost: int


def normalize_priority(priority: str | Sequence[str]) -> tuple[str, ...]:
    """A priority as a tuple of known names; raises `HeuristicError` naming the bad item."""
    names = (priority,) if isinstance(priority, str) else tuple(priority)
    if not names:
        raise HeuristicError("priority: needs at least one of " + ", ".join(PRIORITIES))
    for name in names:
        if name not in PRIORITIES:
            raise HeuristicError(
                f"priority: unknown name {name!r} in {names!r} (known: {', '.join(PRIORITIES)})"
            )
    return names


def priority_codes(priority: str | Sequence[str]) -> np.ndarray:
    """int32[len(PRIORITIES)]: a priority as key codes (indices into `PRIORITIES`).

    Repeated names are dropped (they cannot break ties) and the tail is padded with ``"nid"``,
    so every priority has the same shape: passing codes as an array to `list_schedule` changes
    the priority without recompiling.
    """
    names = tuple(dict.fromkeys(normalize_priority(priority)))
    names = names + ("nid",) * (len(PRIORITIES) - len(names))
    return np.array([PRIORITIES.index(x) for x in names], np.int32)


def _as_codes(priority) -> jax.Array:
    """Codes from names, or an int array of codes validated by shape and dtype."""
    if isinstance(priority, str) or (
        isinstance(priority, Sequence) and all(isinstance(x, str) for x in priority)
    ):
        return jnp.asarray(priority_codes(priority))
    codes = jnp.asarray(priority)
    if codes.ndim != 1 or codes.shape[0] < 1 or not jnp.issubdtype(codes.dtype, jnp.integer):
        raise HeuristicError(
            f"priority: expected names or int codes of shape [P], got {codes.dtype}{codes.shape}"
        )
    return codes.astype(jnp.int32)


def check_issue_width(issue_width: int) -> int:
    if isinstance(issue_width, bool) or not isinstance(issue_width, int | np.integer):
        raise HeuristicError(f"issue_width {issue_width!r} is not an integer")
    if issue_width < 1:
        raise HeuristicError(f"issue_width {issue_width} must be >= 1")
    return int(issue_width)


# ------------------------------------------------------------------------------ tables
class _Tables(NamedTuple):
    """Constant arrays with a dummy row/slot for the sentinels (N instructions, R registers)."""

    valid: jax.Array  # bool[N + 1]: dummy False
    succ: jax.Array  # int32[N + 1, D]: sentinel N
    succ_lat: jax.Array  # int32[N + 1, D]
    pred: jax.Array  # int32[N + 1, P]: sentinel N
    pred_lat: jax.Array  # int32[N + 1, P]
    uses: jax.Array  # int32[N + 1, U]: sentinel R
    defs: jax.Array  # int32[N + 1, V]: sentinel R
    reg_file: jax.Array  # int32[R + 1]
    reg_width: jax.Array  # int32[R + 1]: dummy 0
    reg_live_out: jax.Array  # bool[R + 1]: dummy True (never killed)


def _append(a: jax.Array, fill) -> jax.Array:
    """``a`` with one extra leading-axis row filled with ``fill``."""
    a = jnp.asarray(a)
    row = jnp.full((1, *a.shape[1:]), fill, a.dtype)
    return jnp.concatenate([a, row], axis=0)


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
    )


# ------------------------------------------------------------------------------ registers
class _Regs(NamedTuple):
    """Register-tracking state."""

    remaining: jax.Array  # int32[R + 1]: unscheduled uses per register
    live: jax.Array  # bool[R + 1]: live now (dummy always False)
    rp: jax.Array  # int32[F]: live width per file, live-through included
    peak: jax.Array  # int32[F]: peak of ``rp`` so far (start included)


def _per_file(t: _Tables, ids: jax.Array, mask: jax.Array, num_files: int) -> jax.Array:
    """int32[F]: total width of registers ``ids`` (int32[K]) where ``mask`` (bool[K]), by file."""
    w = jnp.where(mask, t.reg_width[ids], 0)
    onehot = t.reg_file[ids][:, None] == jnp.arange(num_files, dtype=jnp.int32)[None, :]
    return jnp.sum(jnp.where(onehot, w[:, None], 0), axis=0, dtype=jnp.int32)


def _init_regs(dev: DeviceRegion, t: _Tables) -> _Regs:
    F = dev.live_through.shape[0]
    R = dev.reg_width.shape[0]
    live = _append(dev.reg_live_in, False)
    rp = dev.live_through.astype(jnp.int32) + _per_file(
        t, jnp.arange(R, dtype=jnp.int32), jnp.asarray(dev.reg_live_in), F
    )
    remaining = _append(dev.reg_num_uses, 0).astype(jnp.int32)
    return _Regs(remaining=remaining, live=live, rp=rp, peak=rp)


def _issue_regs(t: _Tables, regs: _Regs, j: jax.Array) -> _Regs:
    """Issue instruction ``j`` (``N`` = nothing): uses, defs, record the peak, dead defs."""
    R = t.reg_width.shape[0] - 1
    F = regs.rp.shape[0]
    u = t.uses[j]
    real_u = u < R
    remaining = regs.remaining.at[u].add(jnp.where(real_u, -1, 0))
    kill = real_u & (remaining[u] == 0) & regs.live[u] & ~t.reg_live_out[u]
    live = regs.live.at[jnp.where(kill, u, R)].set(False)
    rp = regs.rp - _per_file(t, u, kill, F)

    d = t.defs[j]
    real_d = d < R
    born = real_d & ~live[d]
    live = live.at[jnp.where(born, d, R)].set(True).at[R].set(False)
    rp = rp + _per_file(t, d, born, F)
    peak = jnp.maximum(regs.peak, rp)

    dead = real_d & (remaining[d] == 0) & ~t.reg_live_out[d] & live[d]
    live = live.at[jnp.where(dead, d, R)].set(False)
    rp = rp - _per_file(t, d, dead, F)
    return _Regs(remaining=remaining, live=live, rp=rp, peak=peak)


def _last_use_count(t: _Tables, regs: _Regs, n_rows: int) -> jax.Array:
    """int32[n_rows]: live registers each instruction would kill if issued now."""
    R = t.reg_width.shape[0] - 1
    u = t.uses[:n_rows]
    kills = (u < R) & (regs.remaining[u] == 1) & regs.live[u] & ~t.reg_live_out[u]
    return jnp.sum(kills, axis=1, dtype=jnp.int32)


def _rp_after(t: _Tables, regs: _Regs, n_rows: int) -> jax.Array:
    """int32[n_rows, F]: the RP recorded if each instruction issued now (its last uses die
    first, then its defs are born; live-through included)."""
    R = t.reg_width.shape[0] - 1
    files = jnp.arange(regs.rp.shape[0], dtype=jnp.int32)
    u, d = t.uses[:n_rows], t.defs[:n_rows]
    kill = (u < R) & (regs.remaining[u] == 1) & regs.live[u] & ~t.reg_live_out[u]  # [n, U]
    reborn = (d[:, :, None] == jnp.where(kill, u, -1)[:, None, :]).any(axis=-1)  # [n, V]
    born = (d < R) & (~regs.live[d] | reborn)

    def width(ids: jax.Array, mask: jax.Array) -> jax.Array:  # [n, K] -> [n, F]
        w = jnp.where(mask, t.reg_width[ids], 0)
        onehot = t.reg_file[ids][..., None] == files
        return jnp.sum(jnp.where(onehot, w[..., None], 0), axis=1, dtype=jnp.int32)

    return regs.rp[None, :] - width(u, kill) + width(d, born)


def _within_limit(
    t: _Tables, regs: _Regs, cand: jax.Array, rp_limit: jax.Array, defer_sinks: jax.Array
) -> jax.Array:
    """bool[N]: the candidates to choose from under a per-file RP limit: those whose issue
    keeps the RP within it; if none does, those that exceed it least (summed over files).

    With ``defer_sinks`` (bool[]), sinks that raise the RP (no successor, so issuing one early
    hides no latency, and its values stay live: e.g. constants materialised for a loop) come
    after every other candidate, even one not ready yet: filling stall cycles with them can
    leave too few registers for the rest of the region."""
    N = cand.shape[0]
    after = _rp_after(t, regs, N)
    excess = jnp.maximum(after - rp_limit, 0).sum(axis=1)
    safe = cand & (excess == 0)
    least = cand & (excess == jnp.min(jnp.where(cand, excess, _BIG)))
    pool = jnp.where(safe.any(), safe, least)
    sink = (t.succ[:N] == N).all(axis=1) & (after > regs.rp[None, :]).any(axis=1)
    rest = pool & ~sink
    return jnp.where(defer_sinks & rest.any(), rest, pool)


# ------------------------------------------------------------------------------ selection
def _select(ready: jax.Array, keys: Sequence[jax.Array]) -> jax.Array:
    """Lexicographic argmax of ``keys`` (each int32[N]) over ``ready`` (bool[N]).

    Ties go to the lowest id; returns ``N`` when nothing is ready.
    """
    N = ready.shape[0]
    mask = ready
    for key in keys:
        best = jnp.max(jnp.where(mask, key, -_BIG))
        mask = mask & (key == best)
    first = jnp.argmax(mask).astype(jnp.int32)
    return jnp.where(jnp.any(mask), first, N)


def _key_table(
    dev: DeviceRegion, t: _Tables, regs: _Regs, latencies: bool, rank: jax.Array | None
) -> jax.Array:
    """int32[len(PRIORITIES), N]: every priority key now (row order of `PRIORITIES`); "nid"
    is the negated ``rank`` (default: the original position)."""
    N = dev.valid.shape[0]
    cp = jnp.asarray(dev.cp if latencies else dev.cp_unit, jnp.int32)
    luc = _last_use_count(t, regs, N)
    succ = jnp.asarray(dev.num_succs, jnp.int32)
    nid = -(jnp.arange(N, dtype=jnp.int32) if rank is None else jnp.asarray(rank, jnp.int32))
    return jnp.stack([cp, luc, succ, nid])


# ------------------------------------------------------------------------------ list schedule
class _State(NamedTuple):
    regs: _Regs
    scheduled: jax.Array  # bool[N + 1]
    preds_left: jax.Array  # int32[N + 1]: unscheduled predecessors
    earliest: jax.Array  # int32[N + 1]: earliest issue cycle from scheduled predecessors
    order: jax.Array  # int32[N]: issue sequence, padding N
    cycles: jax.Array  # int32[N + 1]: issue cycle per instruction (dummy slot N)
    cycle: jax.Array  # int32[]: current cycle
    used: jax.Array  # int32[]: instructions issued in ``cycle``


def _advance_clock(
    s: _State, cand: jax.Array, active: jax.Array, iw
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(cycle of this step's issue, instructions issued in it before this one, bool[N] ready
    now): the next cycle once ``iw`` issued, then a stall to the earliest candidate's cycle
    when none of ``cand`` (bool[N]) is ready; unchanged when not ``active``."""
    N = cand.shape[0]
    full = s.used >= iw
    cyc = jnp.where(full, s.cycle + 1, s.cycle)
    used = jnp.where(full, 0, s.used)
    now = jnp.maximum(cyc, jnp.min(jnp.where(cand, s.earliest[:N], _BIG)))
    used = jnp.where(now > cyc, 0, used)
    now = jnp.where(active, now, s.cycle)
    used = jnp.where(active, used, s.used)
    return now, used, cand & (s.earliest[:N] <= now)


def _initial_state(dev: DeviceRegion, t: _Tables) -> _State:
    """Nothing scheduled: the roots free, live-in registers live, cycle 0."""
    N = dev.valid.shape[0]
    return _State(
        regs=_init_regs(dev, t),
        scheduled=jnp.zeros(N + 1, bool),
        preds_left=_append(dev.num_preds, 0).astype(jnp.int32),
        earliest=jnp.zeros(N + 1, jnp.int32),
        order=jnp.full(N, N, jnp.int32),
        cycles=jnp.zeros(N + 1, jnp.int32),
        cycle=jnp.int32(0),
        used=jnp.int32(0),
    )


def _issue(
    t: _Tables, s: _State, chosen: jax.Array, step: jax.Array, now: jax.Array, used: jax.Array
) -> _State:
    """Issue ``chosen`` (int32[]; N: nothing) at position ``step`` and cycle ``now`` (``used``
    instructions already issued in it): its registers, its successors' counts and earliest
    cycles, the order."""
    succ = t.succ[chosen]
    return _State(
        regs=_issue_regs(t, s.regs, chosen),
        scheduled=s.scheduled.at[chosen].set(True),
        preds_left=s.preds_left.at[succ].add(-1),
        earliest=s.earliest.at[succ].max(now + t.succ_lat[chosen]),
        order=s.order.at[step].set(chosen),
        cycles=s.cycles.at[chosen].set(now),
        cycle=jnp.asarray(now, jnp.int32),
        used=used + 1,
    )


def list_schedule(
    dev: DeviceRegion,
    lut: jax.Array,
    *,
    priority: str | Sequence[str] = DEFAULT_PRIORITY,
    latencies: bool,
    issue_width: int = 1,
    target: jax.Array | int | None = None,
    rp_limit: jax.Array | None = None,
    rank: jax.Array | None = None,
    defer_sinks: jax.Array | bool = False,
) -> ListSchedule:
    """List-schedule one padded region (traceable: use under `jit`, `vmap` over a batch).

    Args:
      dev: one `DeviceRegion` (no batch axis), N instructions padded, R registers, F files.
      lut: int32[F, T] occupancy table (`Machine.occupancy_lut`).
      priority: a name of `PRIORITIES`, a tuple of names (lexicographic), or int32[P] codes
        from `priority_codes` (an array: a new priority needs no recompile).
      latencies: static; False = RP pass (cycles are positions), True = cycle-by-cycle with
        latencies, stalls and ``issue_width``.
      issue_width: instructions per cycle (latency mode only; an int or a traced int32[]).
      target: int32[] target occupancy for ``rp_cost``; default the occupancy at zero
        pressure (``min(lut[:, 0])``).
      rp_limit: int32[F] per-file RP limit (e.g. `jaxsched.machines.rp_limits` of an RP cost
        target), or None. With a limit the scheduler chooses, by the priority, among the
        candidates whose issue keeps the RP within it, stalling for one that is not ready yet
        when no ready candidate does; when none does, among those exceeding it least. This is
        the latency scheduler of production compilers under a register-pressure target.
      rank: int32[N] the order "nid" follows (lower first; default the original order), e.g.
        the positions of another schedule, which "nid" first then follows.
      defer_sinks: bool[] (traced or not); with ``rp_limit``, candidates without successors
        that raise the RP go after every other candidate (see `_within_limit`).

    Returns:
      A `ListSchedule`.
    """
    codes = _as_codes(priority)
    iw = issue_width if isinstance(issue_width, jax.Array) else check_issue_width(issue_width)
    t = _tables(dev)
    N = dev.valid.shape[0]
    n = jnp.asarray(dev.n, jnp.int32)

    def step(k: jax.Array, s: _State) -> _State:
        active = k < n
        cand = t.valid[:N] & ~s.scheduled[:N] & (s.preds_left[:N] == 0)
        if rp_limit is not None:
            cand = _within_limit(t, s.regs, cand, rp_limit, jnp.asarray(defer_sinks))
        if latencies:
            now, used, ready = _advance_clock(s, cand, active, iw)
        else:
            now, used, ready = k, s.used, cand
        table = _key_table(dev, t, s.regs, latencies, rank)
        keys = [table[codes[p]] for p in range(codes.shape[0])]
        chosen = jnp.where(active, _select(ready, keys), N)
        return _issue(t, s, chosen, k, now, used)

    s = lax.fori_loop(0, N, step, _initial_state(dev, t))
    cycles = jnp.where(t.valid[:N], s.cycles[:N], 0)
    length = jnp.max(cycles) + 1 if latencies else n
    return _finish(s.order, cycles, length, s.regs.peak, lut, target)


def positions(order: jax.Array) -> jax.Array:
    """int32[N]: the position of each instruction in ``order`` (int32[N], padding N last)."""
    N = order.shape[0]
    return jnp.zeros(N + 1, jnp.int32).at[order].set(jnp.arange(N, dtype=jnp.int32))[:N]


def target_schedule(
    dev: DeviceRegion,
    lut: jax.Array,
    rp_limit: jax.Array,
    target: jax.Array,
    feasible: jax.Array,
    issue_width: jax.Array | int = 1,
) -> ListSchedule:
    """The best of three latency list schedules under ``rp_limit`` (int32[F]), run as one
    vmapped loop: critical path first; ``feasible``'s order first (int32[N]: an order meeting
    the limit, e.g. the RP pass's best) with later instructions filling its stalls while they
    keep the RP within the limit; and critical path first with RP-raising sinks deferred
    (``defer_sinks``). Best = lowest RP cost (``target``: the occupancy of cost 0), then
    shortest, then the earlier of that list."""
    N = dev.valid.shape[0]
    codes = jnp.stack([jnp.asarray(priority_codes(p)) for p in (DEFAULT_TARGET, ("nid",))])
    codes = codes[jnp.array([0, 1, 0])]
    ident = jnp.arange(N, dtype=jnp.int32)
    ranks = jnp.stack([ident, positions(feasible), ident])
    defer = jnp.array([False, False, True])

    def one(c, rank, d) -> ListSchedule:
        return list_schedule(
            dev, lut, priority=c, latencies=True, issue_width=issue_width, target=target,
            rp_limit=rp_limit, rank=rank, defer_sinks=d,
        )  # fmt: skip

    every = jax.vmap(one)(codes, ranks, defer)
    cheapest = every.rp_cost == jnp.min(every.rp_cost)
    best = jnp.argmin(jnp.where(cheapest, every.length, _BIG))
    return jax.tree.map(lambda x: x[best], every)


def _finish(order, cycles, length, peak, lut, target) -> ListSchedule:
    lut = jnp.asarray(lut)
    occ = occupancy_jax(peak, lut)
    tgt = jnp.min(lut[:, 0]) if target is None else jnp.asarray(target, jnp.int32)
    return ListSchedule(
        order=order,
        cycles=cycles.astype(jnp.int32),
        length=jnp.asarray(length, jnp.int32),
        peak=peak,
        occupancy=occ.astype(jnp.int32),
        rp_cost=jnp.maximum(0, tgt - occ).astype(jnp.int32),
    )


@partial(jax.jit, static_argnames=("latencies", "issue_width"))
def _list_schedule_jit(dev, lut, codes, target, *, latencies, issue_width) -> ListSchedule:
    return list_schedule(
        dev, lut, priority=codes, latencies=latencies, issue_width=issue_width, target=target
    )


def list_schedule_jit(
    dev: DeviceRegion,
    lut: jax.Array,
    *,
    priority: str | Sequence[str] | jax.Array = DEFAULT_PRIORITY,
    latencies: bool,
    issue_width: int = 1,
    target: jax.Array | int | None = None,
) -> ListSchedule:
    """`list_schedule` under `jit`; the priority travels as codes (one compile for all)."""
    lut = jnp.asarray(lut)
    tgt = jnp.min(lut[:, 0]) if target is None else jnp.asarray(target, jnp.int32)
    return _list_schedule_jit(
        dev,
        lut,
        _as_codes(priority),
        tgt,
        latencies=bool(latencies),
        issue_width=check_issue_width(issue_width),
    )


# ------------------------------------------------------------------------------ given orders
def stall_schedule(
    dev: DeviceRegion, order: jax.Array, issue_width: int = 1
) -> tuple[jax.Array, jax.Array]:
    """Pass 2's starting schedule: ``order`` issued in order, with the stalls latencies force.

    Each instruction issues at the earliest cycle that is no earlier than the previous one's,
    satisfies every incoming edge's latency and has a free issue slot.

    Args:
      dev: one `DeviceRegion`.
      order: int32[N]: a topological order of the real instructions, then padding ``N``.
      issue_width: instructions per cycle (an int, or a traced int32[]).

    Returns:
      ``(cycles int32[N] per instruction (padding 0), length int32[])``.
    """
    iw = issue_width if isinstance(issue_width, jax.Array) else check_issue_width(issue_width)
    t = _tables(dev)
    N = dev.valid.shape[0]
    order = jnp.asarray(order, jnp.int32)

    def step(k, carry):
        cycles, cycle, used = carry
        j = order[k]
        active = j < N
        p = t.pred[j]
        ready_at = jnp.max(jnp.where(p < N, cycles[p] + t.pred_lat[j], 0))
        base = jnp.where(used >= iw, cycle + 1, cycle)
        c = jnp.maximum(base, ready_at)
        new_used = jnp.where(c == cycle, used + 1, 1)
        cycles = cycles.at[j].set(c)
        return (
            cycles,
            jnp.where(active, c, cycle),
            jnp.where(active, new_used, used),
        )

    init = (jnp.zeros(N + 1, jnp.int32), jnp.int32(0), jnp.int32(0))
    cycles, _, _ = lax.fori_loop(0, N, step, init)
    cycles = jnp.where(t.valid[:N], cycles[:N], 0)
    return cycles, jnp.max(cycles) + 1


def issue_cycles(
    region: Region, order: Sequence[int] | np.ndarray, issue_width: int = 1
) -> np.ndarray:
    """int64[n]: `stall_schedule` on the host: each instruction of ``order`` (a topological order
    of the region) at the earliest cycle no earlier than the previous one's that meets every
    incoming latency and has a free issue slot. No schedule issuing in this order is shorter."""
    iw = check_issue_width(issue_width)
    n = len(region)
    est = np.zeros(n, np.int64)
    cycles = np.zeros(n, np.int64)
    slot = 0  # next free issue slot: cycle * issue_width + instructions already in that cycle
    succ = region.successors()
    for j in order:
        t = max(slot // iw, int(est[j]))
        slot = max(slot, t * iw) + 1
        cycles[j] = t
        for k, lat in succ[j]:
            est[k] = max(est[k], t + lat)
    return cycles


def order_peak_rp(dev: DeviceRegion, order: jax.Array) -> jax.Array:
    """int32[F]: per-file peak RP of issuing ``order`` (int32[N], padding ``N``).

    Only the sequence matters (latencies and stalls do not change RP).
    """
    t = _tables(dev)
    N = dev.valid.shape[0]
    order = jnp.asarray(order, jnp.int32)

    def step(k, regs):
        return _issue_regs(t, regs, order[k])

    return lax.fori_loop(0, N, step, _init_regs(dev, t)).peak


# ------------------------------------------------------------------------------ host side
@partial(jax.jit, static_argnames=("latencies", "issue_width"))
def _batch_jit(
    dev: DeviceRegion,
    lut: jax.Array,
    target: jax.Array,
    priority: jax.Array,
    *,
    latencies: bool,
    issue_width: int,
) -> ListSchedule:
    return jax.vmap(
        lambda d: list_schedule(
            d, lut, priority=priority, latencies=latencies, issue_width=issue_width, target=target
        )
    )(dev)


def _groups(regions: Sequence[Region], machine: Machine) -> dict[int, list[int]]:
    """Region indices grouped by instruction bucket."""
    out: dict[int, list[int]] = {}
    for i, r in enumerate(regions):
        out.setdefault(padded_shape(r, machine).n, []).append(i)
    return out


def list_schedule_batch(
    regions: Sequence[Region],
    machine: Machine,
    *,
    priority: str | Sequence[str] = DEFAULT_PRIORITY,
    latencies: bool = True,
    shape: PaddedShape | None = None,
) -> list[HostSchedule]:
    """List-schedule many regions: grouped by bucket, padded, stacked and `vmap`ped under one
    `jit` per shape (the batch is padded to a power of two to limit recompiles).

    ``shape``: pad every region to this one shape instead (one batch, one compile; it must
    hold every region, e.g. `jaxsched.problem.padded.common_shape`).

    Returns one `HostSchedule` per region, in input order.
    """
    codes = jnp.asarray(priority_codes(priority))
    if not regions:
        return []
    lut = jnp.asarray(machine.occupancy_lut)
    target = jnp.int32(machine.target_occupancy)
    out: list[HostSchedule | None] = [None] * len(regions)
    groups = [list(range(len(regions)))] if shape else list(_groups(regions, machine).values())
    for idx in groups:
        group = [regions[i] for i in idx]
        count = 1 << (len(group) - 1).bit_length()
        dev, _ = stack([*group, *[group[0]] * (count - len(group))], machine, shape)
        res = jax.device_get(
            _batch_jit(
                dev,
                lut,
                target,
                codes,
                latencies=bool(latencies),
                issue_width=machine.issue_width,
            )
        )
        for b, i in enumerate(idx):
            n = len(regions[i])
            out[i] = HostSchedule(
                order=np.asarray(res.order[b, :n], np.int64),
                cycles=np.asarray(res.cycles[b, :n], np.int64),
                length=int(res.length[b]),
                peak=np.asarray(res.peak[b], np.int64),
                occupancy=int(res.occupancy[b]),
                rp_cost=int(res.rp_cost[b]),
            )
    return out  # type: ignore[return-value]


def heuristic_schedule(
    region: Region,
    machine: Machine,
    *,
    priority: str | Sequence[str] = DEFAULT_PRIORITY,
    latencies: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """One region's list schedule on the host: ``(cycles int64[n], order int64[n])``."""
    s = list_schedule_batch([region], machine, priority=priority, latencies=latencies)[0]
    return s.cycles, s.order
