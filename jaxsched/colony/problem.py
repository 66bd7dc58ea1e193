"""The colony's batch problem: padded regions of one bucket with their bounds and starting
schedules, built on the host once (`problem`) and solved on device (`jaxsched.colony.core`).

Everything is computed on the host (NumPy): the padding, the exact search's results if any,
and what `jaxsched.colony.derive` derives per region (the construction tables, the
list-scheduler starts, their peaks and lengths, both lower bounds), equal bit for bit to the
JAX functions on the same arrays; so preparing a problem compiles nothing. `problem` returns
it on device, `problem_host` as NumPy arrays (the host driver's form).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.colony.construction.prepared import Prepared
from jaxsched.colony.derive import LATENCY_PRIORITY, Derived, derive_host
from jaxsched.errors import InputError
from jaxsched.machines.model import Machine, MachineArrays
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
__all__ = [
    "CHOOSABLE_STARTS",
    "LATENCY_PRIORITY",
    "SOURCES",
    "STARTS",
    "ColonyProblem",
    "canonical_shape",
    "problem",
    "problem_host",
]


class ColonyProblem(NamedTuple):
    """B padded regions of one bucket (N instructions, F register files, S = len(STARTS)).

    A pytree of arrays: pass it to jitted functions, `vmap` over other arguments. Region b's
    random stream is ``fold_in(key, ids[b])``, so its result does not depend on the batch.
    """

    dev: DeviceRegion  # [B, ...]: the padded regions
    prep: Prepared  # [B, ...]: their construction tables
    machine: MachineArrays  # the machine (not batched)
    ids: jax.Array  # uint32[B]: region fingerprints (`jaxsched.problem.fingerprint`)
    real: jax.Array  # bool[B]: False for batch padding (copies of region 0)
    start_order: jax.Array  # int32[B, S, N]: starting orders, sentinel N after n
    start_peak: jax.Array  # int32[B, S, F]: their peak RP per file
    start_length: jax.Array  # int32[B, S]: their length issued in order (forced stalls only)
    start_allowed: jax.Array  # bool[B, S]: the colony may start from (and return) this one
    rp_lower_bound: jax.Array  # int32[B]: RP cost lower bound
    length_lower_bound: jax.Array  # int32[B]: length lower bound (cycles, latency pass)
    critical_path: jax.Array  # int32[B]: latency-weighted critical path length (cycles)
    proven: jax.Array  # bool[B]: the exact start is proven optimal (the colony is skipped)
    exact_rp_cost: jax.Array  # int32[B]: RP cost under which ``exact_length_bound`` holds
    #                             (-1: none)
    exact_length_bound: jax.Array  # int32[B]: proven length bound at ``exact_rp_cost``

    @property
    def batch(self) -> int:
        return int(self.ids.shape[0])


def canonical_shape(shape: PaddedShape) -> PaddedShape:
    """The shape every region of ``shape.n``'s bucket normally fits in, so that one bucket
    compiles once however its regions vary: registers >= 2N (regions with more registers than
    instructions are common: live-ins, several defs), 8 successors and predecessors, 4 uses,
    2 defs, ready slots = N (decisions only look at the occupied slots, see
    `decision.slot_widths`). Larger regions of the bucket still grow it."""
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


def _exact_fields(exact: Sequence, num_regions: int, num_instrs: int, num_files: int) -> _Exact:
    """Pack `jaxsched.exact.TwoPassResult`s (or None) per region into arrays."""
    out = _Exact(
        order=np.tile(np.arange(num_instrs, dtype=np.int32), (num_regions, 1)),
        peak=np.zeros((num_regions, num_files), np.int32),
        length=np.zeros(num_regions, np.int32),
        present=np.zeros(num_regions, bool),
        proven=np.zeros(num_regions, bool),
        rp_lower=np.zeros(num_regions, np.int32),
        rp_cost=np.full(num_regions, -1, np.int32),
        length_bound=np.zeros(num_regions, np.int32),
    )
    for b, e in enumerate(exact):
        if e is None:
            continue
        out.rp_lower[b] = e.rp.lower[0]
        if e.rp.optimal and e.length.lower:
            out.rp_cost[b], out.length_bound[b] = e.rp.rp_cost, e.length.lower[0]
        if e.length.order is not None:
            n = len(e.length.order)
            out.order[b] = num_instrs
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
) -> ColonyProblem:
    """The batch problem of ``regions`` (on device): `problem_host`'s arrays as JAX arrays.

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
    """
    prob = problem_host(regions, machine, shape=shape, batch=batch, starts=starts, exact=exact)
    return jax.tree.map(jnp.asarray, prob)


def problem_host(
    regions: Sequence[Region],
    machine: Machine,
    *,
    shape: PaddedShape | None = None,
    batch: int | None = None,
    starts: Sequence[str] = CHOOSABLE_STARTS,
    exact: Sequence | None = None,
) -> ColonyProblem:
    """`problem` as NumPy arrays, computed on the host (`derive.derive_host` per region;
    the batch padding copies region 0's results). Arguments as in `problem`."""
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
    dev, shape = stack([*regions, *[regions[0]] * (B - len(regions))], machine, shape)
    m = MachineArrays(
        lut=np.asarray(machine.occupancy_lut, np.int32),
        target_occupancy=np.int32(machine.target_occupancy),
        issue_width=np.int32(machine.issue_width),
    )
    kw = dict(ready_slots=shape.ready, issue_width=machine.issue_width)
    rows = [derive_host(_row(dev, b), m, **kw) for b in range(len(regions))]
    der = jax.tree.map(lambda *xs: np.stack([*xs, *[xs[0]] * (B - len(xs))]), *rows)
    return _assemble(regions, dev, m, der, starts, exact or [], B, shape)


def _row(tree, index: int):
    """Row ``index`` of every array of a batched pytree."""
    return jax.tree.map(lambda leaf: leaf[index], tree)


def _assemble(
    regions: list[Region],
    dev: DeviceRegion,
    machine_arrays: MachineArrays,
    der: Derived,
    starts: Sequence[str],
    exact: Sequence,
    num_regions: int,
    shape: PaddedShape,
) -> ColonyProblem:
    """The `ColonyProblem` (NumPy) of the padded batch ``dev``, its derived arrays ``der``
    ([B, ...]) and the exact search's results."""
    ex = _exact_fields(
        [*exact, *[None] * (num_regions - len(exact))], num_regions, shape.n, shape.files
    )
    allowed = np.array([name in starts for name in CHOOSABLE_STARTS])
    allowed = np.concatenate([np.tile(allowed, (num_regions, 1)), ex.present[:, None]], axis=1)
    ids = [fingerprint(r) for r in regions] + [0] * (num_regions - len(regions))
    return ColonyProblem(
        dev=dev,
        prep=der.prep,
        machine=machine_arrays,
        ids=np.asarray(ids, np.uint32),
        real=np.arange(num_regions) < len(regions),
        start_order=np.concatenate([der.start_order, ex.order[:, None]], axis=1),
        start_peak=np.concatenate([der.start_peak, ex.peak[:, None]], axis=1),
        start_length=np.concatenate([der.start_length, ex.length[:, None]], axis=1),
        start_allowed=allowed,
        rp_lower_bound=np.maximum(der.rp_lower_bound, ex.rp_lower),
        length_lower_bound=der.length_lower_bound,
        critical_path=der.critical_path,
        proven=ex.proven,
        exact_rp_cost=ex.rp_cost,
        exact_length_bound=ex.length_bound,
    )
