"""The colony's decisions around its passes, as array functions of NumPy or `jax.numpy`.

Which start a pass begins from, whether it runs at all, and which candidate a region returns
are the same rules whether they run inside the device core (`core`, ``xp = jax.numpy`` on
traced arrays, under `vmap`) or on the host between device calls (`engine`, ``xp = numpy``).
Each function takes one region (no batch axis) and the array namespace ``xp``; the schedules
they compare (list schedules, greedy timings) are computed by the caller on its own side.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, NamedTuple

from jaxsched.colony.construction.prepared import BIG
from jaxsched.colony.params import ColonyParams, no_improvement_limit
from jaxsched.colony.problem import STARTS, ColonyProblem
from jaxsched.machines.model import RP_UNLIMITED, occupancy_jax, rp_cost_jax, rp_limits

Array = Any  # a NumPy or JAX array
#: Candidate indices (see `problem.SOURCES`): the starts, then the colony's two passes.
LIST_TARGET, EXACT = STARTS.index("list-target"), STARTS.index("exact")
COLONY_RP, COLONY = len(STARTS), len(STARTS) + 1


class PassStart(NamedTuple):
    """How a pass of one region starts (`iteration.start_pass` builds its state from this)."""

    timed: Array  # bool[]: ILP pass (True) or RP pass (False)
    skip: Array  # bool[]: the pass does not run (its start is final)
    order: Array  # int32[N]: the starting order, sentinel N after n
    cost: Array  # int32[]: its cost in the pass (RP cost, or length in the ILP pass)
    peak: Array  # int32[F]: its peak RP per file
    stalls: Array  # int32[]: its stall cycles
    stall_budget: Array  # f32[]: G (1 in the RP pass)
    lower_bound: Array  # int32[]: the pass ends when its best cost reaches this
    rp_target: Array  # int32[]: RP cost an ant must not exceed (BIG in the RP pass)
    patience: Array  # int32[]: iterations without improvement before the pass ends


class IlpStart(NamedTuple):
    """Where the ILP pass of one region starts (what its result is compared with)."""

    start: Array  # int32[]: the candidate it starts from (index into the candidates)
    start_length: Array  # int32[]: that candidate's length
    length_lower_bound: Array  # int32[]: the length bound, tightened by a proven exact one


def lex_argmin(primary: Array, secondary: Array, allowed: Array, xp: ModuleType) -> Array:
    """Index of the smallest (primary, secondary, index) among ``allowed`` (1-D, some True)."""
    p = xp.where(allowed, primary, BIG)
    s = xp.where(allowed & (p == p.min()), secondary, BIG)
    idx = xp.arange(primary.shape[0], dtype=xp.int32)
    return xp.where(allowed & (p == p.min()) & (s == s.min()), idx, primary.shape[0]).min()


def rp_costs(peaks: Array, lut: Array, target: Array, xp: ModuleType) -> Array:
    """int32[...]: the RP cost of per-file peaks (int32[..., F])."""
    return rp_cost_jax(peaks, lut, target, xp=xp)


def rp_pass_start(
    region: ColonyProblem, params: ColonyParams, xp: ModuleType
) -> tuple[Array, PassStart]:
    """(start index, RP pass start) of region ``region``: the best allowed start by (RP cost,
    length); the pass is skipped for padding, a proven exact start, or a start meeting the RP
    cost bound."""
    cost = rp_costs(region.start_peak, region.machine.lut, region.machine.target_occupancy, xp)
    s1 = lex_argmin(cost, region.start_length, region.start_allowed, xp)
    return s1, PassStart(
        timed=xp.asarray(False),
        skip=~region.real | region.proven | (cost[s1] <= region.rp_lower_bound),
        order=region.start_order[s1],
        cost=cost[s1].astype(xp.int32),
        peak=region.start_peak[s1],
        stalls=xp.asarray(0, xp.int32),
        stall_budget=xp.asarray(1.0, xp.float32),
        lower_bound=xp.asarray(region.rp_lower_bound, xp.int32),
        rp_target=xp.asarray(BIG, xp.int32),
        patience=no_improvement_limit(region.prep.n, params.patience_scale, xp=xp),
    )


def ilp_pass_start(
    region: ColonyProblem,
    candidates: tuple[Array, Array, Array],
    rp_target: Array,
    length_lower_bound: Array,
    params: ColonyParams,
    xp: ModuleType,
) -> tuple[IlpStart, PassStart]:
    """(where it starts, how it starts): the ILP pass of region ``region`` after its RP pass
    reached RP cost ``rp_target``. It starts from the shortest allowed candidate within that
    cost (``candidates``: orders [C, N], peaks [C, F] and lengths [C] issued in order of the
    starts, "list-target" recomputed at ``rp_target``, then the RP pass's best), with the stall
    budget ``G = min(start stalls, floor(1.2 max(LB, CP+1)) - n)``. It is skipped when the start
    meets the length bound or is within the cycle threshold of it."""
    orders, peaks, lengths = candidates
    m, n = region.machine, region.prep.n
    cost = rp_costs(peaks, m.lut, m.target_occupancy, xp)
    allowed = xp.concatenate([region.start_allowed, xp.asarray([True])])
    s2 = lex_argmin(lengths, xp.zeros_like(lengths), allowed & (cost <= rp_target), xp)
    s2_len = lengths[s2]
    exact_ok = rp_target == region.exact_rp_cost
    len_lb = xp.where(
        exact_ok, xp.maximum(length_lower_bound, region.exact_length_bound), length_lower_bound
    )
    ideal = (n + m.issue_width - 1) // m.issue_width
    f32 = xp.float32  # explicit: NumPy would compute float32 x int32 in float64
    span = xp.maximum(len_lb, region.critical_path + 1).astype(f32)
    g = xp.floor(params.stall_budget_factor * span) - xp.asarray(n).astype(f32)
    close = xp.minimum(params.cycle_threshold, params.cycle_threshold_fraction * len_lb.astype(f32))
    start = PassStart(
        timed=xp.asarray(True),
        skip=~region.real | region.proven | (s2_len <= len_lb) | (s2_len - len_lb <= close),
        order=orders[s2],
        cost=s2_len,
        peak=peaks[s2],
        stalls=xp.maximum(s2_len - ideal, 0),
        stall_budget=xp.minimum(s2_len - ideal, g).astype(f32),
        lower_bound=len_lb,
        rp_target=xp.asarray(rp_target, xp.int32),
        patience=no_improvement_limit(n, params.patience_scale, xp=xp),
    )
    return IlpStart(start=s2, start_length=s2_len, length_lower_bound=len_lb), start


def pick_result(**choice) -> Array:
    """`pick_results`'s first index: the region's result."""
    return pick_results(**choice)[0]


def pick_results(
    *,
    cost: Array,
    occupancy: Array,
    length: Array,
    peak: Array,
    limit: Array,
    allowed: Array,
    ilp_start: Array,
    ilp_start_length: Array,
    rp_target: Array,
    proven: Array,
    params: ColonyParams,
    xp: ModuleType,
) -> tuple[Array, Array]:
    """(result, result were the headroom rule off): indices among a region's candidates
    (`problem.SOURCES`: the starts, the RP pass's best, the ILP pass's best; ``cost``,
    ``occupancy``, ``length``, ``allowed`` [C], ``peak`` [C, F]; ``limit`` [F] the RP limits
    of ``rp_target``, `rp_limits`): the ILP pass's best if shorter than its start within the
    RP target, else that start; the revert filter (a small occupancy gain bought with many
    cycles keeps the shortest start); the headroom rule (`frugal`; not in the second index);
    the exact schedule when better or proven; never worse than the input order."""
    colony_ok = (length[COLONY] < ilp_start_length) & (cost[COLONY] <= rp_target)
    pick = xp.where(colony_ok, COLONY, ilp_start)
    starts = allowed & (xp.arange(cost.shape[0]) < EXACT)
    shortest = lex_argmin(length, cost, starts, xp)
    gain = occupancy[COLONY] - occupancy[shortest]
    loss = length[COLONY] - length[shortest]
    revert = (gain > 0) & (gain <= params.occ_gain) & (loss > params.max_len_loss)
    free = xp.where((pick == COLONY) & revert, shortest, pick)
    ok = allowed & (cost <= rp_target)
    pick = frugal(
        free, peak=peak, length=length, within_target=ok, limit=limit, params=params, xp=xp
    )

    def better(first, second):
        return (cost[first] < cost[second]) | (
            (cost[first] == cost[second]) & (length[first] < length[second])
        )

    def final(p):
        p = xp.where(allowed[EXACT] & (better(EXACT, p) | proven), EXACT, p)
        return xp.where(better(0, p), 0, p)

    return final(pick), final(free)


def frugal(
    pick: Array,
    *,
    peak: Array,
    length: Array,
    within_target: Array,
    limit: Array,
    params: ColonyParams,
    xp: ModuleType,
) -> Array:
    """The headroom rule: ``pick``, or the shortest candidate outside the headroom when
    ``pick`` (one of ``within_target``: those within the RP target, whose per-file limits are
    ``limit`` int32[F]) takes registers in a file's headroom (the top ``rp_headroom`` of its limit)
    above the frugal candidate's peak (the lowest summed peak among ``within_target``), unless it is
    shorter than the frugal one by a fraction ``g`` of its length and takes at most
    ``headroom_allowance * g`` of the limit there (2 by default; 0 on the MIR path: none,
    `jaxsched.mir_files.MIR_HEADROOM_ALLOWANCE`). Registers below the headroom are free: the model's
    occupancy depends only on the peak, and the allocator, which needs more than the model's peak,
    loses the level when the peak ends near the step (docs/colony.md)."""
    f = lex_argmin(peak.sum(axis=-1), length, within_target, xp)
    bounded = (limit > 0) & (limit < RP_UNLIMITED)
    lim = xp.where(bounded, limit, 1).astype(xp.float32)
    base = xp.maximum(peak[f].astype(xp.float32), xp.floor(lim * (1 - params.rp_headroom)))
    over = xp.where(bounded, xp.maximum(peak.astype(xp.float32) - base, 0) / lim, 0).max(-1)
    alt = lex_argmin(length, peak.sum(axis=-1), within_target & (over <= 0), xp)
    gain = (length[f] - length[pick]).astype(xp.float32)
    gain = gain / xp.maximum(length[f], 1).astype(xp.float32)
    keep = over[pick] <= params.headroom_allowance * gain
    return xp.where(within_target[pick] & (over[pick] > 0) & ~keep, alt, pick)


def limits(lut: Array, target: Array, cost: Array, xp: ModuleType) -> Array:
    """int32[F]: the per-file RP limits of RP cost ``cost`` (`rp_limits`)."""
    return rp_limits(lut, target, cost, xp=xp)


def heuristic_pick(cost: Array, length: Array, allowed: Array, xp: ModuleType) -> Array:
    """Index of the best start by (RP cost, length), the exact one aside (the "heuristic"
    a result is compared with)."""
    return lex_argmin(cost, length, allowed & (xp.arange(cost.shape[0]) < EXACT), xp)


def occupancies(peaks: Array, lut: Array, xp: ModuleType) -> Array:
    """int32[...]: the occupancy of per-file peaks (int32[..., F])."""
    return occupancy_jax(peaks, lut, xp=xp)
