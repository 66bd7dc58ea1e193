"""The pass machine of one region, written once: what happens when a pass starts and ends.

A region goes RP pass -> ILP pass -> done. The transitions are the same whichever driver runs
the iterations: the device core (`core`: every region of a batch under `vmap`, traced, ``xp =
jax.numpy``) and the host's pooled engine (`engine`: one region at a time between device calls,
``xp = numpy``). Each side only says how it computes two schedules (`Side`): the list schedule
under the RP limits of a cost ("list-target", recomputed when the RP pass ends) and the greedy
timing of an order.

* `first_pass`: the RP pass's start (`rules.rp_pass_start`);
* `after_rp`: the RP pass has ended: "list-target" recomputed at its cost, its best timed, and
  the ILP pass's start among the candidates (`rules.ilp_pass_start`);
* `finish`: the ILP pass has ended: the region's `Solution` among its candidates
  (`region_solution`, `rules.pick_results`).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any, NamedTuple

from jaxsched.colony.params import ColonyParams
from jaxsched.colony.passes import rules
from jaxsched.colony.problem import ColonyProblem

Array = Any  # a NumPy or JAX array


class Schedule(NamedTuple):
    """A schedule of one region (add leading axes for several)."""

    order: Array  # int32[N]: issue order, sentinel N after n
    peak: Array  # int32[F]: peak RP per file
    length: Array  # int32[]: its length issued in order (forced stalls only)


class PassSummary(NamedTuple):
    """A pass of one region, once it has ended (or its best so far)."""

    order: Array  # int32[N]: best order, sentinel N
    cost: Array  # int32[]: its cost (RP cost in the RP pass, length in the ILP pass)
    peak: Array  # int32[F]
    length: Array  # int32[]: its length issued in order (0 where not needed: the ILP pass)
    iterations: Array  # int32[]
    history_best: Array  # int32[I]: best cost after each iteration (-1: none)
    history_winner: Array  # int32[I]: iteration winner's cost (BIG: none valid)
    history_alive: Array  # int32[I]: ants that met the pass's RP limit


class Solution(NamedTuple):
    """Results of B regions (N instructions, F files, I = the config's max_iterations)."""

    order: Array  # int32[B, N]: issue order, sentinel N after n
    order_without_headroom: Array  # int32[B, N]: the order picked were the headroom rule
    #                                 off (`rules.frugal`): the shortest within the RP target
    cycles: Array  # int32[B, N]: issue cycle per instruction, padding 0
    length: Array  # int32[B]: cycles
    peak: Array  # int32[B, F]: peak RP per file (live-through included)
    rp_cost: Array  # int32[B]
    occupancy: Array  # int32[B]
    source: Array  # int32[B]: index into SOURCES
    iterations: Array  # int32[B, 2]: colony iterations of the RP and ILP pass
    history_best: Array  # int32[B, 2, I]: best cost after each iteration, per pass
    history_winner: Array  # int32[B, 2, I]: iteration winner's cost (BIG: none valid)
    history_alive: Array  # int32[B, 2, I]: ants that met the pass's RP limit
    rp_lower_bound: Array  # int32[B]
    length_lower_bound: Array  # int32[B]
    heuristic_length: Array  # int32[B]: the best list/input start by (RP cost, length)
    heuristic_occupancy: Array  # int32[B]
    optimal_rp: Array  # bool[B]: the RP cost is proven optimal
    optimal_length: Array  # bool[B]: the length is proven optimal (at this RP cost)


class Side(NamedTuple):
    """How one driver computes the schedules the transitions compare (one region)."""

    xp: ModuleType  # jax.numpy (device core) or numpy (host engine)
    retarget: Callable[[Array, Array], Schedule]  # (RP cost, an order meeting its limits)
    #   -> the list schedule under the RP limits of that cost
    timing: Callable[[Array], tuple[Array, Array]]  # order int32[N] -> (cycles int32[N],
    #   length int32[]) issued in order


class RpEnd(NamedTuple):
    """What the end of a region's RP pass decides."""

    retarget: Schedule  # "list-target" recomputed at the RP pass's cost
    rp: PassSummary  # the RP pass, its length (its best issued in order) filled in
    ilp: rules.IlpStart  # where the ILP pass starts, and the length bound
    pass_start: rules.PassStart  # how it starts (`iteration.start_pass`)


def summary(best: Any, *, cost: Array, length: Array, iterations: Array) -> PassSummary:
    """The summary of a pass from its state ``best`` (an `iteration.PassState`, or one row
    of it read back: ``best_order``, ``best_peak`` and the histories)."""
    return PassSummary(
        order=best.best_order,
        cost=cost,
        peak=best.best_peak,
        length=length,
        iterations=iterations,
        history_best=best.history_best,
        history_winner=best.history_winner,
        history_alive=best.history_alive,
    )


def starts(region: ColonyProblem, retarget: Schedule, xp: ModuleType) -> Schedule:
    """The starts of one region ([S] leading axis), "list-target" replaced by ``retarget``."""
    row = xp.arange(region.start_length.shape[0]) == rules.LIST_TARGET
    return Schedule(
        order=xp.where(row[:, None], retarget.order[None], region.start_order),
        peak=xp.where(row[:, None], retarget.peak[None], region.start_peak),
        length=xp.where(row, retarget.length, region.start_length),
    )


def initial_retarget(region: ColonyProblem) -> Schedule:
    """ "list-target" as the problem gives it (before the RP pass ends)."""
    return Schedule(
        order=region.start_order[rules.LIST_TARGET],
        peak=region.start_peak[rules.LIST_TARGET],
        length=region.start_length[rules.LIST_TARGET],
    )


def first_pass(
    region: ColonyProblem, params: ColonyParams, xp: ModuleType
) -> tuple[Array, rules.PassStart]:
    """(start index, RP pass start): the best allowed start by (RP cost, length)."""
    return rules.rp_pass_start(region, params, xp)


def after_rp(
    region: ColonyProblem,
    rp: PassSummary,
    length_lower_bound: Array,
    params: ColonyParams,
    side: Side,
) -> RpEnd:
    """The RP pass of ``region`` ended with ``rp`` (its ``length`` not yet known): "list-target"
    recomputed at its cost, its best timed, then the ILP pass from the starts and the RP pass's
    best (`rules.ilp_pass_start`)."""
    xp = side.xp
    retarget = side.retarget(rp.cost, rp.order)
    st = starts(region, retarget, xp)
    rp_length = side.timing(rp.order)[1]
    candidates = (
        xp.concatenate([st.order, rp.order[None]]),
        xp.concatenate([st.peak, rp.peak[None]]),
        xp.concatenate([st.length, xp.asarray(rp_length)[None]]),
    )
    ilp, pass_start = rules.ilp_pass_start(
        region, candidates, rp.cost, length_lower_bound, params, xp
    )
    return RpEnd(
        retarget=retarget, rp=rp._replace(length=rp_length), ilp=ilp, pass_start=pass_start
    )


def finish(
    region: ColonyProblem,
    retarget: Schedule,
    rp: PassSummary,
    ilp: PassSummary,
    ilp_start: rules.IlpStart,
    params: ColonyParams,
    side: Side,
) -> Solution:
    """One region's `Solution` (no batch axis) once its ILP pass ``ilp`` (started as
    ``ilp_start``) has ended: its candidates are the starts ("list-target" as ``retarget``),
    the RP pass's best (``rp``, with its length) and the ILP pass's best, timed here."""
    xp = side.xp
    st = starts(region, retarget, xp)
    ilp_length = side.timing(ilp.order)[1]
    candidates = (
        xp.concatenate([st.order, rp.order[None], ilp.order[None]]),
        xp.concatenate([st.peak, rp.peak[None], ilp.peak[None]]),
        xp.concatenate([st.length, xp.stack([xp.asarray(rp.length), xp.asarray(ilp_length)])]),
    )
    return region_solution(
        region, candidates, ilp_start=ilp_start, rp=rp, ilp=ilp, params=params, side=side
    )


def region_solution(
    region: ColonyProblem,
    candidates: tuple,
    *,
    ilp_start: rules.IlpStart,
    rp: PassSummary,
    ilp: PassSummary,
    params: ColonyParams,
    side: Side,
) -> Solution:
    """One region's `Solution` among its ``candidates`` (orders [C, N], peaks [C, F], lengths
    [C]: the starts, the RP pass's best, the ILP pass's best; see `rules.pick_results`)."""
    xp = side.xp
    orders, peaks, lengths = candidates
    lut, target = region.machine.lut, region.machine.target_occupancy
    cost = rules.rp_costs(peaks, lut, target, xp)
    occ = rules.occupancies(peaks, lut, xp)
    allowed = xp.concatenate([region.start_allowed, xp.asarray([True, True])])
    pick, free = rules.pick_results(
        cost=cost,
        occupancy=occ,
        length=lengths,
        peak=peaks,
        limit=rules.limits(lut, target, rp.cost, xp),
        allowed=allowed,
        ilp_start=ilp_start.start,
        ilp_start_length=ilp_start.start_length,
        rp_target=rp.cost,
        proven=region.proven,
        params=params,
        xp=xp,
    )
    cycles, length = side.timing(orders[pick])
    heur = rules.heuristic_pick(cost, lengths, allowed, xp)
    proven = region.proven & (pick == rules.EXACT)
    length_lower_bound = ilp_start.length_lower_bound
    return Solution(
        order=orders[pick],
        order_without_headroom=orders[free],
        cycles=cycles,
        length=length,
        peak=peaks[pick],
        rp_cost=cost[pick],
        occupancy=occ[pick],
        source=xp.asarray(pick).astype(xp.int32),
        iterations=xp.stack([rp.iterations, ilp.iterations]).astype(xp.int32),
        history_best=xp.stack([rp.history_best, ilp.history_best]),
        history_winner=xp.stack([rp.history_winner, ilp.history_winner]),
        history_alive=xp.stack([rp.history_alive, ilp.history_alive]),
        rp_lower_bound=region.rp_lower_bound,
        length_lower_bound=length_lower_bound,
        heuristic_length=lengths[heur],
        heuristic_occupancy=occ[heur],
        optimal_rp=(cost[pick] <= region.rp_lower_bound) | proven,
        optimal_length=(length <= length_lower_bound) | proven,
    )
