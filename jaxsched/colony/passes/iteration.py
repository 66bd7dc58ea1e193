"""One colony iteration of one pass on one region (vmap over the regions of a batch).

Each iteration: all ants construct (`dispatch.construct`: the `lax` path or the fused kernel),
the iteration winner is found by a reduction, the pheromone evaporates and the winner's links
get a deposit, the table is clamped, and the global best, the stall budget and the history are
updated. A pass runs while
`running`: the best is above the pass's lower bound, fewer than ``patience`` iterations passed
without improvement (an iteration in which every ant died counts as none while the caution
can grow, as the whole patience once it cannot), and the iteration cap is not reached.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxsched.colony.construction import dispatch
from jaxsched.colony.construction.antstate import AntResults, StepInputs
from jaxsched.colony.construction.prepared import BIG, Prepared, static_key
from jaxsched.colony.drivers.antshard import ant_total, ant_winner
from jaxsched.colony.params import ColonyConfig, ColonyParams, pass_params
from jaxsched.colony.passes import pheromone
from jaxsched.machines.model import RP_UNLIMITED, MachineArrays, rp_cost_jax, rp_limits


class PassConstants(NamedTuple):
    """What a pass fixes when it starts; its iterations never change it."""

    timed: jax.Array  # bool[]: ILP pass (True) or RP pass (False)
    skip: jax.Array  # bool[]: the pass does not run (its start is final)
    heuristic: jax.Array  # f32[]: the start's cost (deposit and initial pheromone reference)
    lower_bound: jax.Array  # int32[]: the pass ends when the best cost reaches it
    rp_target: jax.Array  # int32[]: RP cost an ant must not exceed (ILP pass)
    patience: jax.Array  # int32[]: iterations without improvement before the pass ends
    key: jax.Array  # key[]: the pass's key; iteration i uses fold_in(key, i)


class PassState(NamedTuple):
    """The current pass of one region: its constants, then what its iterations evolve
    (pheromone, global best, counters, history)."""

    constants: PassConstants
    tau: jax.Array  # f32|f16[N + 1, N + 1]: pheromone, row N = start, column N = dummy
    #                   (dtype: the config's pheromone_dtype)
    best_order: jax.Array  # int32[N]: global best order, sentinel N after n
    best_cost: jax.Array  # int32[]: RP cost (RP pass) or length (ILP pass)
    best_peak: jax.Array  # int32[F]
    best_stalls: jax.Array  # int32[]
    stall_budget: jax.Array  # f32[]: G (ILP pass)
    iteration: jax.Array  # int32[]: iterations run
    no_improve: jax.Array  # int32[]
    caution: jax.Array  # int32[]: iterations so far in which every ant died (see soft_limit)
    history_best: jax.Array  # int32[I]: global best cost after each iteration (-1 unused)
    history_winner: jax.Array  # int32[I]: iteration winner's cost (BIG: no valid ant)
    history_alive: jax.Array  # int32[I]: ants that met the RP limit in each iteration


def start_pass(
    *,
    timed: jax.Array,
    skip: jax.Array,
    order: jax.Array,
    cost: jax.Array,
    peak: jax.Array,
    stalls: jax.Array,
    stall_budget: jax.Array,
    lower_bound: jax.Array,
    rp_target: jax.Array,
    patience: jax.Array,
    key: jax.Array,
    params: ColonyParams,
    config: ColonyConfig,
) -> PassState:
    """A pass starting from a schedule (``order`` int32[N], its ``cost``, ``peak``, ``stalls``),
    its pheromone table `pheromone.initial`."""
    heur = cost.astype(jnp.float32)
    hist = jnp.full(config.max_iterations, -1, jnp.int32)
    return PassState(
        constants=PassConstants(
            timed=jnp.asarray(timed, bool),
            skip=jnp.asarray(skip, bool),
            heuristic=heur,
            lower_bound=jnp.asarray(lower_bound, jnp.int32),
            rp_target=jnp.asarray(rp_target, jnp.int32),
            patience=jnp.asarray(patience, jnp.int32),
            key=key,
        ),
        tau=pheromone.initial(order, heur, params, config.pheromone_dtype),
        best_order=order,
        best_cost=jnp.asarray(cost, jnp.int32),
        best_peak=peak,
        best_stalls=jnp.asarray(stalls, jnp.int32),
        stall_budget=jnp.maximum(stall_budget, 1.0).astype(jnp.float32),
        iteration=jnp.int32(0),
        no_improve=jnp.int32(0),
        caution=jnp.int32(0),
        history_best=hist,
        history_winner=hist,
        history_alive=hist,
    )


def running(pass_state: PassState, config: ColonyConfig) -> jax.Array:
    """bool[]: the pass goes on (not skipped, above its bound, patient, under the cap)."""
    return (
        ~pass_state.constants.skip
        & (pass_state.iteration < config.max_iterations)
        & (pass_state.best_cost > pass_state.constants.lower_bound)
        & (pass_state.no_improve < pass_state.constants.patience)
    )


def ant_costs(
    res: AntResults, machine: MachineArrays, timed: jax.Array, wavefront_size: int
) -> jax.Array:
    """int32[A] cost per ant (BIG when dead): RP cost in the RP pass, length in the ILP pass.

    The ILP pass applies the wavefront rule: once an ant of a wavefront completes, its
    unfinished ants stop. In cycle time the first to complete is the shortest, so only the
    wavefront's shortest ants count.
    """
    cost_rp = rp_cost_jax(res.peak, machine.lut, machine.target_occupancy)
    cost_rp = jnp.where(res.dead, BIG, cost_rp)
    length = jnp.where(res.dead, BIG, res.length)
    waves = length.reshape(-1, wavefront_size)
    first_done = waves.min(axis=1, keepdims=True)
    cost_ilp = jnp.where(waves == first_done, waves, BIG).reshape(-1)
    return jnp.where(timed, cost_ilp, cost_rp)


def step_inputs(
    pass_state: PassState, prep: Prepared, machine: MachineArrays, params: ColonyParams
) -> StepInputs:
    """What every ant of the iteration shares: pheromone, q0, the RP limit (the ILP pass's
    target; in the RP pass the best RP cost so far) and the soft limit below it, G, the
    heuristic key. ``params``: pass parameters (`params.pass_params`)."""
    n = jnp.maximum(prep.n, 1).astype(jnp.float32)
    cost_target = jnp.where(
        pass_state.constants.timed, pass_state.constants.rp_target, pass_state.best_cost
    )
    limit = rp_limits(machine.lut, machine.target_occupancy, cost_target)
    margin = jnp.floor(params.caution_step * pass_state.caution * limit).astype(jnp.int32)
    return StepInputs(
        tau=pass_state.tau,
        q0=jnp.maximum(0.0, 1.0 - params.explore_scale / n),
        rp_limit=limit,
        soft_limit=jnp.where(limit >= RP_UNLIMITED, limit, limit - margin),
        stall_budget=pass_state.stall_budget,
        timed=pass_state.constants.timed,
        key=static_key(prep, params, pass_state.constants.timed),
        issue_width=machine.issue_width,
    )


def iterate(
    pass_state: PassState,
    prep: Prepared,
    machine: MachineArrays,
    params: ColonyParams,
    num_steps: jax.Array,
    *,
    config: ColonyConfig,
    batch_axis: str | None = None,
    ant_axis: str | None = None,
    active: jax.Array | bool = True,
) -> PassState:
    """One iteration of the pass (call it only while `running`). ``num_steps`` (unbatched):
    the batch's largest n; ``batch_axis``: the name of a `vmap` over regions, if any;
    ``ant_axis``: inside `jax.shard_map`, the mesh axis the region's ants are split over
    (`antshard`; None: all ants here); ``active`` False: the caller discards the result (the
    fused kernel then skips the region's construction; the result is garbage)."""
    pp = pass_params(params, pass_state.constants.timed)
    res = dispatch.construct(
        prep,
        step_inputs(pass_state, prep, machine, pp),
        pp,
        jax.random.fold_in(pass_state.constants.key, pass_state.iteration),
        num_steps,
        config=config,
        uniform_exploration=jnp.where(
            pass_state.constants.timed,
            config.uniform_exploration_ilp,
            config.uniform_exploration_rp,
        ),
        batch_axis=batch_axis,
        active=active,
        ant_axis=ant_axis,
    )
    costs = ant_costs(res, machine, pass_state.constants.timed, config.wavefront_size)
    fields = (res.order, res.peak, res.stalls)
    w_cost, (w_order, w_peak, stalls) = ant_winner(costs, fields, ant_axis)
    improved = w_cost < pass_state.best_cost
    budget = jnp.where(
        improved & (stalls < pass_state.stall_budget),
        jnp.maximum(stalls.astype(jnp.float32), 1.0),
        pass_state.stall_budget,
    )
    best_cost = jnp.where(improved, w_cost, pass_state.best_cost)
    # Every ant died: steer the next ones further below the RP limit, and do not count the
    # iteration against the pass's patience while that is still possible; once the caution
    # is spent, such an iteration ends the pass (the next ants would sample the same table).
    alive = ant_total(~res.dead, ant_axis)
    careful = (alive == 0) & (pass_state.caution < params.caution_max)
    hopeless = (alive == 0) & ~careful
    waited = pass_state.no_improve + jnp.where(careful, 0, 1)
    return pass_state._replace(
        tau=pheromone.deposit(
            pass_state.tau, pass_state.constants.heuristic, w_order, w_cost, params
        ),
        best_order=jnp.where(improved, w_order, pass_state.best_order),
        best_cost=best_cost,
        best_peak=jnp.where(improved, w_peak, pass_state.best_peak),
        best_stalls=jnp.where(improved, stalls, pass_state.best_stalls),
        stall_budget=budget,
        iteration=pass_state.iteration + 1,
        no_improve=jnp.where(
            improved, 0, jnp.where(hopeless, pass_state.constants.patience, waited)
        ),
        caution=pass_state.caution + careful.astype(jnp.int32),
        history_best=pass_state.history_best.at[pass_state.iteration].set(best_cost),
        history_winner=pass_state.history_winner.at[pass_state.iteration].set(w_cost),
        history_alive=pass_state.history_alive.at[pass_state.iteration].set(alive),
    )
