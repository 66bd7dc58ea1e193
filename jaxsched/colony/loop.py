"""The colony's iteration loop for one pass, entirely on device.

Each iteration: all ants construct (`construct.construct_ants`), the iteration winner is found by
a reduction, the pheromone evaporates and the winner's links get a deposit, the table is clamped,
and the global best, the stall budget and the history are updated. The loop is a `while_loop`
that ends when the best meets the lower bound, after ``patience`` iterations without
improvement, or at the iteration cap. Under `vmap` over regions its predicate is batched, so it
runs until the last region ends (the others are frozen): regions in one batch should have similar
sizes, which bucketing provides.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxsched.colony.construct import (
    BIG,
    AntResults,
    Prepared,
    StepInputs,
    construct_ants,
    rp_cost,
    rp_limits,
)
from jaxsched.colony.params import ColonyConfig, ColonyParams


class PassProblem(NamedTuple):
    """Per-region inputs of one pass (batched over regions under vmap)."""

    prep: Prepared
    start_order: jnp.ndarray  # int32[N]: starting (heuristic) schedule's order, sentinel N
    start_cost: jnp.ndarray  # int32[]: its cost (RP cost in pass 1, length in pass 2)
    start_peak: jnp.ndarray  # int32[F]
    start_stalls: jnp.ndarray  # int32[]: its stall cycles (pass 2)
    lower_bound: jnp.ndarray  # int32[]: the pass ends when the best cost reaches it
    rp_target: jnp.ndarray  # int32[]: RP cost an ant must not exceed (pass 2; pass 1: unused)
    stall_budget: jnp.ndarray  # f32[]: initial G (pass 2)
    patience: jnp.ndarray  # int32[]: iterations without improvement before stopping
    skip: jnp.ndarray  # bool[]: do not run (the start is final)
    timed: jnp.ndarray  # bool[]: ILP pass (True) or RP pass (False)


class PassState(NamedTuple):
    tau: jnp.ndarray  # f32[N + 1, N + 1]: pheromone, row N = start, column N = dummy
    best_order: jnp.ndarray  # int32[N]
    best_cost: jnp.ndarray  # int32[]
    best_peak: jnp.ndarray  # int32[F]
    best_stalls: jnp.ndarray  # int32[]
    stall_budget: jnp.ndarray  # f32[]: G
    iteration: jnp.ndarray  # int32[]: iterations run
    no_improve: jnp.ndarray  # int32[]
    history_best: jnp.ndarray  # int32[I]: global best cost after each iteration (-1 unused)
    history_winner: jnp.ndarray  # int32[I]: iteration winner's cost (BIG: no valid ant)


class PassResult(NamedTuple):
    order: jnp.ndarray  # int32[N]
    cost: jnp.ndarray  # int32[]
    peak: jnp.ndarray  # int32[F]
    stalls: jnp.ndarray  # int32[]
    iterations: jnp.ndarray  # int32[]
    history_best: jnp.ndarray  # int32[I]
    history_winner: jnp.ndarray  # int32[I]


class Machine(NamedTuple):
    """The machine as arrays (a pytree)."""

    lut: jnp.ndarray  # int32[F, T]: occupancy by (file, RP)
    target_occupancy: jnp.ndarray  # int32[]


def _first_min(x: jnp.ndarray) -> jnp.ndarray:
    """Index of the first minimum of a 1-D array (plain reductions only)."""
    idx = jnp.arange(x.shape[0], dtype=jnp.int32)
    return jnp.where(x == x.min(), idx, x.shape[0]).min()


def ant_costs(
    res: AntResults, machine: Machine, timed: jnp.ndarray, wavefront_size: int
) -> jnp.ndarray:
    """int32[A] cost per ant (BIG when dead): RP cost in the RP pass, length in the ILP pass.

    The ILP pass applies the wavefront rule: once an ant of a wavefront completes, its
    unfinished ants stop. In cycle time the first to complete is the shortest, so only the
    wavefront's shortest ants count.
    """
    cost_rp = jnp.where(res.dead, BIG, rp_cost(res.peak.T, machine.lut, machine.target_occupancy))
    length = jnp.where(res.dead, BIG, res.length)
    waves = length.reshape(-1, wavefront_size)
    first_done = waves.min(axis=1, keepdims=True)
    cost_ilp = jnp.where(waves == first_done, waves, BIG).reshape(-1)
    return jnp.where(timed, cost_ilp, cost_rp)


def run_pass(
    prob: PassProblem,
    machine: Machine,
    params: ColonyParams,
    key: jax.Array,
    num_steps: jnp.ndarray,
    max_iterations: jnp.ndarray,
    *,
    config: ColonyConfig,
    issue_width: int,
    batch_axis: str | None = None,
) -> PassResult:
    """Run one pass of the colony on one region (vmap over regions, named ``batch_axis``,
    for a batch). The pass (RP or ILP) is ``prob.timed``, a traced flag: one compilation serves
    both."""
    N = prob.start_order.shape[0]
    n = prob.prep.n
    heur = prob.start_cost.astype(jnp.float32)
    q0 = jnp.maximum(0.0, 1.0 - params.explore_scale / jnp.maximum(n, 1).astype(jnp.float32))
    tau0 = jnp.clip(config.ants / (heur + 1.0), params.tau_min, params.tau_max)
    hist = jnp.full(config.max_iterations, -1, jnp.int32)
    init = PassState(
        tau=jnp.full((N + 1, N + 1), tau0, jnp.float32),
        best_order=prob.start_order,
        best_cost=prob.start_cost,
        best_peak=prob.start_peak,
        best_stalls=prob.start_stalls,
        stall_budget=jnp.maximum(prob.stall_budget, 1.0),
        iteration=jnp.int32(0),
        no_improve=jnp.int32(0),
        history_best=hist,
        history_winner=hist,
    )

    def cond(s: PassState) -> jnp.ndarray:
        return (
            ~prob.skip
            & (s.iteration < max_iterations)
            & (s.best_cost > prob.lower_bound)
            & (s.no_improve < prob.patience)
        )

    def body(s: PassState) -> PassState:
        cost_target = jnp.where(prob.timed, prob.rp_target, s.best_cost)
        inp = StepInputs(
            tau=s.tau,
            q0=q0,
            rp_limit=rp_limits(machine.lut, machine.target_occupancy, cost_target),
            stall_budget=s.stall_budget,
            timed=prob.timed,
        )
        res = construct_ants(
            prob.prep,
            inp,
            params,
            jax.random.fold_in(key, s.iteration),
            num_steps,
            wavefronts=config.wavefronts,
            wavefront_size=config.wavefront_size,
            uniform_exploration=jnp.where(
                prob.timed, config.uniform_exploration_ilp, config.uniform_exploration_rp
            ),
            issue_width=issue_width,
            batch_axis=batch_axis,
        )
        costs = ant_costs(res, machine, prob.timed, config.wavefront_size)
        w = _first_min(costs)
        w_cost = costs[w]
        found = w_cost < BIG
        improved = w_cost < s.best_cost
        w_order = res.order[w]

        ratio = jnp.where(heur > 0, w_cost / (params.deposit_ref * jnp.maximum(heur, 1e-6)), 0.0)
        deposit = jnp.where(
            found, (1.0 - jnp.minimum(1.0, ratio)) * params.deposit_scale + params.deposit_base, 0.0
        )
        prev = jnp.concatenate([jnp.array([N], jnp.int32), w_order[:-1]])
        tau = s.tau * (1.0 - params.decay)
        tau = tau.at[prev, w_order].add(deposit)
        tau = jnp.clip(tau, params.tau_min, params.tau_max)

        stalls = res.stalls[w]
        budget = jnp.where(
            improved & (stalls < s.stall_budget),
            jnp.maximum(stalls.astype(jnp.float32), 1.0),
            s.stall_budget,
        )
        best_cost = jnp.where(improved, w_cost, s.best_cost)
        return PassState(
            tau=tau,
            best_order=jnp.where(improved, w_order, s.best_order),
            best_cost=best_cost,
            best_peak=jnp.where(improved, res.peak[w], s.best_peak),
            best_stalls=jnp.where(improved, stalls, s.best_stalls),
            stall_budget=budget,
            iteration=s.iteration + 1,
            no_improve=jnp.where(improved, 0, s.no_improve + 1),
            history_best=s.history_best.at[s.iteration].set(best_cost),
            history_winner=s.history_winner.at[s.iteration].set(w_cost),
        )

    out = lax.while_loop(cond, body, init)
    return PassResult(
        order=out.best_order,
        cost=out.best_cost,
        peak=out.best_peak,
        stalls=out.best_stalls,
        iterations=out.iteration,
        history_best=out.history_best,
        history_winner=out.history_winner,
    )
