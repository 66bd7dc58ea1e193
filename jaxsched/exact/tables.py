"""Dense, padded tables of one region for the exact search, and host-side schedule evaluation.

The exact search relies on one fact of the shared liveness model (`jaxsched.problem.region`):
**which registers are live after a prefix depends only on the set S of scheduled instructions**,
not on their order. For register r (``defd`` = some def of r is in S, ``rem`` = unscheduled uses):

* live-out r:                      live iff live-in or defd;
* not live-out, ``rem > 0``:       live iff live-in or defd (only the last use kills);
* not live-out, no uses at all:    live iff live-in and not defd (a def then dies right after);
* not live-out, all uses issued:   dead.

The RP recorded at instruction j issued after S is ``live(S + {j}) | defs(j)`` (its uses are
processed first, its defs are live at the record point, dead defs drop only afterwards), plus the
constant live-through pressure. The RP at the start is ``live({})`` plus live-through.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jaxsched.machines.model import RP_UNLIMITED, Machine, rp_limits
from jaxsched.problem.padded import bucket_size, next_pow2
from jaxsched.problem.region import Region

#: "No path / no edge" in int32 latency tables (far below any reachable value, no overflow).
NEG = -(1 << 28)


class Tables(NamedTuple):
    """One region padded to N instructions and R registers (NumPy; a pytree for `jit`).

    Padding instructions are invalid and start out "scheduled"; padding registers have width 0.
    """

    valid: np.ndarray  # bool[N]: instruction exists
    pred: np.ndarray  # bool[N, N]: pred[j, p] iff edge p -> j
    lat: np.ndarray  # int32[N, N]: lat[p, j] latency of edge p -> j (cycles), NEG if none
    dist: np.ndarray  # int32[N, N]: longest latency path p -> k (0 on the diagonal), NEG if none
    cp: np.ndarray  # int32[N]: latency-weighted longest path to a sink (cycles), 0 on padding
    uses: np.ndarray  # bool[N, R]: instruction uses register
    defs: np.ndarray  # bool[N, R]: instruction defines register
    num_uses: np.ndarray  # int32[R]: instructions using the register
    width: np.ndarray  # int32[R, F]: width (32-bit units) in the register's file, 0 elsewhere
    live_in: np.ndarray  # bool[R]
    live_out: np.ndarray  # bool[R]
    live_through: np.ndarray  # int32[F]: constant pressure per file


def build_tables(region: Region, machine: Machine, n_pad: int | None = None) -> Tables:
    """Dense tables of ``region`` padded to ``n_pad`` (default: `bucket_size`) instructions."""
    region.check_machine(machine)
    n = len(region)
    N = n_pad or bucket_size(n)
    if n > N:
        raise ValueError(f"region {region.name!r}: {n} instructions do not fit in {N}")
    names = region.register_names
    R = next_pow2(len(names), 8)
    F = machine.num_files
    rid = {r: k for k, r in enumerate(names)}

    valid = np.zeros(N, bool)
    valid[:n] = True
    pred = np.zeros((N, N), bool)
    lat = np.full((N, N), NEG, np.int32)
    for e in region.edges:
        pred[e.dst, e.src] = True
        lat[e.src, e.dst] = e.latency
    dist = np.full((N, N), NEG, np.int64)
    np.fill_diagonal(dist, 0)
    for i in reversed(region.topological_order()):
        for j, w in region.successors()[i]:
            dist[i] = np.maximum(dist[i], np.where(dist[j] > NEG, dist[j] + w, NEG))
    cp = np.zeros(N, np.int32)
    cp[:n] = region.critical_path()

    uses = np.zeros((N, R), bool)
    defs = np.zeros((N, R), bool)
    for i, inst in enumerate(region.instructions):
        uses[i, [rid[r] for r in inst.uses]] = True
        defs[i, [rid[r] for r in inst.defs]] = True
    width = np.zeros((R, F), np.int32)
    for r, k in rid.items():
        reg = region.registers[r]
        width[k, machine.file_index(reg.file)] = reg.width
    live_in = np.zeros(R, bool)
    live_in[[rid[r] for r in region.live_in]] = True
    live_out = np.zeros(R, bool)
    live_out[[rid[r] for r in region.live_out]] = True
    lt = np.zeros(F, np.int32)
    for f, v in region.live_through.items():
        lt[machine.file_index(f)] = v
    return Tables(
        valid=valid,
        pred=pred,
        lat=lat,
        dist=np.maximum(dist, NEG).astype(np.int32),
        cp=cp,
        uses=uses,
        defs=defs,
        num_uses=uses.sum(axis=0).astype(np.int32),
        width=width,
        live_in=live_in,
        live_out=live_out,
        live_through=lt,
    )


def live_after(t: Tables, sched: np.ndarray) -> np.ndarray:
    """bool[R]: registers live after the scheduled set ``sched`` (bool[N]); see module doc."""
    defd = (sched[:, None] & t.defs).any(axis=0)
    rem = t.num_uses - (sched[:, None] & t.uses).sum(axis=0)
    held = t.live_in | defd
    return np.where(t.live_out | (rem > 0), held, (t.num_uses == 0) & t.live_in & ~defd)


def order_peaks(t: Tables, order: np.ndarray) -> np.ndarray:
    """int64[F]: per-file peak RP of issuing the instructions in ``order`` (NumPy reference)."""
    sched = ~t.valid.copy()
    peak = t.live_through + live_after(t, sched) @ t.width
    for j in order:
        sched[j] = True
        rp = t.live_through + (live_after(t, sched) | t.defs[j]) @ t.width
        peak = np.maximum(peak, rp)
    return peak.astype(np.int64)


def check_order(region: Region, order: np.ndarray | list[int], label: str) -> np.ndarray:
    """int64[n]: ``order`` validated as a topological permutation; `ValueError` naming ``label``."""
    n = len(region)
    seq = np.asarray(order)
    if seq.shape != (n,) or not np.issubdtype(seq.dtype, np.integer):
        raise ValueError(
            f"region {region.name!r}: {label} must be {n} integer instruction ids, "
            f"got shape {seq.shape} dtype {seq.dtype}"
        )
    if sorted(seq.tolist()) != list(range(n)):
        raise ValueError(f"region {region.name!r}: {label} is not a permutation of 0..{n - 1}")
    pos = np.empty(n, np.int64)
    pos[seq] = np.arange(n)
    for e in region.edges:
        if pos[e.src] > pos[e.dst]:
            raise ValueError(
                f"region {region.name!r}: {label} issues {e.dst} before its predecessor {e.src}"
            )
    return seq.astype(np.int64)


def order_from_cycles(region: Region, cycles: np.ndarray | list[int], label: str) -> np.ndarray:
    """int64[n]: issue order of a cycle vector (stable by id within a cycle), validated."""
    n = len(region)
    cyc = np.asarray(cycles)
    if cyc.shape != (n,) or not np.issubdtype(cyc.dtype, np.integer):
        raise ValueError(
            f"region {region.name!r}: {label} must be {n} integer cycles, got shape {cyc.shape}"
        )
    # Within one cycle a dependence (latency 0) fixes the order: sort by (cycle, topo position).
    topo = np.empty(n, np.int64)
    topo[np.asarray(region.topological_order())] = np.arange(n)
    order = np.lexsort((topo, cyc))
    return check_order(region, order, label)


def rp_limit(machine: Machine, rp_target: int | None) -> np.ndarray:
    """int32[F]: per-file peak limits of the RP cost target (`jaxsched.machines.rp_limits`);
    ``RP_UNLIMITED`` everywhere when there is no target."""
    if rp_target is None:
        return np.full(machine.num_files, RP_UNLIMITED, np.int32)
    lut = machine.occupancy_lut
    return np.asarray(rp_limits(lut, machine.target_occupancy, int(rp_target)), np.int32)
