"""The colony as pure device functions: `init`, `step`, `solve`, `solution`.

A state machine per region of a `ColonyProblem` (batch axis B), all on device:

* ``init``: each region's RP pass starts from its best allowed start by (RP cost, length);
* ``step``: one iteration of every region's current pass (all ants of all regions at once);
  a region whose pass ends moves on: after the RP pass its ILP pass starts from the shortest
  candidate meeting the RP pass's cost, with the stall budget G; after the ILP pass it is done;
* ``solution``: the filters and the revert rule pick each region's result, never worse than
  its input order;
* ``run``: up to k steps (a host can drive the loop in chunks and report progress);
* ``solve``: ``init``, ``step`` until every region is done, ``solution``.

Passes that cannot improve are skipped (the start meets the pass's lower bound, the exact search
proved the start optimal, or with the cycle threshold the ILP start is close to its bound).
Everything is `jit`-, `vmap`- (e.g. over stacked `ColonyParams`) and `scan`-compatible; a region's
result does not depend on the other regions of the batch.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxsched.colony.construction.prepared import BIG
from jaxsched.colony.params import ColonyConfig, ColonyParams
from jaxsched.colony.passes import rules, transitions
from jaxsched.colony.passes.iteration import PassState, iterate, running, start_pass
from jaxsched.colony.passes.transitions import PassSummary, Schedule, Solution
from jaxsched.colony.problem import ColonyProblem
from jaxsched.heuristics.list_scheduler import stall_schedule, target_schedule
from jaxsched.machines.model import rp_limits

#: `ColonyState.phase` values.
RP_PASS, ILP_PASS, DONE = 0, 1, 2


class ColonyState(NamedTuple):
    """Colony state of B regions (every field has the leading batch axis)."""

    phase: jax.Array  # int32[B]: RP_PASS, ILP_PASS or DONE
    key: jax.Array  # key[B]: the region's key, fold_in(caller's key, fingerprint)
    current: PassState  # [B, ...]: the current (or last) pass
    rp: PassSummary  # [B, ...]: the RP pass, once finished
    retarget: Schedule  # [B, ...]: the "list-target" start, recomputed at the RP pass's cost
    #                     when the ILP pass starts
    start: jax.Array  # int32[B, 2]: candidate each pass started from (index into SOURCES)
    start_length: jax.Array  # int32[B]: length of the ILP pass's start
    length_lower_bound: jax.Array  # int32[B]: possibly tightened by the exact search


def _problem_axes(problem: ColonyProblem) -> ColonyProblem:
    """`vmap` axes of a problem: everything per region except the machine."""
    axes = jax.tree.map(lambda _: 0, problem)
    return axes._replace(machine=jax.tree.map(lambda _: None, problem.machine))


def _per_region(fn, problem: ColonyProblem, *args):
    """``fn(problem_b, *args_b)`` for every region b (args batched on axis 0)."""
    return jax.vmap(fn, in_axes=(_problem_axes(problem), *[0] * len(args)))(problem, *args)


def check_problem(problem: ColonyProblem) -> None:
    """The fields of ``problem`` agree on the batch ``B``, the instruction bucket ``N``, the
    start count ``S`` and the file count ``F`` (checked when traced: a clear error at the
    entry point instead of a gather out of range deep in a step)."""
    import chex  # here, not at the top: a run whose executables load from the store never
    #              traces, and the CLI's start-up stays without chex's 0.1 s import

    batch, n_instr = problem.dev.valid.shape
    starts, files = problem.start_peak.shape[1:]
    chex.assert_shape(problem.prep.succ, (batch, n_instr + 1, None))
    chex.assert_shape(problem.prep.live_through, (batch, files))
    chex.assert_shape(problem.start_order, (batch, starts, n_instr))
    chex.assert_shape([problem.start_length, problem.start_allowed], (batch, starts))
    chex.assert_shape(
        [problem.ids, problem.real, problem.rp_lower_bound, problem.length_lower_bound],
        (batch,),
    )


def select_rows(mask: jax.Array, new, old):
    """``new`` where ``mask`` (bool[B]) else ``old``, for pytrees with a leading axis B."""

    def sel(new_leaf, old_leaf):
        return jnp.where(mask.reshape(mask.shape + (1,) * (new_leaf.ndim - 1)), new_leaf, old_leaf)

    return jax.tree.map(sel, new, old)


def _retarget(region: ColonyProblem, cost: jax.Array, feasible: jax.Array) -> Schedule:
    """The list schedule under the per-file RP limits of RP cost ``cost``
    (`target_schedule`, ``feasible`` an order meeting them)."""
    lut, iw, target = (
        region.machine.lut,
        region.machine.issue_width,
        region.machine.target_occupancy,
    )
    ls = target_schedule(region.dev, lut, rp_limits(lut, target, cost), target, feasible, iw)
    _, length = stall_schedule(region.dev, ls.order, iw)
    return Schedule(order=ls.order, peak=ls.peak, length=length)


def _side(region: ColonyProblem) -> transitions.Side:
    """How the device computes the schedules the pass transitions compare."""
    timing = partial(stall_schedule, region.dev, issue_width=region.machine.issue_width)
    return transitions.Side(xp=jnp, retarget=partial(_retarget, region), timing=timing)


def _init_region(region: ColonyProblem, key: jax.Array, params: ColonyParams, config: ColonyConfig):
    """One region's state: the RP pass from the best allowed start by (RP cost, length)."""
    s1, start = transitions.first_pass(region, params, jnp)
    rp = start_pass(**start._asdict(), key=jax.random.fold_in(key, 1), params=params, config=config)
    big = jnp.int32(BIG)
    return ColonyState(
        phase=jnp.int32(RP_PASS),
        key=key,
        current=rp,
        rp=transitions.summary(rp, cost=big, length=big, iterations=jnp.int32(0)),
        retarget=transitions.initial_retarget(region),
        start=jnp.stack([s1, s1]),
        start_length=region.start_length[s1],
        length_lower_bound=region.length_lower_bound,
    )


def _start_ilp(
    region: ColonyProblem, region_state: ColonyState, params: ColonyParams, config: ColonyConfig
):
    """One region after its RP pass: the ILP pass starts (`transitions.after_rp`)."""
    done = region_state.current
    rp = transitions.summary(
        done, cost=done.best_cost, length=jnp.int32(0), iterations=done.iteration
    )
    end = transitions.after_rp(region, rp, region_state.length_lower_bound, params, _side(region))
    key = jax.random.fold_in(region_state.key, 2)
    ilp = start_pass(**end.pass_start._asdict(), key=key, params=params, config=config)
    return region_state._replace(
        phase=jnp.int32(ILP_PASS),
        current=ilp,
        rp=end.rp,
        retarget=end.retarget,
        start=region_state.start.at[1].set(end.ilp.start),
        start_length=end.ilp.start_length,
        length_lower_bound=end.ilp.length_lower_bound,
    )


def _advance(
    state: ColonyState, problem: ColonyProblem, params: ColonyParams, config: ColonyConfig
) -> ColonyState:
    """Move every region whose pass has ended to its next pass (or to DONE)."""
    live = jax.vmap(partial(running, config=config))(state.current)
    ended = (state.phase < DONE) & ~live

    def move(states: ColonyState) -> ColonyState:
        ilp = _per_region(partial(_start_ilp, params=params, config=config), problem, states)
        states = select_rows(ended & (states.phase == RP_PASS), ilp, states)
        live = jax.vmap(partial(running, config=config))(states.current)
        return states._replace(
            phase=jnp.where(states.phase < DONE, jnp.where(live, states.phase, DONE), DONE)
        )

    return lax.cond(ended.any(), move, lambda unchanged: unchanged, state)


def init(
    key: jax.Array,
    problem: ColonyProblem,
    params: ColonyParams,
    *,
    config: ColonyConfig | None = None,
) -> ColonyState:
    """The colony state of every region of ``problem`` before its first iteration."""
    check_problem(problem)
    config = config or ColonyConfig()
    keys = jax.vmap(lambda region_id: jax.random.fold_in(key, region_id))(problem.ids)
    state = _per_region(partial(_init_region, params=params, config=config), problem, keys)
    return _advance(state, problem, params, config)


def step(
    state: ColonyState,
    problem: ColonyProblem,
    params: ColonyParams,
    *,
    config: ColonyConfig | None = None,
    ant_axis: str | None = None,
) -> ColonyState:
    """One iteration of every region's current pass (regions that are done stay as they are).
    ``ant_axis``: inside `jax.shard_map`, the mesh axis each region's ants are split over
    (whole wavefronts per device, `jaxsched.colony.drivers.sharding`); None: all ants here. It
    changes
    where the ants run, never what they build."""
    check_problem(problem)
    config = config or ColonyConfig()
    num_steps = jnp.max(problem.prep.n)
    live = jax.vmap(partial(running, config=config))(state.current) & (state.phase < DONE)

    def one(region: ColonyProblem, pass_state: PassState, active: jax.Array) -> PassState:
        return iterate(
            pass_state,
            region.prep,
            region.machine,
            params,
            num_steps,
            config=config,
            batch_axis="regions",
            ant_axis=ant_axis,
            active=active,
        )

    axes = (_problem_axes(problem), 0, 0)
    new = jax.vmap(one, in_axes=axes, axis_name="regions")(problem, state.current, live)
    state = state._replace(current=select_rows(live, new, state.current))
    return _advance(state, problem, params, config)


def run(
    state: ColonyState,
    problem: ColonyProblem,
    params: ColonyParams,
    steps: jax.Array,
    *,
    config: ColonyConfig | None = None,
    ant_axis: str | None = None,
) -> ColonyState:
    """Up to ``steps`` (traced) iterations: `step` until every region is done or the count
    is reached. Running ``a`` then ``b`` steps equals running ``a + b``. ``ant_axis``: as in
    `step`."""
    config = config or ColonyConfig()

    def cond(carry):
        s, k = carry
        return (s.phase < DONE).any() & (k < steps)

    def body(carry):
        s, k = carry
        return step(s, problem, params, config=config, ant_axis=ant_axis), k + 1

    return lax.while_loop(cond, body, (state, jnp.int32(0)))[0]


def _solution_region(
    region: ColonyProblem, region_state: ColonyState, params: ColonyParams
) -> Solution:
    """One region's result once its ILP pass has ended (`transitions.finish`)."""
    ilp = region_state.current
    iterations = jnp.where(region_state.phase == DONE, ilp.iteration, 0)
    ilp_start = rules.IlpStart(
        start=region_state.start[1],
        start_length=region_state.start_length,
        length_lower_bound=region_state.length_lower_bound,
    )
    return transitions.finish(
        region,
        region_state.retarget,
        region_state.rp,
        transitions.summary(ilp, cost=ilp.best_cost, length=jnp.int32(0), iterations=iterations),
        ilp_start,
        params,
        _side(region),
    )


def solution(state: ColonyState, problem: ColonyProblem, params: ColonyParams) -> Solution:
    """Each region's result (call when every region is done; see `solve`)."""
    check_problem(problem)
    return _per_region(partial(_solution_region, params=params), problem, state)


def solve(
    key: jax.Array,
    problem: ColonyProblem,
    params: ColonyParams,
    *,
    config: ColonyConfig | None = None,
) -> Solution:
    """Both passes for every region of ``problem``, entirely on device.

    ``jax.jit(solve, static_argnames="config")`` compiles once per bucket shape, batch size and
    config; ``jax.vmap(solve, in_axes=(None, None, 0))`` runs stacked parameter settings.
    """
    config = config or ColonyConfig()
    state = init(key, problem, params, config=config)
    # Each pass stops at the iteration cap, so this many steps finish every region.
    state = run(state, problem, params, jnp.int32(2 * config.max_iterations + 2), config=config)
    return solution(state, problem, params)
