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

**Host and device.** `jaxsched.heuristics.host_schedule` runs this scheduler on the host
(NumPy padded regions, nothing to compile: `jaxsched.colony.derive`,
`jaxsched.colony.drivers.engine`),
bit for bit. What is not a step loop is written once, here, over an array namespace ``xp``
(`jax.numpy`, `numpy`, or `PyScalars` for the host loops' Python ints) and called by both:
the clock (`advance_clock`; `in_order_issue`, also `issue_cycles`'s), the priority codes
(`as_codes`), `target_schedule`'s three schedules and its choice (`target_variants`,
`best_variant`), `positions`, the result (`finish`), and the sentinel rows
(`jaxsched.heuristics.tables`). The step loops themselves (the candidates, the keys and the
choice, the RP-limit filter, the register update, issuing) are written twice, for a reason:
here a `lax.fori_loop` of fixed-shape steps evaluates every instruction at every step (N-wide
vectors and scatters, what a jitted, vmapped loop needs), while the host loop keeps Python
lists of the candidates and touches only the registers an issue changes, with each
instruction's effects cached until one of its registers changes. NumPy in the fixed-shape
form would cost tens of NumPy calls on N-wide arrays per step (O(N^2) per schedule, against a
few candidates per step), and `lax` has no ragged lists. Their equality is tested: every
region, priority, mode and issue width of tests/test_heuristics.py (`assert_host_equals`, the
stall schedule and the order's RP on random orders), and the colony's starts in
tests/test_derive.py (real and generated regions, three machines, tight RP limits).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxsched.errors import InputError
from jaxsched.heuristics.tables import BIG, Array, append_row, scatter_set
from jaxsched.machines.model import Machine, occupancy_jax
from jaxsched.problem.padded import DeviceRegion, PaddedShape, padded_shape, stack
from jaxsched.problem.region import Region

__all__ = [
    "DEFAULT_PRIORITY",
    "PRIORITIES",
    "HeuristicError",
    "HostSchedule",
    "ListSchedule",
    "PyScalars",
    "advance_clock",
    "as_codes",
    "best_variant",
    "finish",
    "heuristic_schedule",
    "in_order_issue",
    "issue_cycles",
    "list_schedule",
    "list_schedule_batch",
    "list_schedule_jit",
    "normalize_priority",
    "order_peak_rp",
    "positions",
    "priority_codes",
    "stall_schedule",
    "target_schedule",
    "target_variants",
]

#: Priority names understood by `list_schedule`.
PRIORITIES = ("cp", "luc", "succ", "nid")
#: The RP-aware default of the spec: last-use count, then critical path, then original order.
DEFAULT_PRIORITY = ("luc", "cp", "nid")
#: The latency-first priority of `target_schedule`'s critical-path candidates.
DEFAULT_TARGET = ("cp", "luc", "nid")
#: An array namespace: `numpy`, `jax.numpy`, or `PyScalars` (Python scalars).
Namespace = Any


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


def as_codes(priority: str | Sequence[str] | Array, xp: Namespace = jnp) -> Array:
    """int32[P]: codes from names (`priority_codes`), or an int array of codes validated by
    shape and dtype (traced codes too, with ``xp = jax.numpy``)."""
    if isinstance(priority, str) or (
        isinstance(priority, Sequence) and all(isinstance(x, str) for x in priority)
    ):
        return xp.asarray(priority_codes(priority))
    codes = xp.asarray(priority)
    if codes.ndim != 1 or codes.shape[0] < 1 or not xp.issubdtype(codes.dtype, xp.integer):
        raise HeuristicError(
            f"priority: expected names or int codes of shape [P], got {codes.dtype}{codes.shape}"
        )
    return codes.astype(xp.int32)


def check_issue_width(issue_width: int) -> int:
    """``issue_width`` as an int; raises `HeuristicError` unless it is an integer >= 1."""
    if isinstance(issue_width, bool) or not isinstance(issue_width, int | np.integer):
        raise HeuristicError(f"issue_width {issue_width!r} is not an integer")
    if issue_width < 1:
        raise HeuristicError(f"issue_width {issue_width} must be >= 1")
    return int(issue_width)


# ------------------------------------------------------------------------------ shared rules
class PyScalars:
    """The array namespace of the host loops' scalars (Python ints and bools): the functions
    of `numpy` / `jax.numpy` that the clock rules (`advance_clock`, `in_order_issue`) use.
    A NumPy call per scalar would cost more than the rest of a host step."""

    @staticmethod
    def where(cond: bool, if_true: int, if_false: int) -> int:
        return if_true if cond else if_false

    maximum = staticmethod(max)


def advance_clock(
    cycle: Array, used: Array, first_ready: Array, issue_width: Array, xp: Namespace
) -> tuple[Array, Array]:
    """(cycle of a list schedule's next issue, instructions already issued in it): the next
    cycle once ``issue_width`` issued in ``cycle`` (``used`` issued so far), then a stall to
    ``first_ready`` (the earliest cycle a candidate is ready in; `BIG`: none) when later.
    Scalars (int32[] or Python ints)."""
    full = used >= issue_width
    next_cycle = xp.where(full, cycle + 1, cycle)
    used = xp.where(full, 0, used)
    now = xp.maximum(next_cycle, first_ready)
    return now, xp.where(now > next_cycle, 0, used)


def in_order_issue(
    cycle: Array, used: Array, ready_at: Array, issue_width: Array, xp: Namespace
) -> tuple[Array, Array]:
    """(issue cycle, instructions issued in it, this one included) of the next instruction of
    an order issued in order (`stall_schedule`, `issue_cycles`): the earliest cycle no earlier
    than the previous issue's ``cycle`` (``used`` issued in it) and than ``ready_at`` (its
    incoming latencies) with a free issue slot. Scalars (int32[] or Python ints)."""
    base = xp.where(used >= issue_width, cycle + 1, cycle)
    issue = xp.maximum(base, ready_at)
    return issue, xp.where(issue == cycle, used + 1, 1)


def positions(order: Array, xp: Namespace = jnp) -> Array:
    """int32[N]: the position of each instruction in ``order`` (int[N], padding N last)."""
    N = order.shape[0]
    pos = xp.zeros(N + 1, xp.int32)
    return scatter_set(pos, xp.asarray(order), xp.arange(N, dtype=xp.int32), xp)[:N]


def target_variants(feasible: Array, xp: Namespace = jnp) -> tuple[Array, Array, Array]:
    """The three list schedules of `target_schedule`, as arguments of `list_schedule`:
    (int32[3, P] priority codes, int32[3, N] ranks, bool[3] ``defer_sinks``): critical path
    first; ``feasible``'s order first (int[N]; "nid" follows its positions); critical path
    first with RP-raising sinks deferred."""
    feasible = xp.asarray(feasible)
    cp_first = xp.asarray(priority_codes(DEFAULT_TARGET))
    ident = xp.arange(feasible.shape[0], dtype=xp.int32)
    codes = xp.stack([cp_first, xp.asarray(priority_codes(("nid",))), cp_first])
    ranks = xp.stack([ident, positions(feasible, xp), ident])
    return codes, ranks, xp.asarray([False, False, True])


def best_variant(rp_cost: Array, length: Array, xp: Namespace = jnp) -> Array:
    """int[]: the best of `target_variants`' schedules (``rp_cost``, ``length`` int32[3]):
    the lowest RP cost, then the shortest, then the first."""
    cheapest = rp_cost == rp_cost.min()
    return xp.argmin(xp.where(cheapest, length, BIG))


def finish(
    order: Array,
    cycles: Array,
    length: Array,
    peak: Array,
    lut: Array,
    target: Array | int | None,
    xp: Namespace = jnp,
) -> ListSchedule:
    """A `ListSchedule` of int32 values from a finished schedule: ``order``, ``cycles``
    (int[N]), ``length``, ``peak`` (int[F]), with its occupancy (``lut`` int32[F, T]) and RP
    cost against ``target`` (default: the occupancy at zero pressure)."""
    lut = xp.asarray(lut)
    occ = occupancy_jax(xp.asarray(peak), lut, xp=xp)
    tgt = xp.min(lut[:, 0]) if target is None else xp.int32(target)
    return ListSchedule(
        order=xp.asarray(order, xp.int32),
        cycles=xp.asarray(cycles, xp.int32),
        length=xp.int32(length),
        peak=xp.asarray(peak, xp.int32),
        occupancy=xp.int32(occ),
        rp_cost=xp.int32(xp.maximum(0, tgt - occ)),
    )


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


def _tables(dev: DeviceRegion) -> _Tables:
    """The `_Tables` of one padded region (each field with its sentinel's dummy row)."""
    N = dev.valid.shape[0]
    R = dev.reg_width.shape[0]

    def append(values, fill) -> jax.Array:
        return append_row(values, fill, jnp)

    return _Tables(
        valid=append(dev.valid, False),
        succ=append(dev.succ, N),
        succ_lat=append(dev.succ_lat, 0),
        pred=append(dev.pred, N),
        pred_lat=append(dev.pred_lat, 0),
        uses=append(dev.uses, R),
        defs=append(dev.defs, R),
        reg_file=append(dev.reg_file, 0),
        reg_width=append(dev.reg_width, 0),
        reg_live_out=append(dev.reg_live_out, True),
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
    live = append_row(dev.reg_live_in, False, jnp)
    rp = dev.live_through.astype(jnp.int32) + _per_file(
        t, jnp.arange(R, dtype=jnp.int32), jnp.asarray(dev.reg_live_in), F
    )
    remaining = append_row(dev.reg_num_uses, 0, jnp).astype(jnp.int32)
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
    least = cand & (excess == jnp.min(jnp.where(cand, excess, BIG)))
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
        best = jnp.max(jnp.where(mask, key, -BIG))
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
    now): `advance_clock` to the earliest cycle of ``cand`` (bool[N]); unchanged when not
    ``active``."""
    N = cand.shape[0]
    first_ready = jnp.min(jnp.where(cand, s.earliest[:N], BIG))
    now, used = advance_clock(s.cycle, s.used, first_ready, iw, jnp)
    now = jnp.where(active, now, s.cycle)
    used = jnp.where(active, used, s.used)
    return now, used, cand & (s.earliest[:N] <= now)


def _initial_state(dev: DeviceRegion, t: _Tables) -> _State:
    """Nothing scheduled: the roots free, live-in registers live, cycle 0."""
    N = dev.valid.shape[0]
    return _State(
        regs=_init_regs(dev, t),
        scheduled=jnp.zeros(N + 1, bool),
        preds_left=append_row(dev.num_preds, 0, jnp).astype(jnp.int32),
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
    codes = as_codes(priority)
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
    return finish(s.order, cycles, length, s.regs.peak, lut, target)


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
    shortest, then the earlier of that list (`target_variants`, `best_variant`)."""
    codes, ranks, defer = target_variants(feasible)

    def one(c, rank, d) -> ListSchedule:
        return list_schedule(
            dev, lut, priority=c, latencies=True, issue_width=issue_width, target=target,
            rp_limit=rp_limit, rank=rank, defer_sinks=d,
        )  # fmt: skip

    every = jax.vmap(one)(codes, ranks, defer)
    best = best_variant(every.rp_cost, every.length)
    return jax.tree.map(lambda x: x[best], every)


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
        as_codes(priority),
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
        issue, new_used = in_order_issue(cycle, used, ready_at, iw, jnp)
        cycles = cycles.at[j].set(issue)
        return (
            cycles,
            jnp.where(active, issue, cycle),
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
    est = [0] * n  # earliest cycle from the instructions issued so far
    cycles = np.zeros(n, np.int64)
    cycle = used = 0
    succ = region.successors()
    for j in order:
        cycle, used = in_order_issue(cycle, used, est[j], iw, PyScalars)
        cycles[j] = cycle
        for k, lat in succ[j]:
            est[k] = max(est[k], cycle + lat)
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
@partial(jax.jit, static_argnames=("latencies",))
def _batch_jit(
    dev: DeviceRegion,
    lut: jax.Array,
    target: jax.Array,
    priority: jax.Array,
    issue_width: jax.Array,
    *,
    latencies: bool,
) -> ListSchedule:
    """`list_schedule` over a batch (``dev`` [B, ...]); the priority codes, the target and
    the issue width (int32[]) are traced: machines of one occupancy table shape, and every
    priority, share the compile of a padded shape."""
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
    iw = jnp.int32(check_issue_width(machine.issue_width))
    out: list[HostSchedule | None] = [None] * len(regions)
    groups = [list(range(len(regions)))] if shape else list(_groups(regions, machine).values())
    for idx in groups:
        group = [regions[i] for i in idx]
        count = 1 << (len(group) - 1).bit_length()
        dev, _ = stack([*group, *[group[0]] * (count - len(group))], machine, shape)
        res = jax.device_get(_batch_jit(dev, lut, target, codes, iw, latencies=bool(latencies)))
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
