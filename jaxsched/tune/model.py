"""The colony as a distribution over orders: sampling ants, the cost of an order, and the
log-probability of given orders (`log_prob`) by replaying them through the ants' own scoring.

The distribution of a region (a `TuneProblem` row) is that of one ant of the region's first
colony iteration: the pheromone, limits, stall budget and pass (RP or ILP) of the first pass
that runs (`core.init`), with independent exploration coins per ant (the colony's per-
wavefront coin would correlate the ants of a wavefront). Each step an ant exploits (the best
score) with probability q0, else it draws a slot with probability proportional to its
roulette weight (`decision.roulette_weights`); the replay calls the same scoring
(`decision.step_scores`) and state update (`construct.apply_pick`) as the sampler, so the two
cannot drift apart.

The cost of an order (one scalar per ant, `order_costs`): its RP cost (the target occupancy
minus the occupancy reached, an integer) plus its length (cycles, issued in order with the
stalls latencies force) divided by ``length_cap = n * (1 + largest latency) + 1``, an upper
bound on any order's length: so the cost orders schedules by occupancy first, then by
length, and lies in ``[rp_cost, rp_cost + 1)``.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxsched.colony.construction import antstate, construct, decision, draws
from jaxsched.colony.core import init
from jaxsched.colony.params import ColonyConfig, ColonyParams, pass_params
from jaxsched.colony.passes.iteration import PassState, step_inputs
from jaxsched.colony.problem import ColonyProblem
from jaxsched.heuristics.list_scheduler import order_peak_rp, stall_schedule
from jaxsched.machines.model import rp_cost_jax

#: The ants that sample a region in training unless told otherwise: 2 wavefronts of 16. Only
#: a `ColonyConfig`'s ``wavefronts`` and ``wavefront_size`` matter here (the stall wavefronts
#: are the first ``round(stall_fraction * wavefronts)``, as in the colony).
TUNE_CONFIG = ColonyConfig(wavefronts=2, wavefront_size=16)


class TuneProblem(NamedTuple):
    """B regions of one bucket and the context their ants sample in (a pytree)."""

    prob: ColonyProblem  # [B, ...]
    ctx: PassState  # [B, ...]: each region's first running pass before its first iteration
    length_cap: jax.Array  # f32[B]: n * (1 + largest latency) + 1


class Samples(NamedTuple):
    order: jax.Array  # int32[B, A, N]: sentinel N after each region's n
    cost: jax.Array  # f32[B, A]: `order_costs`


@partial(jax.jit, static_argnames="config")
def tune_problem(
    key: jax.Array, prob: ColonyProblem, params: ColonyParams, config: ColonyConfig
) -> TuneProblem:
    """The tuning context of ``prob``'s regions: `core.init` with ``params`` (constant
    afterwards: the pheromone does not follow later parameter changes)."""
    ctx = init(key, prob, params, config=config).current
    n = prob.prep.n.astype(jnp.float32)
    lat = prob.prep.succ_lat.max(axis=(1, 2)).astype(jnp.float32)
    return TuneProblem(prob, ctx, n * (1.0 + lat) + 1.0)


def order_costs(problem: TuneProblem, orders: jax.Array) -> jax.Array:
    """f32[B, A]: the cost of each order (int32[B, A, N]; see the module docstring)."""
    p = problem.prob
    iw = p.machine.issue_width

    def one(dev, cap, orders_b):
        peaks = jax.vmap(lambda o: order_peak_rp(dev, o))(orders_b)
        length = jax.vmap(lambda o: stall_schedule(dev, o, iw)[1])(orders_b)
        rp = rp_cost_jax(peaks, p.machine.lut, p.machine.target_occupancy)
        return rp.astype(jnp.float32) + length.astype(jnp.float32) / cap

    return jax.vmap(one)(p.dev, problem.length_cap, orders)


def _inputs(problem: TuneProblem, params: ColonyParams):
    """Per-region pass parameters and `StepInputs` (differentiable in ``params``)."""

    def one(prep, ctx):
        pp = pass_params(params, ctx.constants.timed)
        return pp, step_inputs(ctx, prep, problem.prob.machine, pp)

    return jax.vmap(one)(problem.prob.prep, lax.stop_gradient(problem.ctx))


def _seeds(key: jax.Array, params: ColonyParams, config: ColonyConfig) -> draws.AntSeeds:
    return draws.make_seeds(
        key,
        params,
        wavefronts=config.wavefronts,
        wavefront_size=config.wavefront_size,
        uniform_exploration=False,
    )


def region_keys(problem: TuneProblem, key: jax.Array) -> jax.Array:
    """key[B]: region b samples with ``fold_in(key, ids[b])`` (independent of the batch)."""
    return jax.vmap(lambda i: jax.random.fold_in(key, i))(problem.prob.ids)


@partial(jax.jit, static_argnames="config")
def sample(
    key: jax.Array, problem: TuneProblem, params: ColonyParams, config: ColonyConfig = TUNE_CONFIG
) -> Samples:
    """Every region's ants construct one order each (the colony's `construct_ants`; the ants
    of ``config``'s wavefronts)."""
    pp, inp = _inputs(problem, params)
    N = problem.prob.prep.succ.shape[1] - 1

    def one(prep, inp_b, pp_b, k):
        res = construct.construct_ants(
            prep, inp_b, pp_b, k, jnp.int32(N),
            wavefronts=config.wavefronts, wavefront_size=config.wavefront_size,
            uniform_exploration=False,
        )  # fmt: skip
        return res.order

    order = jax.vmap(one)(problem.prob.prep, inp, pp, region_keys(problem, key))
    return Samples(order, order_costs(problem, order))


class Replay(NamedTuple):
    log_prob: jax.Array  # f32[B, A, N]: log-probability of each step's choice (0 when done)
    agree: jax.Array  # bool[B, A, N]: the sampler with ``key`` picks the same slot


def _choice_log_prob(score, eligible, slot, q0, active):
    """f32[A]: log-probability that the decision picks ``slot`` (int32[A]): ``q0`` times
    [slot is the best] plus ``1 - q0`` times its share of the roulette weights (0 for ants
    not ``active``; -inf for an ineligible slot). The weights are the sampler's integers in
    value, with the gradient of their real-valued form."""
    best = lax.stop_gradient(score.max(axis=0))
    smooth = jnp.where(eligible, 1.0 + score / jnp.maximum(best, 1e-30) * 65535.0, 0.0)
    exact = decision.roulette_weights(score, eligible).astype(jnp.float32)
    weight = exact + smooth - lax.stop_gradient(smooth)
    a = jnp.arange(slot.shape[0])
    share = weight[slot, a] / jnp.maximum(weight.sum(axis=0), 1e-30)
    is_best = (decision.best_slot(score, eligible) == slot).astype(jnp.float32)
    p = jnp.where(active, q0 * is_best + (1.0 - q0) * share, 1.0)
    # An ineligible slot has probability 0: log 0 = -inf, with a zero (not NaN) gradient.
    return jnp.where(p > 0, jnp.log(jnp.where(p > 0, p, 1.0)), -jnp.inf)


def _replay_region(prep, inp, pp, orders, seeds: draws.AntSeeds):
    """(f32[A, N], bool[A, N]): each step's log-probability and agreement (one region)."""
    A, N = orders.shape
    K = prep.dummy_slot
    a = jnp.arange(A)

    def body(st: antstate.AntsState, t):
        ready = antstate.first_slots(st.ready, K)
        tau = inp.tau[st.last[None, :], ready.ids]
        view = antstate.AntView(
            cycle=st.cycle, issued=st.issued, stalls=st.stalls, live_w=st.live_w
        )
        c, score = decision.step_scores(ready, tau, view, prep.live_through, inp, pp, seeds)
        active = st.ready.count > 0
        slot = jnp.where(active, st.ready.slot_of[orders[:, t], a], K)
        lp = _choice_log_prob(score, c.eligible, jnp.minimum(slot, K - 1), inp.q0, active)
        pick = decision.pick_slot(score, c.eligible, t, inp.q0, seeds)
        agree = ~active | (pick == slot)
        st = construct.apply_pick(st, slot, c.cycle, c.issued, step_index=t, prep=prep, inp=inp)
        return st, (lp, agree)

    st0 = construct.init_ants(prep, A, inp.key)
    _, (lp, agree) = lax.scan(body, st0, jnp.arange(N, dtype=jnp.int32))
    return lp.T, agree.T


@partial(jax.jit, static_argnames="config")
def replay(
    problem: TuneProblem,
    params: ColonyParams,
    orders: jax.Array,
    key: jax.Array | None = None,
    config: ColonyConfig | None = None,
) -> Replay:
    """Replay ``orders`` (int32[B, A, N], complete topological orders) with the ants' scoring:
    each step's log-probability, and whether the sampler with ``key`` (default key 0) would
    have picked the same slot. ``config``: the wavefront layout (default: one wavefront of A)."""
    A = orders.shape[1]
    config = config or ColonyConfig(wavefronts=1, wavefront_size=A)
    pp, inp = _inputs(problem, params)
    key = jax.random.key(0) if key is None else key

    def one(prep, inp_b, pp_b, k, orders_b):
        seeds = _seeds(k, lax.stop_gradient(params), config)
        return _replay_region(prep, inp_b, pp_b, orders_b, seeds)

    lp, agree = jax.vmap(one)(problem.prob.prep, inp, pp, region_keys(problem, key), orders)
    return Replay(lp, agree)


def log_prob(
    problem: TuneProblem,
    params: ColonyParams,
    orders: jax.Array,
    config: ColonyConfig | None = None,
) -> jax.Array:
    """f32[B, A]: the log-probability of each order (int32[B, A, N]) under ``params``,
    differentiable in the float parameters (`replay`). ``config``: the wavefront layout of the
    orders (it decides which ants may stall), default one wavefront."""
    return replay(problem, params, orders, config=config).log_prob.sum(axis=-1)


def take(problem: TuneProblem, idx) -> TuneProblem:
    """The regions ``idx`` (an index array or slice) of ``problem`` (the machine is shared)."""
    machine = problem.prob.machine
    sub = jax.tree.map(lambda x: x[idx], problem._replace(prob=problem.prob._replace(machine=None)))
    return sub._replace(prob=sub.prob._replace(machine=machine))
