"""What the colony derives from each padded region before it runs, on the host (NumPy): the
construction tables (`prepare_host`, `prepared.prepare`'s twin), the starting schedules (the
input order and three list schedules), their peaks and lengths, both lower bounds and the
critical path (`derive_host`).

Every result equals, bit for bit (same dtypes and shapes), what the JAX functions compute on
the same padded arrays (`prepared.prepare`, `list_scheduler.list_schedule` and
`target_schedule`, `order_peak_rp`, `stall_schedule`, `bounds.rp_peak_lower_bound_jax`,
`bounds.length_lower_bound_jax`), so a problem prepared here solves exactly like one prepared
on device, and preparing it compiles nothing.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jaxsched.colony.prepared import BIG, Prepared
from jaxsched.heuristics.bounds import length_lower_bound_host, rp_peak_lower_bound_host
from jaxsched.heuristics.host_schedule import (
    host_region,
    list_schedule_host,
    order_peak_rp_host,
    stall_schedule_host,
    target_schedule_host,
)
from jaxsched.machines.model import MachineArrays, rp_cost_jax, rp_limits
from jaxsched.problem.padded import DeviceRegion

#: Priority of the RP list schedule (latencies off).
RP_PRIORITY = ("luc", "cp", "nid")
#: Priority of the latency list schedules (plain and under an RP target).
LATENCY_PRIORITY = ("cp", "luc", "nid")


# ------------------------------------------------------------------------------ prepare
def _row_pad(values: np.ndarray, fill) -> np.ndarray:
    """``values`` with one extra leading-axis row of ``fill`` (the sentinel's dummy row)."""
    values = np.asarray(values)
    return np.concatenate([values, np.full((1, *values.shape[1:]), fill, values.dtype)], axis=0)


def _users_xor(uses: np.ndarray, num_regs: int) -> np.ndarray:
    """int32[num_regs]: XOR of the ids of each register's users (``uses`` int32[N + 1, U],
    row ids as user ids; sentinel uses count for the register they name)."""
    out = np.zeros(num_regs, np.int32)
    ids = np.broadcast_to(np.arange(uses.shape[0], dtype=np.int32)[:, None], uses.shape)
    np.bitwise_xor.at(out, uses.ravel(), ids.ravel())
    return out


def _normalized(values: np.ndarray) -> np.ndarray:
    """f32[N + 1]: ``values`` (int[N]) divided by its maximum (at least 1), dummy 0 appended; the
    float32 arithmetic XLA compiles `prepared._normalized` to (a multiplication by the
    maximum's rounded reciprocal, not a division)."""
    values = np.asarray(values).astype(np.float32)
    scale = np.float32(1.0) / np.maximum(values.max(), np.float32(1.0))
    return _row_pad(values * scale, np.float32(0.0))


def _initial_ready(dev: DeviceRegion, ready_slots: int) -> tuple[np.ndarray, np.int32]:
    """(int32[K + 1] the roots in id order in the first slots, sentinel N; int32 their count)."""
    N, K = dev.valid.shape[0], ready_slots
    roots = np.asarray(dev.valid) & (np.asarray(dev.num_preds) == 0)
    slot = np.minimum(np.where(roots, np.cumsum(roots) - 1, K), K)
    init_ready = np.full(K + 1, N, np.int32)
    init_ready[slot] = np.arange(N, dtype=np.int32)
    init_ready[K] = N
    return init_ready, np.int32(roots.sum())


def prepare_host(dev: DeviceRegion, ready_slots: int) -> Prepared:
    """`prepared.prepare` on the host: the `Prepared` tables of one padded region (NumPy
    ``dev``, no batch axis) as NumPy arrays of the same dtypes and shapes."""
    N, R, F = dev.valid.shape[0], dev.reg_width.shape[0], dev.live_through.shape[0]
    reg_width, reg_file = _row_pad(dev.reg_width, 0), _row_pad(dev.reg_file, 0)
    reg_wf = np.where(
        reg_file[:, None] == np.arange(F, dtype=np.int32)[None, :], reg_width[:, None], 0
    ).astype(np.int32)  # [R + 1, F]
    uses, defs = _row_pad(dev.uses, R), _row_pad(dev.defs, R)
    users_xor = _users_xor(uses, R + 1)
    reg_live_out = _row_pad(dev.reg_live_out, True)
    reg_live_in = _row_pad(dev.reg_live_in, False)
    reg_num_uses = _row_pad(dev.reg_num_uses, 0)
    init_ready, init_count = _initial_ready(dev, ready_slots)
    # At the start a live-in register with one use (not live-out) dies at that use.
    kills = (reg_num_uses == 1) & reg_live_in & ~reg_live_out
    init_kill = np.zeros((N + 1, F), np.int32)
    np.add.at(init_kill, np.where(kills, users_xor, N), reg_wf * kills[:, None])
    init_kill[N] = 0
    return Prepared(
        n=np.int32(dev.n),
        succ=_row_pad(dev.succ, N),
        succ_lat=_row_pad(dev.succ_lat, 0),
        num_preds=_row_pad(dev.num_preds, BIG),
        uses=uses,
        defs=defs,
        def_wf=reg_wf[defs].sum(axis=1, dtype=np.int32).T.copy(),
        reg_wf=reg_wf,
        reg_num_uses=reg_num_uses,
        reg_users_xor=users_xor,
        reg_live_in=reg_live_in,
        reg_live_out=reg_live_out,
        live_through=np.asarray(dev.live_through, np.int32),
        cp=_normalized(dev.cp),
        cp_unit=_normalized(dev.cp_unit),
        successors=_normalized(dev.num_succs),
        init_ready=init_ready,
        init_count=init_count,
        init_kill=init_kill.T.copy(),
    )


# ------------------------------------------------------------------------------ derive
class Derived(NamedTuple):
    """What `derive_host` computes for one region (NumPy; S = 4 starts: input, list-rp,
    list-ilp, list-target; N instructions, F files)."""

    prep: Prepared  # the construction tables
    start_order: np.ndarray  # int32[S, N]: the starting orders, sentinel N after n
    start_peak: np.ndarray  # int32[S, F]: their peak RP per file
    start_length: np.ndarray  # int32[S]: their length issued in order (forced stalls only)
    rp_lower_bound: np.ndarray  # int32[]: RP cost lower bound
    length_lower_bound: np.ndarray  # int32[]: length lower bound (cycles)
    critical_path: np.ndarray  # int32[]: latency-weighted critical path length (cycles)


def derive_host(
    dev: DeviceRegion, machine: MachineArrays, *, ready_slots: int, issue_width: int
) -> Derived:
    """The construction tables, the input and list starts (orders, peaks, lengths), the RP
    cost and length lower bounds and the critical path of one padded region (NumPy ``dev``,
    no batch axis; ``machine`` as NumPy or JAX arrays)."""
    N = dev.valid.shape[0]
    lut, target = np.asarray(machine.lut), np.int32(machine.target_occupancy)
    rp_lb = rp_cost_jax(rp_peak_lower_bound_host(dev), lut, target, xp=np)
    hr, kw = host_region(dev), dict(issue_width=issue_width)
    rp = list_schedule_host(hr, lut, priority=RP_PRIORITY, latencies=False, **kw)
    ilp = list_schedule_host(hr, lut, priority=LATENCY_PRIORITY, latencies=True, **kw)
    inp = np.where(dev.valid, np.arange(N, dtype=np.int32), np.int32(N)).astype(np.int32)
    limit = rp_limits(lut, target, rp_lb, xp=np)
    limited = target_schedule_host(hr, lut, limit, target, inp, issue_width)
    orders = np.stack([inp, rp.order, ilp.order, limited.order])
    return Derived(
        prep=prepare_host(dev, ready_slots),
        start_order=orders,
        start_peak=np.stack([order_peak_rp_host(hr, o) for o in orders]),
        start_length=np.array([stall_schedule_host(hr, o, issue_width)[1] for o in orders]),
        rp_lower_bound=np.int32(rp_lb),
        length_lower_bound=length_lower_bound_host(dev, issue_width),
        critical_path=np.int32(np.max(np.where(dev.valid, dev.cp, 0))),
    )
