"""What the colony derives from each padded region before it runs, on the host (NumPy): the
construction tables (`prepare_host`: `prepared.prepare` on NumPy), the starting schedules (the
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

from jaxsched.colony.construction.prepared import Prepared, prepare
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


# ------------------------------------------------------------------------------ derive
def prepare_host(dev: DeviceRegion, ready_slots: int) -> Prepared:
    """The `Prepared` tables of one padded region (NumPy ``dev``, no batch axis) as NumPy
    arrays: `prepared.prepare` with ``xp = numpy`` (one implementation for both sides)."""
    return prepare(dev, ready_slots, xp=np)


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
