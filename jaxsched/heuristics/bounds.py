"""Lower bounds on schedule length and register pressure (host and JAX versions agree).

The padded forms are written once over an array namespace where the computation allows it:
the RP bound (`rp_peak_lower_bound_host`, `rp_peak_lower_bound_jax`) and the length bound's
anchor formula (`_anchor_bounds`, also `length_lower_bound`'s). The heads are not: the host
takes the instructions in a topological order (a work list, `_padded_head_times`), a
fixed-shape `lax` loop relaxes every edge until nothing changes (`head_times_jax`);
tests/test_bounds.py and tests/test_derive.py compare the two.

**Length** (latency mode; every schedule has ``length = max cycle + 1``). With ``head[i]`` the
longest latency-weighted path from any source to ``i`` (its earliest possible cycle) and
``tail[i]`` the longest path from ``i`` to any sink (`Region.critical_path`), every set ``S`` of
instructions with ``head >= a`` and ``tail >= b`` issues at cycles ``>= a``, needs
``ceil(|S| / issue_width)`` distinct cycles, and its last member still has ``b`` cycles of path
after it, so ``length >= a + ceil(|S| / issue_width) + b``. The bound is the maximum over
``a`` in the heads and ``b`` in the tails (a Rim-Jain / Langevin-Cerny style relaxation). It
includes ``critical path + 1`` (``S`` = one instruction) and ``ceil(n / issue_width)``
(``a = b = 0``). Cost O(n^2) time; for each anchor ``a`` one prefix sum over the instructions
sorted by tail.

**Register pressure** (per file; live-through included). Under the liveness model of
`jaxsched.problem.region` (uses are processed before defs, so a last use and a def of one
instruction are *not* live together) these points are certain in every order:

* the start: live-in registers;
* the end: registers live at the end in every order (live-in and live-out, live-in and never
  used, or defined and live-out);
* just before instruction ``j``: its uses that are live-in or defined by a direct predecessor
  (j's pending use keeps them alive), plus the always-live registers;
* just after ``j`` (before dead defs drop): its defs, its uses from the line above that are
  live-out or used by a direct successor, plus the always-live registers.

"Always-live": live-in and (live-out or never used). The RP cost lower bound is the machine's
RP cost of these peaks (occupancy is non-increasing in RP).
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxsched.heuristics.list_scheduler import check_issue_width
from jaxsched.heuristics.tables import Array, append_row, scatter_set
from jaxsched.machines.model import Machine
from jaxsched.problem.padded import DeviceRegion
from jaxsched.problem.region import Region

__all__ = [
    "head_times",
    "head_times_jax",
    "length_lower_bound",
    "length_lower_bound_at",
    "length_lower_bound_host",
    "length_lower_bound_jax",
    "rp_lower_bound",
    "rp_peak_lower_bound_host",
    "rp_peak_lower_bound_jax",
    "simple_length_lower_bound",
]


# ------------------------------------------------------------------------------ length, host
def head_times(region: Region) -> np.ndarray:
    """int64[n]: longest latency-weighted path from any source to each instruction (cycles)."""
    head = np.zeros(len(region), dtype=np.int64)
    succ = region.successors()
    for i in region.topological_order():
        for j, lat in succ[i]:
            head[j] = max(head[j], head[i] + lat)
    return head


def simple_length_lower_bound(region: Region, machine: Machine) -> int:
    """``max(critical path + 1, ceil(n / issue_width))`` (cycles)."""
    n = len(region)
    return max(region.critical_path_length() + 1, math.ceil(n / machine.issue_width))


def _anchor_bounds(
    anchors: Array, tail: Array, head: Array, valid: Array, issue_width: Array, xp: ModuleType
) -> Array:
    """int[A]: the length bound of each anchor ``a`` (int[A]): ``a + max_k (q_(k) +
    ceil(c_a(k) / issue_width))`` (see the module docstring) over the instructions sorted by
    tail, longest first (``tail`` q, ``head`` and ``valid`` bool, each [M], in that order):
    ``c_a(k)`` counts the valid ones among the first k + 1 whose head is at least ``a`` (none:
    no term). Written once over ``xp`` for `length_lower_bound` and its padded forms."""
    count = xp.cumsum(valid[None, :] & (head[None, :] >= anchors[:, None]), axis=1, dtype=xp.int32)
    val = xp.where(count >= 1, tail[None, :] + (count + issue_width - 1) // issue_width, 0)
    return anchors + val.max(axis=1)


def _pair_bound(head: np.ndarray, tail: np.ndarray, iw: int, chunk_cells: int = 1 << 22) -> int:
    """max over anchors a in head of a + max_k (q_(k) + ceil(c_a(k) / iw)) (see module doc;
    `_anchor_bounds`, ``chunk_cells // n`` anchors at a time)."""
    n = len(head)
    by_tail = np.argsort(-tail, kind="stable")
    q, r, valid = tail[by_tail], head[by_tail], np.ones(n, bool)
    anchors = np.unique(head)
    step = max(1, chunk_cells // max(n, 1))
    best = 0
    for s in range(0, len(anchors), step):
        a = anchors[s : s + step]
        best = max(best, int(_anchor_bounds(a, q, r, valid, iw, np).max()))
    return best


def length_lower_bound(region: Region, machine: Machine) -> int:
    """A schedule-length lower bound (cycles) for the latency pass; see the module docstring.

    At least `simple_length_lower_bound`.
    """
    iw = machine.issue_width
    head = head_times(region)
    tail = region.critical_path().astype(np.int64)
    return max(_pair_bound(head, tail, iw), simple_length_lower_bound(region, machine))


class _Span(NamedTuple):
    """A register's share of a file's register-time (see `_spans`)."""

    width: int  # 32-bit units
    life: int  # cycles it is live, at least
    start: int  # its def's head: it is born no earlier (cycles; windowed spans only)
    end: int  # the smallest tail of its users: it dies this many cycles before the end, at least


def _spans(region: Region) -> tuple[dict[str, _Span], set[str], set[str]]:
    """(each register's span when it is live for a while, the registers live during the
    whole schedule, the *windowed* registers), from the liveness model and the edges alone.
    Minimum lifetimes:

    * defined once, used: live from its def's cycle until its last use, at least the longest
      direct def -> user edge latency; if not live-in or live-out, it is *windowed*: born no
      earlier than its def's head, dead at least its users' smallest tail before the end;
    * defined once, live-out: from its def until the end: at least its def's tail + 1;
    * live-in, used, not live-out: from the start until its last use: at least the users' heads;
    * live-in and live-out (or never used): the whole schedule.
    Registers defined more than once get no span (which def comes first depends on the
    order), nor do dead defs (live at their own instruction only).
    """
    head, tail = head_times(region), region.critical_path()
    defs: dict[str, list[int]] = {}
    users: dict[str, list[int]] = {}
    for i, inst in enumerate(region.instructions):
        for r in inst.defs:
            defs.setdefault(r, []).append(i)
        for r in inst.uses:
            users.setdefault(r, []).append(i)
    lat = {(e.src, e.dst): e.latency for e in region.edges}
    live_in, live_out = set(region.live_in), set(region.live_out)
    width = {r: reg.width for r, reg in region.registers.items()}
    spans: dict[str, _Span] = {}
    always = {r for r in live_in if r in live_out or r not in users}
    for r, ds in defs.items():
        if len(ds) != 1 or r in live_in:
            continue
        if r in live_out:
            spans[r] = _Span(width=width[r], life=int(tail[ds[0]]) + 1, start=0, end=0)
        elif r in users:
            life = max(lat.get((ds[0], u), 0) for u in users[r])
            end = min(int(tail[u]) for u in users[r])
            spans[r] = _Span(width=width[r], life=life, start=int(head[ds[0]]), end=end)
    for r in live_in - always - set(defs):
        spans[r] = _Span(width=width[r], life=max(int(head[u]) for u in users[r]), start=0, end=0)
    windowed = {r for r in spans if r not in live_out and r not in live_in and r in users}
    return spans, always, windowed


def _packed_length(spans: list[_Span], capacity: int, window: bool) -> int:
    """Cycles that ``spans`` need in ``capacity`` registers: the area bound
    ``ceil(sum(width * life) / capacity)`` and, for each width w, the slot bound
    ``ceil(sum(life of spans at least w wide) / (capacity // w))``. With ``window`` each
    bound adds ``min start + min end + 1`` over its spans: every span lies in the cycles
    ``[min start, length - 1 - min end)``, since a register dies at its last use's cycle and
    that use has at least its tail of cycles after it."""
    groups = [(spans, True, capacity)] + [
        ([x for x in spans if x.width >= w], False, capacity // w)
        for w in {x.width for x in spans if x.life > 0 and x.width <= capacity}
    ]
    best = 0
    for group, area, room in groups:
        group = [x for x in group if x.life > 0]
        if not group or room <= 0:
            continue
        time = sum((x.width if area else 1) * x.life for x in group)
        pad = min(x.start for x in group) + min(x.end for x in group) + 1 if window else 0
        best = max(best, pad + -(-time // room))
    return best


def length_lower_bound_at(region: Region, machine: Machine, occupancy: int) -> int:
    """A length lower bound (cycles) for schedules reaching ``occupancy``: at least
    `length_lower_bound`, and, per register file, register-time arguments (`_packed_length`).
    Every cycle holds at most the file's RP limit at that occupancy; the always-live registers
    and the live-through pressure take their share of every cycle, leaving ``capacity``; each
    other register holds its width for at least its minimum lifetime (`_spans`). So
    ``length >= sum(width * lifetime) / capacity`` (area), and, for each width ``w``, at most
    ``capacity // w`` registers at least ``w`` wide are live at once, so
    ``length >= sum(lifetime of those registers) / (capacity // w)`` (slots: tighter when
    wide values do not pack, e.g. 4-wide loads into 14 free registers fill only 12). Over the
    windowed registers alone, both also add the cycles before the earliest birth and after
    the latest death that the dependences force. Loads that must wait for their users while
    few registers are free make these bounds far tighter than the latency bound (e.g. 36
    128-bit loads of 80 cycles at occupancy 10)."""
    bound = length_lower_bound(region, machine)
    spans, always, windowed = _spans(region)
    for f, rf in enumerate(machine.files):
        limits = [
            rp
            for rp in range(machine.occupancy_lut.shape[1] - 1)
            if machine.occupancy_lut[f, rp] >= occupancy
        ]
        if not limits or machine.occupancy_lut[f, -1] >= occupancy:
            continue  # the file never limits this occupancy
        regs = {r: reg for r, reg in region.registers.items() if reg.file == rf.name}
        fixed = sum(reg.width for r, reg in regs.items() if r in always)
        capacity = max(limits) - fixed - region.live_through.get(rf.name, 0)
        if capacity <= 0:
            continue
        mine = [spans[r] for r in regs if r in spans]
        bound = max(bound, _packed_length(mine, capacity, window=False))
        inner = [spans[r] for r in regs if r in windowed]
        bound = max(bound, _packed_length(inner, capacity, window=True))
    return int(bound)


# ------------------------------------------------------------------------------ length, padded
def _padded_head_times(dev: DeviceRegion) -> np.ndarray:
    """int64[n]: `head_times` of a padded region (NumPy ``dev``), in a topological order of
    its edges (Kahn)."""
    n, N = int(dev.n), dev.valid.shape[0]
    succ, lat = np.asarray(dev.succ[:n]).tolist(), np.asarray(dev.succ_lat[:n]).tolist()
    left = np.asarray(dev.num_preds[:n]).tolist()
    head = [0] * n
    todo = [i for i in range(n) if left[i] == 0]
    while todo:
        i = todo.pop()
        for j, w in zip(succ[i], lat[i], strict=True):
            if j < N:
                head[j] = max(head[j], head[i] + w)
                left[j] -= 1
                if left[j] == 0:
                    todo.append(j)
    return np.asarray(head, np.int64)


def length_lower_bound_host(dev: DeviceRegion, issue_width: int = 1) -> np.int32:
    """int32: `length_lower_bound_jax` of one padded region on the host (NumPy ``dev``, no
    batch axis), equal to it (and to `length_lower_bound` of the region)."""
    issue_width = check_issue_width(issue_width)
    n = int(dev.n)
    tail = np.asarray(dev.cp[:n], np.int64)
    simple = max(int(tail.max(initial=0)) + 1, -(-n // issue_width))
    return np.int32(max(_pair_bound(_padded_head_times(dev), tail, issue_width), simple))


# ------------------------------------------------------------------------------ length, JAX
def head_times_jax(dev: DeviceRegion) -> jax.Array:
    """int32[N]: heads by relaxation to a fixed point (at most N rounds); padding 0."""
    N = dev.valid.shape[0]
    pred = jnp.asarray(dev.pred)
    lat = jnp.asarray(dev.pred_lat, jnp.int32)
    real = pred < N

    def relax(head: jax.Array) -> jax.Array:
        ext = jnp.concatenate([head, jnp.zeros(1, jnp.int32)])
        return jnp.max(jnp.where(real, ext[pred] + lat, 0), axis=1)

    def cond(c):
        head, prev, k = c
        return (k == 0) | (jnp.any(head != prev) & (k <= N))

    def body(c):
        head, _, k = c
        return relax(head), head, k + 1

    zero = jnp.zeros(N, jnp.int32)
    head, _, _ = lax.while_loop(cond, body, (zero, zero, jnp.int32(0)))
    return head


def length_lower_bound_jax(
    dev: DeviceRegion, issue_width: int | jax.Array = 1, *, anchor_batch: int = 64
) -> jax.Array:
    """int32[]: `length_lower_bound` of one padded region (traceable; vmap over a batch).

    Args:
      dev: one `DeviceRegion`.
      issue_width: instructions per cycle: an int (checked), or a traced int32[].
      anchor_batch: static; anchors evaluated together (memory ``anchor_batch * N``).
    """
    if not isinstance(issue_width, jax.Array):
        issue_width = check_issue_width(issue_width)
    N = dev.valid.shape[0]
    valid = jnp.asarray(dev.valid)
    head = head_times_jax(dev)
    tail = jnp.asarray(dev.cp, jnp.int32)
    by_tail = jnp.argsort(jnp.where(valid, -tail, 1), stable=True)
    q, r, v = tail[by_tail], head[by_tail], valid[by_tail]

    def anchor(a: jax.Array) -> jax.Array:
        return _anchor_bounds(a[None], q, r, v, issue_width, jnp)[0]

    anchors = jnp.where(valid, head, 0)
    per = lax.map(anchor, anchors, batch_size=min(anchor_batch, N))
    n = jnp.asarray(dev.n, jnp.int32)
    simple = jnp.maximum(
        jnp.max(jnp.where(valid, tail, 0)) + 1, (n + issue_width - 1) // issue_width
    )
    return jnp.maximum(jnp.max(per), simple).astype(jnp.int32)


# ------------------------------------------------------------------------------ RP, host
def _rp_peak_lower_bound(region: Region, machine: Machine) -> np.ndarray:
    """int64[F]: per-file RP peak lower bound (machine file order)."""
    F = machine.num_files
    fidx = {r: machine.file_index(reg.file) for r, reg in region.registers.items()}
    width = {r: reg.width for r, reg in region.registers.items()}
    live_in, live_out = set(region.live_in), set(region.live_out)
    used = {u for inst in region.instructions for u in inst.uses}
    defined = {d for inst in region.instructions for d in inst.defs}

    def total(regs) -> np.ndarray:
        out = np.zeros(F, dtype=np.int64)
        for x in regs:
            out[fidx[x]] += width[x]
        return out

    always = {x for x in live_in if x in live_out or x not in used}
    points = [total(live_in), total(always | (live_out & (live_in | defined)))]
    preds, succs = region.predecessors(), region.successors()
    for j, inst in enumerate(region.instructions):
        pred_defs = {d for p, _ in preds[j] for d in region.instructions[p].defs}
        succ_uses = {u for s, _ in succs[j] for u in region.instructions[s].uses}
        before = {u for u in inst.uses if u in live_in or u in pred_defs}
        stays = {u for u in before if u in live_out or u in succ_uses}
        points.append(total(always | before))
        points.append(total(always | set(inst.defs) | stays))
    lt = np.zeros(F, dtype=np.int64)
    for f, v in region.live_through.items():
        lt[machine.file_index(f)] += v
    return lt + np.max(points, axis=0)


def rp_lower_bound(region: Region, machine: Machine) -> tuple[dict[str, int], int]:
    """Per-file peak RP lower bound (file name -> 32-bit units) and the RP cost lower bound."""
    region.check_machine(machine)
    peaks = _rp_peak_lower_bound(region, machine)
    by_file = {f: int(p) for f, p in zip(machine.file_names, peaks, strict=True)}
    return by_file, int(machine.rp_cost(peaks))


# ------------------------------------------------------------------------------ RP, padded
class _RpTables(NamedTuple):
    """A padded region's tables for the RP bound, registers with the sentinel's dummy row (R
    registers, N instructions, F files)."""

    width: Array  # int32[R + 1]: dummy 0
    file: Array  # int32[R + 1]: file index
    live_in: Array  # bool[R + 1]: dummy False
    live_out: Array  # bool[R + 1]: dummy False
    always: Array  # bool[R + 1]: live all along (live-in and (live-out or never used))
    uses: Array  # int32[N + 1, U]: sentinel R (row N: all R)
    defs: Array  # int32[N + 1, V]: sentinel R (row N: all R)
    pred: Array  # int32[N, P]: sentinel N
    succ: Array  # int32[N, D]: sentinel N
    valid: Array  # bool[N]
    files: Array  # int32[F]: 0, 1, ..., F - 1


def _rp_tables(dev: DeviceRegion, xp: ModuleType) -> _RpTables:
    """The `_RpTables` of one padded region."""
    R = dev.reg_width.shape[0]
    live_in = append_row(dev.reg_live_in, False, xp)
    live_out = append_row(dev.reg_live_out, False, xp)
    num_uses = append_row(dev.reg_num_uses, 0, xp)
    return _RpTables(
        width=append_row(xp.asarray(dev.reg_width, xp.int32), 0, xp),
        file=append_row(xp.asarray(dev.reg_file, xp.int32), 0, xp),
        live_in=live_in,
        live_out=live_out,
        always=live_in & (live_out | (num_uses == 0)),
        uses=append_row(xp.asarray(dev.uses, xp.int32), R, xp),
        defs=append_row(xp.asarray(dev.defs, xp.int32), R, xp),
        pred=xp.asarray(dev.pred),
        succ=xp.asarray(dev.succ),
        valid=xp.asarray(dev.valid),
        files=xp.arange(dev.live_through.shape[0], dtype=xp.int32),
    )


def _file_widths(t: _RpTables, regs: Array, mask: Array, xp: ModuleType) -> Array:
    """int32[..., F]: the widths of registers ``regs`` (int[..., K], sentinel R: width 0)
    where ``mask`` (bool[..., K]), by file, summed over the K axis."""
    w = xp.where(mask & (regs < t.width.shape[0] - 1), t.width[regs], 0)
    onehot = t.file[regs][..., None] == t.files
    return xp.sum(xp.where(onehot, w[..., None], 0), axis=-2, dtype=xp.int32)


def _row_peaks(t: _RpTables, rows: Array, always_w: Array, xp: ModuleType) -> Array:
    """int32[F]: the largest certain peak just before or just after one of the instructions
    ``rows`` (int[k]; the module docstring's points; 0 for padding rows)."""
    R = t.width.shape[0] - 1
    u, d = t.uses[rows], t.defs[rows]  # [k, U], [k, V]
    pdefs = t.defs[t.pred[rows]]  # [k, P, V] (sentinel rows hold R)
    suses = t.uses[t.succ[rows]]  # [k, D, U]
    in_pred = (u[:, :, None, None] == pdefs[:, None]).any(axis=(2, 3))
    in_succ = (u[:, :, None, None] == suses[:, None]).any(axis=(2, 3))
    in_defs = (u[:, :, None] == d[:, None, :]).any(axis=2)
    before = (u < R) & ~t.always[u] & (t.live_in[u] | in_pred)
    stays = before & (t.live_out[u] | in_succ) & ~in_defs
    b = always_w + _file_widths(t, u, before, xp)
    a = always_w + _file_widths(t, d, ~t.always[d], xp) + _file_widths(t, u, stays, xp)
    return xp.where(t.valid[rows, None], xp.maximum(a, b), 0).max(axis=0)


def _padded_rp_peaks(dev: DeviceRegion, rows: int, rows_per_chunk: int, xp: ModuleType) -> Array:
    """int32[F]: `rp_lower_bound`'s per-file peaks of one padded region, written once over
    ``xp``: the start, the end, and the instructions ``0 .. rows - 1`` (at least the real
    ones) ``rows_per_chunk`` at a time."""
    N, R = dev.valid.shape[0], dev.reg_width.shape[0]
    t = _rp_tables(dev, xp)
    defined = scatter_set(xp.zeros(R + 1, bool), t.defs[:N], True, xp)
    defined = scatter_set(defined, R, False, xp)
    ids = xp.arange(R, dtype=xp.int32)
    start = _file_widths(t, ids, t.live_in[:R], xp)
    end = _file_widths(t, ids, (t.always | (t.live_out & (t.live_in | defined)))[:R], xp)
    always_w = _file_widths(t, ids, t.always[:R], xp)
    inner = xp.zeros(t.files.shape[0], xp.int32)
    for lo in range(0, rows, rows_per_chunk):
        chunk = xp.arange(lo, min(lo + rows_per_chunk, N), dtype=xp.int32)
        inner = xp.maximum(inner, _row_peaks(t, chunk, always_w, xp))
    peak = xp.maximum(xp.maximum(start, end), inner)
    return (xp.asarray(dev.live_through, xp.int32) + peak).astype(xp.int32)


def rp_peak_lower_bound_host(dev: DeviceRegion, rows_per_chunk: int = 256) -> np.ndarray:
    """int32[F]: `rp_peak_lower_bound_jax` of one padded region on the host (NumPy ``dev``,
    no batch axis), equal to it: the same function on NumPy, over the real instructions only,
    ``rows_per_chunk`` at a time (a chunk compares its instructions with their neighbours')."""
    return _padded_rp_peaks(dev, int(dev.n), rows_per_chunk, np)


def rp_peak_lower_bound_jax(dev: DeviceRegion) -> jax.Array:
    """int32[F]: `rp_lower_bound`'s per-file peaks of one padded region (traceable; vmap over
    a batch): every instruction slot at once, padding included (its rows count 0)."""
    N = dev.valid.shape[0]
    return _padded_rp_peaks(dev, N, N, jnp)
