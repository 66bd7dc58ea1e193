"""The colony's batch problem: padded regions of one bucket with their bounds and starting
schedules, built on the host once (`problem`) and solved on device (`jaxsched.colony.core`).

The host part is padding (NumPy) and the exact search's results, if any; everything else (the
construction tables, the list-scheduler starts, their peaks and lengths, both lower bounds) is one
jitted, batched call.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.colony.construct import Prepared, prepare
from jaxsched.compilation import COMPILED, CompileCache
from jaxsched.errors import InputError
from jaxsched.heuristics.bounds import length_lower_bound_jax, rp_peak_lower_bound_jax
from jaxsched.heuristics.list_scheduler import (
    list_schedule,
    order_peak_rp,
    stall_schedule,
    target_schedule,
)
from jaxsched.machines.model import Machine, MachineArrays, rp_cost_jax, rp_limits
from jaxsched.problem.fingerprint import fingerprint
from jaxsched.problem.padded import DeviceRegion, PaddedShape, common_shape, next_pow2, stack
from jaxsched.problem.region import Region

#: Starting schedules, in the order of the ``start_*`` arrays: the input order, the list
#: scheduler's RP order (LUC, CP, NID; latencies off) and latency order (CP, LUC, NID), the
#: latency order under an RP target ("list-target": the RP cost lower bound here, the RP
#: pass's result when the ILP pass starts; see `list_schedule`'s ``rp_limit``), and the exact
#: search's schedule (present only where it ran).
STARTS = ("input", "list-rp", "list-ilp", "list-target", "exact")
#: Where a result comes from (`Solution.source` indexes this): a start, or a colony pass.
SOURCES = (*STARTS, "colony-rp", "colony")
#: The starts a caller may choose (the exact one comes with ``exact=`` results).
CHOOSABLE_STARTS = STARTS[:4]
#: Priority of the latency list schedules (plain and under an RP target).
LATENCY_PRIORITY = ("cp", "luc", "nid")


class ColonyProblem(NamedTuple):
    """B padded regions of one bucket (N instructions, F register files, S = len(STARTS)).

    A pytree of arrays: pass it to jitted functions, `vmap` over other arguments. Region b's
    random stream is ``fold_in(key, ids[b])``, so its result does not depend on the batch.
    """

    dev: DeviceRegion  # [B, ...]: the padded regions
    prep: Prepared  # [B, ...]: their construction tables
    machine: MachineArrays  # the machine (not batched)
    ids: jnp.ndarray  # uint32[B]: region fingerprints (`jaxsched.problem.fingerprint`)
    real: jnp.ndarray  # bool[B]: False for batch padding (copies of region 0)
    start_order: jnp.ndarray  # int32[B, S, N]: starting orders, sentinel N after n
    start_peak: jnp.ndarray  # int32[B, S, F]: their peak RP per file
    start_length: jnp.ndarray  # int32[B, S]: their length issued in order (forced stalls only)
    start_allowed: jnp.ndarray  # bool[B, S]: the colony may start from (and return) this one
    rp_lower_bound: jnp.ndarray  # int32[B]: RP cost lower bound
    length_lower_bound: jnp.ndarray  # int32[B]: length lower bound (cycles, latency pass)
    critical_path: jnp.ndarray  # int32[B]: latency-weighted critical path length (cycles)
    proven: jnp.ndarray  # bool[B]: the exact start is proven optimal (the colony is skipped)
    exact_rp_cost: jnp.ndarray  # int32[B]: RP cost under which ``exact_length_bound`` holds
    #                             (-1: none)
    exact_length_bound: jnp.ndarray  # int32[B]: proven length bound at ``exact_rp_cost``

    @property
    def batch(self) -> int:
        return int(self.ids.shape[0])


@partial(jax.jit, static_argnames=("ready_slots", "issue_width"))
def _derive(dev: DeviceRegion, machine: MachineArrays, *, ready_slots: int, issue_width: int):
    """Per region: construction tables, the input and list starts (orders, peaks, lengths),
    the RP cost and length lower bounds and the critical path."""

    def one(d: DeviceRegion):
        N = d.valid.shape[0]
        ids = jnp.arange(N, dtype=jnp.int32)
        lut, target = machine.lut, machine.target_occupancy
        kw = dict(issue_width=issue_width)
        rp_lb = rp_cost_jax(rp_peak_lower_bound_jax(d), lut, target)
        rp = list_schedule(d, lut, priority=("luc", "cp", "nid"), latencies=False, **kw)
        ilp = list_schedule(d, lut, priority=LATENCY_PRIORITY, latencies=True, **kw)
        inp = jnp.where(d.valid, ids, N)
        limited = target_schedule(d, lut, rp_limits(lut, target, rp_lb), target, inp, issue_width)
        orders = jnp.stack([inp, rp.order, ilp.order, limited.order])
        peaks = jax.vmap(lambda o: order_peak_rp(d, o))(orders)
        lengths = jax.vmap(lambda o: stall_schedule(d, o, issue_width)[1])(orders)
        len_lb = length_lower_bound_jax(d, issue_width)
        cp = jnp.max(jnp.where(d.valid, d.cp, 0))
        return prepare(d, ready_slots), orders, peaks, lengths, rp_lb, len_lb, cp

    return jax.vmap(one)(dev)


def canonical_shape(shape: PaddedShape) -> PaddedShape:
    """The shape every region of ``shape.n``'s bucket normally fits in, so that one bucket
    compiles once however its regions vary: registers >= 2N (regions with more registers than
    instructions are common: live-ins, several defs), 8 successors and predecessors, 4 uses,
    2 defs, ready slots = N (decisions only look at the occupied slots, see
    `construct.slot_widths`). Larger regions of the bucket still grow it."""
    n = shape.n
    return shape.join(
        PaddedShape(n=n, regs=2 * n, succ=8, pred=8, uses=4, defs=2, ready=n, files=shape.files)
    )


class _Exact(NamedTuple):
    """The exact search's contribution to a batch (NumPy)."""

    order: np.ndarray  # int32[B, N]
    peak: np.ndarray  # int32[B, F]
    length: np.ndarray  # int32[B]
    present: np.ndarray  # bool[B]
    proven: np.ndarray  # bool[B]
    rp_lower: np.ndarray  # int32[B]: proven RP cost lower bound (0: none)
    rp_cost: np.ndarray  # int32[B]
    length_bound: np.ndarray  # int32[B]


def _exact_fields(exact: Sequence, B: int, N: int, F: int) -> _Exact:
    """Pack `jaxsched.exact.TwoPassResult`s (or None) per region into arrays."""
    out = _Exact(
        order=np.tile(np.arange(N, dtype=np.int32), (B, 1)),
        peak=np.zeros((B, F), np.int32),
        length=np.zeros(B, np.int32),
        present=np.zeros(B, bool),
        proven=np.zeros(B, bool),
        rp_lower=np.zeros(B, np.int32),
        rp_cost=np.full(B, -1, np.int32),
        length_bound=np.zeros(B, np.int32),
    )
    for b, e in enumerate(exact):
        if e is None:
            continue
        out.rp_lower[b] = e.rp.lower[0]
        if e.rp.optimal and e.length.lower:
            out.rp_cost[b], out.length_bound[b] = e.rp.rp_cost, e.length.lower[0]
        if e.length.order is not None:
            n = len(e.length.order)
            out.order[b] = N
            out.order[b, :n] = e.length.order
            out.peak[b], out.length[b] = e.length.peaks, e.length.length
            out.present[b], out.proven[b] = True, e.optimal
    return out


def problem(
    regions: Sequence[Region],
    machine: Machine,
    *,
    shape: PaddedShape | None = None,
    batch: int | None = None,
    starts: Sequence[str] = CHOOSABLE_STARTS,
    exact: Sequence | None = None,
    cache: CompileCache = COMPILED,
) -> ColonyProblem:
    """The batch problem of ``regions`` (on device).

    Args:
      regions: at least one region; all must fit ``shape``.
      machine: the target.
      shape: the padded shape (default: the bucket's `canonical_shape` joined with the regions').
      batch: B, at least ``len(regions)`` (default: the next power of two); the batch is padded
        with copies of region 0 marked not ``real``.
      starts: names from `CHOOSABLE_STARTS` the colony may start from and return.
      exact: per region a `jaxsched.exact.TwoPassResult` or None: its schedule becomes the
        ``"exact"`` start, its proven bounds tighten the colony's, and a proven optimum skips
        the colony.
      cache: where the jitted preparation is compiled.
    """
    regions = list(regions)
    bad = [s for s in starts if s not in CHOOSABLE_STARTS]
    if not regions or not starts or bad:
        raise InputError(
            f"problem: needs regions and starts from {CHOOSABLE_STARTS} "
            f"(got {len(regions)} regions, starts {tuple(starts)})"
        )
    B = next_pow2(len(regions)) if batch is None else int(batch)
    if len(regions) > B:
        raise InputError(f"problem: batch {B} is smaller than {len(regions)} regions")
    shape = shape or canonical_shape(common_shape(regions, machine))
    dev_np, shape = stack([*regions, *[regions[0]] * (B - len(regions))], machine, shape)
    dev = jax.tree.map(jnp.asarray, dev_np)
    m = machine.arrays()
    static = {"ready_slots": shape.ready, "issue_width": machine.issue_width}
    prep, orders, peaks, lengths, rp_lb, len_lb, cp = cache(_derive, static, dev, m)
    ex = _exact_fields([*(exact or []), *[None] * (B - len(exact or []))], B, shape.n, shape.files)
    allowed = np.array([name in starts for name in CHOOSABLE_STARTS])
    allowed = np.concatenate([np.tile(allowed, (B, 1)), ex.present[:, None]], axis=1)
    return ColonyProblem(
        dev=dev,
        prep=prep,
        machine=m,
        ids=jnp.asarray([fingerprint(r) for r in regions] + [0] * (B - len(regions)), jnp.uint32),
        real=jnp.asarray(np.arange(B) < len(regions)),
        start_order=jnp.concatenate([orders, jnp.asarray(ex.order)[:, None]], axis=1),
        start_peak=jnp.concatenate([peaks, jnp.asarray(ex.peak)[:, None]], axis=1),
        start_length=jnp.concatenate([lengths, jnp.asarray(ex.length)[:, None]], axis=1),
        start_allowed=jnp.asarray(allowed),
        rp_lower_bound=jnp.maximum(rp_lb, jnp.asarray(ex.rp_lower)),
        length_lower_bound=len_lb,
        critical_path=cp.astype(jnp.int32),
        proven=jnp.asarray(ex.proven),
        exact_rp_cost=jnp.asarray(ex.rp_cost),
        exact_length_bound=jnp.asarray(ex.length_bound),
    )
