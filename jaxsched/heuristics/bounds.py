"""Lower bounds on schedule length and register pressure (host and JAX versions agree).

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
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxsched.heuristics.list_scheduler import HeuristicError
from jaxsched.machines.model import Machine
from jaxsched.problem.padded import DeviceRegion
from jaxsched.problem.region import Region

__all__ = [
    "head_times",
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


def _pair_bound(head: np.ndarray, tail: np.ndarray, iw: int, chunk_cells: int = 1 << 22) -> int:
    """max over anchors a in head of a + max_k (q_(k) + ceil(c_a(k) / iw)) (see module doc)."""
    n = len(head)
    by_tail = np.argsort(-tail, kind="stable")
    q = tail[by_tail]
    r = head[by_tail]
    anchors = np.unique(head)
    step = max(1, chunk_cells // max(n, 1))
    best = 0
    for s in range(0, len(anchors), step):
        a = anchors[s : s + step]
        count = np.cumsum(r[None, :] >= a[:, None], axis=1)
        val = np.where(count >= 1, q[None, :] + -(-count // iw), 0)
        best = max(best, int((a + val.max(axis=1)).max()))
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
    if isinstance(issue_width, bool) or not isinstance(issue_width, int) or issue_width < 1:
        raise HeuristicError(f"issue_width {issue_width!r} must be an integer >= 1")
    n = int(dev.n)
    tail = np.asarray(dev.cp[:n], np.int64)
    simple = max(int(tail.max(initial=0)) + 1, -(-n // issue_width))
    return np.int32(max(_pair_bound(_padded_head_times(dev), tail, issue_width), simple))


# ------------------------------------------------------------------------------ length, JAX
def _head_times_jax(dev: DeviceRegion) -> jax.Array:
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
    dev: DeviceRegion, issue_width: int = 1, *, anchor_batch: int = 64
) -> jax.Array:
    """int32[]: `length_lower_bound` of one padded region (traceable; vmap over a batch).

    Args:
      dev: one `DeviceRegion`.
      issue_width: static; instructions per cycle.
      anchor_batch: static; anchors evaluated together (memory ``anchor_batch * N``).
    """
    if isinstance(issue_width, bool) or not isinstance(issue_width, int) or issue_width < 1:
        raise HeuristicError(f"issue_width {issue_width!r} must be an integer >= 1")
    N = dev.valid.shape[0]
    valid = jnp.asarray(dev.valid)
    head = _head_times_jax(dev)
    tail = jnp.asarray(dev.cp, jnp.int32)
    by_tail = jnp.argsort(jnp.where(valid, -tail, 1), stable=True)
    q, r, v = tail[by_tail], head[by_tail], valid[by_tail]

    def anchor(a: jax.Array) -> jax.Array:
        count = jnp.cumsum(v & (r >= a), dtype=jnp.int32)
        val = jnp.where(count >= 1, q + (count + issue_width - 1) // issue_width, 0)
        return a + jnp.max(val)

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
def _file_widths(width, file, files, regs, mask) -> np.ndarray:
    """int32[..., F]: widths (``width``/``file`` int32[R + 1]) of registers ``regs``
    (int[..., K], sentinel R: width 0) where ``mask``, by file, summed over the K axis."""
    w = np.where(mask & (regs < width.shape[0] - 1), width[regs], 0)
    onehot = file[regs][..., None] == files
    return np.sum(np.where(onehot, w[..., None], 0), axis=-2, dtype=np.int32)


def rp_peak_lower_bound_host(dev: DeviceRegion, rows_per_chunk: int = 256) -> np.ndarray:
    """int32[F]: `rp_peak_lower_bound_jax` of one padded region on the host (NumPy ``dev``,
    no batch axis), equal to it; instructions are compared with their neighbours'
    registers ``rows_per_chunk`` at a time."""
    N, R = dev.valid.shape[0], dev.reg_width.shape[0]
    files = np.arange(dev.live_through.shape[0], dtype=np.int32)
    width = np.append(np.asarray(dev.reg_width, np.int32), np.int32(0))  # [R + 1]
    file = np.append(np.asarray(dev.reg_file, np.int32), np.int32(0))
    live_in = np.append(np.asarray(dev.reg_live_in), False)
    live_out = np.append(np.asarray(dev.reg_live_out), False)
    uses = np.concatenate([dev.uses, np.full((1, dev.uses.shape[1]), R, np.int32)])
    defs = np.concatenate([dev.defs, np.full((1, dev.defs.shape[1]), R, np.int32)])
    num_uses = np.append(np.asarray(dev.reg_num_uses), 0)
    defined = np.zeros(R + 1, bool)
    defined[defs[:N]] = True
    defined[R] = False
    always = live_in & (live_out | (num_uses == 0))
    ids = np.arange(R)
    total = partial(_file_widths, width, file, files)
    start = total(ids, live_in[:R])
    end = total(ids, (always | (live_out & (live_in | defined)))[:R])
    always_w = total(ids, always[:R])
    inner = np.zeros(files.shape[0], np.int32)
    for lo in range(0, int(dev.n), rows_per_chunk):
        rows = np.arange(lo, min(lo + rows_per_chunk, N))
        u, d = uses[rows], defs[rows]  # [k, U], [k, V]
        pdefs = defs[dev.pred[rows]]  # [k, P, V]
        suses = uses[dev.succ[rows]]  # [k, D, U]
        in_pred = (u[:, :, None, None] == pdefs[:, None]).any(axis=(2, 3))
        in_succ = (u[:, :, None, None] == suses[:, None]).any(axis=(2, 3))
        in_defs = (u[:, :, None] == d[:, None, :]).any(axis=2)
        before = (u < R) & ~always[u] & (live_in[u] | in_pred)
        stays = before & (live_out[u] | in_succ) & ~in_defs
        b = always_w + total(u, before)
        a = always_w + total(d, ~always[d]) + total(u, stays)
        per = np.where(np.asarray(dev.valid)[rows, None], np.maximum(a, b), 0)
        inner = np.maximum(inner, per.max(axis=0))
    peak = np.maximum(np.maximum(start, end), inner)
    return (np.asarray(dev.live_through, np.int32) + peak).astype(np.int32)


# ------------------------------------------------------------------------------ RP, JAX
def rp_peak_lower_bound_jax(dev: DeviceRegion) -> jax.Array:
    """int32[F]: `rp_lower_bound`'s per-file peaks of one padded region (traceable)."""
    N = dev.valid.shape[0]
    R = dev.reg_width.shape[0]
    F = dev.live_through.shape[0]
    ids = jnp.arange(R, dtype=jnp.int32)
    width = jnp.append(jnp.asarray(dev.reg_width, jnp.int32), 0)  # [R + 1]
    file = jnp.append(jnp.asarray(dev.reg_file, jnp.int32), 0)
    live_in = jnp.append(jnp.asarray(dev.reg_live_in), False)
    live_out = jnp.append(jnp.asarray(dev.reg_live_out), False)
    uses = jnp.concatenate([jnp.asarray(dev.uses), jnp.full((1, dev.uses.shape[1]), R)])
    defs = jnp.concatenate([jnp.asarray(dev.defs), jnp.full((1, dev.defs.shape[1]), R)])

    def total(regs: jax.Array, mask: jax.Array) -> jax.Array:
        w = jnp.where(mask & (regs < R), width[regs], 0)
        onehot = file[regs][..., None] == jnp.arange(F, dtype=jnp.int32)
        return jnp.sum(jnp.where(onehot, w[..., None], 0), axis=tuple(range(regs.ndim)))

    num_uses = jnp.append(jnp.asarray(dev.reg_num_uses), 0)
    defined = jnp.zeros(R + 1, bool).at[defs[:N]].set(True).at[R].set(False)
    always = live_in & (live_out | (num_uses == 0))
    start = total(ids, live_in[:R])
    end = total(ids, (always | (live_out & (live_in | defined)))[:R])
    always_w = total(ids, always[:R])

    pred, succ = jnp.asarray(dev.pred), jnp.asarray(dev.succ)

    def at(j: jax.Array) -> jax.Array:
        u, d = uses[j], defs[j]
        pdefs = defs[pred[j]]  # [P, V] (sentinel rows hold R)
        suses = uses[succ[j]]  # [D, U]
        real = u < R
        in_pred = jnp.any(u[:, None, None] == pdefs[None], axis=(1, 2))
        in_succ = jnp.any(u[:, None, None] == suses[None], axis=(1, 2))
        in_defs = jnp.any(u[:, None] == d[None, :], axis=1)
        before = real & ~always[u] & (live_in[u] | in_pred)
        stays = before & (live_out[u] | in_succ) & ~in_defs
        b = always_w + total(u, before)
        a = always_w + total(d, ~always[d]) + total(u, stays)
        return jnp.maximum(a, b)

    per = jax.vmap(at)(jnp.arange(N, dtype=jnp.int32))
    inner = jnp.max(jnp.where(jnp.asarray(dev.valid)[:, None], per, 0), axis=0)
    peak = jnp.maximum(jnp.maximum(start, end), inner)
    return (jnp.asarray(dev.live_through, jnp.int32) + peak).astype(jnp.int32)
