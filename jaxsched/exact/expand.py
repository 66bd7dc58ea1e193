"""Batched, jitted frontier expansion: every child of K parent nodes with its bounds.

A node is a schedule prefix (see `jaxsched.exact.search`): the scheduled set, the earliest cycle
of every unscheduled instruction implied by the prefix, the next free issue slot and the peak RP
so far. `expand` generates all children (parent, ready instruction) of a batch of parents, packs
them into a fixed-capacity array (jax-md neighbour-list style: the capacity is static, an
``overflow`` flag says when it was too small, and the caller grows it and re-runs) and evaluates
every child's lower bounds at once. The same code runs on CPU, GPU and TPU.

Bounds of a child (all valid for every completion of the prefix, see `search`):
  * RP: final peak of file f >= max(peak so far, live-through + width of (live-out registers
    already live | defs(k))) for each unscheduled k (those registers are live when k issues);
  * length (cycles, ``max cycle + 1``), with ``est2`` the earliest cycles propagated through
    unscheduled predecessors (longest latency paths):
    - optimistic longest path: ``max_k est2[k] + cp[k] + 1``;
    - release thresholds: the instructions with ``est2 >= e`` need ``|set|`` issue slots from
      cycle e (or the next free slot) on, and the last of them still has its tail to run;
    - tail thresholds: the same for the instructions with tail ``cp >= q``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxsched.exact.tables import Tables
from jaxsched.machines.model import rp_cost_jax


class Nodes(NamedTuple):
    """A batch of K search nodes (schedule prefixes)."""

    sched: jax.Array  # bool[K, N]: scheduled (padding instructions always True)
    est: jax.Array  # int32[K, N]: earliest issue cycle of unscheduled instructions, 0 if sched
    slot: jax.Array  # int32[K]: next free issue slot, cycle * issue_width + issued in that cycle
    peaks: jax.Array  # int32[K, F]: peak RP so far per file (32-bit units)
    valid: jax.Array  # bool[K]: real node (batch padding False)


class MachineConstants(NamedTuple):
    """The machine's constants as arrays (traced: a new machine does not recompile)."""

    issue_width: jax.Array  # int32[]: instructions per cycle (length pass)
    rp_limit: jax.Array  # int32[F]: per-file peak limit (length pass); a child above it is dead
    lut: jax.Array  # int32[F, T]: occupancy lookup, `Machine.occupancy_lut`
    target: jax.Array  # int32[]: target occupancy


class Children(NamedTuple):
    """Up to C children packed at the front; ``valid`` marks real, feasible ones."""

    parent: jax.Array  # int32[C]: index into the parent batch
    inst: jax.Array  # int32[C]: instruction issued by the child
    sched: jax.Array  # bool[C, N]
    est: jax.Array  # int32[C, N]: clipped to the child's current cycle, 0 where scheduled
    slot: jax.Array  # int32[C]
    peaks: jax.Array  # int32[C, F]
    key: jax.Array  # int32[C]: primary lower bound (RP cost, or length in cycles)
    tie: jax.Array  # int32[C]: secondary lower bound (sum of per-file peaks; 0 for length)
    valid: jax.Array  # bool[C]
    count: jax.Array  # int32[]: children before packing (all of them, valid or not)
    overflow: jax.Array  # bool[]: count > C (re-run with a larger capacity)


def _live(t: Tables, sched: jax.Array) -> jax.Array:
    """bool[..., R]: registers live after the scheduled set (see `jaxsched.exact.tables`)."""
    s = sched.astype(jnp.int32)
    defd = (s @ t.defs.astype(jnp.int32)) > 0
    rem = t.num_uses - s @ t.uses.astype(jnp.int32)
    held = t.live_in | defd
    return jnp.where(t.live_out | (rem > 0), held, (t.num_uses == 0) & t.live_in & ~defd)


def _wsum(mask: jax.Array, width: jax.Array) -> jax.Array:
    """int32[..., F]: total width per file of the registers in ``mask`` (bool[..., R])."""
    return mask.astype(jnp.int32) @ width


def _pack(ready: jax.Array, capacity: int) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Flat (parent, inst) pairs of the True entries of ``ready`` (bool[K, N]) in C slots."""
    K, N = ready.shape
    flat = ready.reshape(-1)
    count = flat.sum(dtype=jnp.int32)
    pos = jnp.cumsum(flat, dtype=jnp.int32) - 1
    dest = jnp.where(flat & (pos < capacity), pos, capacity)
    ids = jnp.arange(K * N, dtype=jnp.int32)
    packed = jnp.full(capacity + 1, -1, jnp.int32).at[dest].set(ids)[:capacity]
    valid = packed >= 0
    packed = jnp.maximum(packed, 0)
    return packed // N, packed % N, valid, count


def _length_bound(
    t: Tables, unsched: jax.Array, est: jax.Array, slot: jax.Array, w: jax.Array
) -> jax.Array:
    """int32[C]: lower bound on the length (cycles) of every completion; see module doc."""
    big = jnp.int32(1 << 28)
    # est2[c, k] = max over unscheduled p of est[c, p] + dist[p, k]
    via = jnp.where(unsched[:, :, None], est[:, :, None] + t.dist[None], -big)
    est2 = jnp.max(via, axis=1)
    done = (slot - 1) // w + 1
    l_path = jnp.max(jnp.where(unsched, est2 + t.cp + 1, 0), axis=1)

    inset = unsched[:, None, :]  # [C, a, k]
    set_e = inset & (est2[:, None, :] >= est2[:, :, None])
    cnt_e = set_e.sum(axis=2, dtype=jnp.int32)
    mincp_e = jnp.min(jnp.where(set_e, t.cp[None, None, :], big), axis=2)
    start_e = jnp.maximum(est2 * w, slot[:, None])
    l_rel = jnp.where(unsched, (start_e + cnt_e - 1) // w + 1 + mincp_e, 0).max(axis=1)

    set_q = inset & (t.cp[None, None, :] >= t.cp[None, :, None])
    cnt_q = set_q.sum(axis=2, dtype=jnp.int32)
    minest_q = jnp.min(jnp.where(set_q, est2[:, None, :], big), axis=2)
    start_q = jnp.maximum(minest_q * w, slot[:, None])
    l_tail = jnp.where(unsched, (start_q + cnt_q - 1) // w + 1 + t.cp[None, :], 0).max(axis=1)
    return jnp.maximum(jnp.maximum(done, l_path), jnp.maximum(l_rel, l_tail))


def expand_impl(
    t: Tables, nodes: Nodes, params: MachineConstants, *, capacity: int, objective: str
) -> Children:
    """All children of ``nodes`` with bounds (un-jitted; see `expand`)."""
    unsched = ~nodes.sched
    blocked = jnp.any(t.pred[None] & unsched[:, None, :], axis=2)
    ready = unsched & ~blocked & nodes.valid[:, None]
    parent, inst, valid, count = _pack(ready, capacity)
    N = t.valid.shape[0]

    onehot = jax.nn.one_hot(inst, N, dtype=jnp.bool_)
    sched = nodes.sched[parent] | onehot
    left = ~sched
    live = _live(t, sched)
    rp = t.live_through + _wsum(live | t.defs[inst], t.width)  # [C, F]
    peaks = jnp.maximum(nodes.peaks[parent], rp)
    # Registers live-out and live now stay live to the end; k's defs are live when k issues.
    lo = live & t.live_out
    base = t.live_through + _wsum(lo, t.width)  # [C, F]
    extra = _wsum(t.defs[None] & ~lo[:, None, :], t.width)  # [C, N, F]
    future = jnp.max(jnp.where(left[:, :, None], base[:, None, :] + extra, 0), axis=1)
    lb_peaks = jnp.maximum(peaks, future)

    if objective == "rp":
        slot = nodes.slot[parent] + 1
        est = jnp.zeros_like(nodes.est[parent])
        key = rp_cost_jax(lb_peaks, params.lut, params.target).astype(jnp.int32)
        tie = lb_peaks.sum(axis=1, dtype=jnp.int32)
    elif objective == "length":
        w = params.issue_width
        pslot = nodes.slot[parent]
        pest = nodes.est[parent]
        t_j = jnp.maximum(pslot // w, jnp.take_along_axis(pest, inst[:, None], 1)[:, 0])
        slot = jnp.maximum(pslot, t_j * w) + 1
        est = jnp.maximum(pest, t_j[:, None] + t.lat[inst])
        est = jnp.where(left, jnp.maximum(est, (slot // w)[:, None]), 0)
        valid = valid & jnp.all(lb_peaks <= params.rp_limit, axis=1)
        key = _length_bound(t, left, est, slot, w)
        tie = jnp.zeros_like(key)
    else:
        raise ValueError(f"objective must be 'rp' or 'length', got {objective!r}")
    return Children(
        parent=parent,
        inst=inst,
        sched=sched,
        est=est.astype(jnp.int32),
        slot=slot.astype(jnp.int32),
        peaks=peaks.astype(jnp.int32),
        key=key.astype(jnp.int32),
        tie=tie,
        valid=valid,
        count=count,
        overflow=count > capacity,
    )


expand = jax.jit(expand_impl, static_argnames=("capacity", "objective"))
expand.__doc__ = """Jitted `expand_impl`: children of a batch of K nodes packed into ``capacity``.

Args:
  t: `Tables` of the region (device arrays).
  nodes: `Nodes` batch (K parents; ``valid`` False for padding rows).
  params: `MachineConstants` (traced: no recompiles when they change).
  capacity: static C; ``overflow`` is set when more children exist (grow C and re-run).
  objective: static, ``"rp"`` (order only) or ``"length"`` (latencies, issue width, RP limit).
Returns:
  `Children`.
"""


def root(t: Tables, batch: int) -> Nodes:
    """A batch holding the empty prefix in row 0 (padding rows invalid), NumPy arrays."""
    import numpy as np

    N, F = t.valid.shape[0], t.width.shape[1]
    sched = np.tile(~np.asarray(t.valid), (batch, 1))
    live0 = np.asarray(_live(t, jnp.asarray(sched[:1])))[0]
    peak0 = np.asarray(t.live_through) + live0.astype(np.int32) @ np.asarray(t.width)
    valid = np.zeros(batch, bool)
    valid[0] = True
    return Nodes(
        sched=sched,
        est=np.zeros((batch, N), np.int32),
        slot=np.zeros(batch, np.int32),
        peaks=np.tile(peak0.astype(np.int32), (batch, 1)).reshape(batch, F),
        valid=valid,
    )
