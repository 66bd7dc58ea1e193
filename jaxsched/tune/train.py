"""Score-function (REINFORCE) gradients of the expected cost, an optax training loop over the
guiding heuristic's weights, and vectorised sweeps of colony settings.

The objective of a batch of regions is the mean over regions of each region's expected order
cost (`model.order_costs`: RP cost first, then length at equal RP cost, in one scalar) under
the ants' distribution (`model`). Its gradient is ``E[(J - b) grad log p(order)]``, estimated
from the sampled ants with the baseline ``b`` of an ant the mean cost of the *other* ants of
its region (leave-one-out: independent of the ant's own sample, so the estimate is unbiased).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax

from jaxsched.colony.core import solve
from jaxsched.colony.params import (
    HEURISTIC_WEIGHTS,
    PER_FILE_WEIGHTS,
    SCALAR_WEIGHTS,
    ColonyConfig,
    ColonyParams,
)
from jaxsched.colony.passes.transitions import Solution
from jaxsched.colony.problem import ColonyProblem
from jaxsched.tune.model import TUNE_CONFIG, Samples, TuneProblem, log_prob, sample

#: The parameters training moves: the guiding heuristic's weights.
TUNED = HEURISTIC_WEIGHTS


def leave_one_out(cost: jax.Array) -> jax.Array:
    """f32[B, A]: each ant's baseline, the mean cost of the other ants of its region."""
    A = cost.shape[1]
    return (cost.sum(axis=1, keepdims=True) - cost) / (A - 1)


#: How advantages are formed: "loo" (cost minus the leave-one-out baseline: unbiased),
#: "standardized" ("loo" divided by the spread of the region's ant costs) or "top" (risk-seeking:
#: only the region's best `TOP_FRACTION` of ants, against the cost at that quantile).
ADVANTAGES = ("loo", "standardized", "top")
#: The share of a region's ants the "top" advantages learn from.
TOP_FRACTION = 0.25


def advantages(cost: jax.Array, how: str = "loo") -> jax.Array:
    """f32[B, A]: each ant's advantage from the ants' costs (f32[B, A]).

    "loo" is ``cost - leave_one_out(cost)``: the gradient estimate is unbiased. "standardized"
    divides each region's advantages by the standard deviation of its ants' costs (0 where all
    ants cost the same), so every region whose ants differ weighs alike in a batch: the
    length term of a cost lies in [0, 1) and would otherwise be drowned by any region whose
    ants differ in RP cost. Each region's gradient keeps its direction (it is scaled by a
    positive number), but the scale depends on the sample, so the estimate is biased.

    "top" is the risk-seeking estimator (Petersen et al., ICLR 2021): an ant costing less than
    its region's `TOP_FRACTION` quantile q gets ``(cost - q) / spread``, every other ant 0. It
    follows the gradient of the expected cost of the region's best ants rather than of a
    typical ant: the colony keeps only its best schedule."""
    if how not in ADVANTAGES:
        raise ValueError(f"advantage {how!r}: expected one of {', '.join(ADVANTAGES)}")
    if how == "top":
        q = jnp.quantile(cost, TOP_FRACTION, axis=1, keepdims=True, method="lower")
        adv = jnp.minimum(cost - q, 0.0)
    else:
        adv = cost - leave_one_out(cost)
    if how == "loo":
        return adv
    spread = cost.std(axis=1, keepdims=True)
    return jnp.where(spread > 0, adv / jnp.where(spread > 0, spread, 1.0), 0.0)


def region_surrogate(
    params: ColonyParams,
    problem: TuneProblem,
    samples: Samples,
    config: ColonyConfig,
    advantage: str = "loo",
) -> jax.Array:
    """f32[B]: per region, a function of ``params`` whose value is the mean cost of the
    region's samples and whose gradient is the REINFORCE estimate of the gradient of its
    expected cost (regions are independent estimates; ``advantage``: see `advantages`)."""
    lp = log_prob(problem, params, samples.order, config)
    adv = lax.stop_gradient(advantages(samples.cost, advantage))
    score = (adv * lp).mean(axis=1)
    return samples.cost.mean(axis=1) + score - lax.stop_gradient(score)


def surrogate(
    params: ColonyParams,
    problem: TuneProblem,
    samples: Samples,
    config: ColonyConfig,
    advantage: str = "loo",
) -> jax.Array:
    """f32[]: the mean over the real regions (``prob.real``) of `region_surrogate`."""
    real = problem.prob.real.astype(jnp.float32)
    per_region = region_surrogate(params, problem, samples, config, advantage)
    return (per_region * real).sum() / jnp.maximum(real.sum(), 1.0)


def expected_cost(
    params: ColonyParams,
    problem: TuneProblem,
    key: jax.Array,
    config: ColonyConfig,
    advantage: str = "loo",
) -> jax.Array:
    """f32[]: a sampled estimate of the mean expected cost, `jax.grad`- and
    `jax.value_and_grad`-able: its gradient is the REINFORCE estimate (`surrogate`)."""
    samples = sample(key, problem, lax.stop_gradient(params), config)
    return surrogate(params, problem, samples, config, advantage)


def trainable(params: ColonyParams, files: int) -> dict:
    """The `TUNED` weights of ``params`` per pass (``[2]``) and per file (``[2, F]``)."""

    def full(name: str) -> jax.Array:
        w = jnp.asarray(getattr(params, name), jnp.float32)
        if name in SCALAR_WEIGHTS:
            return w
        shape = (2, files) if name in PER_FILE_WEIGHTS else (2,)
        w = w[..., None] if (name in PER_FILE_WEIGHTS and w.ndim == 1) else w
        return jnp.broadcast_to(w, shape)

    return {k: full(k) for k in TUNED}


def merged(params: ColonyParams, tuned: dict) -> ColonyParams:
    """``params`` with the weights of ``tuned`` (as `trainable` gives them)."""
    return params._replace(**tuned)


class TrainLog(NamedTuple):
    step: int
    cost: float  # mean sampled cost over the step's regions before the update
    grad_norm: float
    seconds: float


@lru_cache(maxsize=16)
def optimizer(steps: int, learning_rate: float = 0.05, clip: float = 1.0):
    """Adam under global-norm clipping, with a cosine-decayed learning rate. The same settings
    give the same object: it is a static argument of the jitted update, so a second `train`
    with the same settings reuses the compiled step."""
    schedule = optax.cosine_decay_schedule(learning_rate, max(steps, 1), alpha=0.1)
    return optax.chain(optax.clip_by_global_norm(clip), optax.adam(schedule))


@partial(jax.jit, static_argnames=("config", "opt", "advantage"))
def _update(tuned, opt_state, base, problem, key, *, config: ColonyConfig, opt, advantage: str):
    def loss(t):
        return expected_cost(merged(base, t), problem, key, config, advantage)

    value, grad = jax.value_and_grad(loss)(tuned)
    updates, opt_state = opt.update(grad, opt_state, tuned)
    return optax.apply_updates(tuned, updates), opt_state, value, optax.tree.norm(grad)


def train(
    problems: list[TuneProblem],
    params: ColonyParams,
    *,
    files: int,
    steps: int,
    seed: int = 0,
    config: ColonyConfig = TUNE_CONFIG,
    learning_rate: float = 0.05,
    advantage: str = "standardized",
    on_step: Callable[[TrainLog], None] | None = None,
) -> tuple[ColonyParams, list[TrainLog]]:
    """``steps`` optax steps on the `TUNED` weights; step s uses batch ``s % len(problems)``
    and the key ``fold_in(key(seed), s)``; ``advantage``: see `advantages`. Returns the
    trained parameters and the log."""
    advantages(jnp.zeros((1, 2)), advantage)  # refuse an unknown name before compiling
    import time

    opt = optimizer(steps, learning_rate)
    tuned = trainable(params, files)
    state = opt.init(tuned)
    key = jax.random.key(seed)
    log: list[TrainLog] = []
    for s in range(steps):
        t0 = time.perf_counter()
        prob = problems[s % len(problems)]
        tuned, state, value, norm = _update(
            tuned, state, params, prob, jax.random.fold_in(key, s),
            config=config, opt=opt, advantage=advantage,
        )  # fmt: skip
        entry = TrainLog(
            step=s, cost=float(value), grad_norm=float(norm), seconds=time.perf_counter() - t0
        )
        log.append(entry)
        if on_step is not None:
            on_step(entry)
    return merged(params, tuned), log


class Sweep(NamedTuple):
    solutions: Solution  # [k, B, ...]: every setting's solution
    occupancy: np.ndarray  # int[k]: summed occupancy over the regions
    length: np.ndarray  # int[k]: summed length
    best: int  # the setting with the largest occupancy, then the shortest length


@partial(jax.jit, static_argnames="config")
def _solve_settings(problem, stacked, key, config):
    return jax.vmap(lambda p: solve(key, problem, p, config=config))(stacked)


def sweep(
    key: jax.Array, problem: ColonyProblem, settings: ColonyParams, *, config: ColonyConfig
) -> Sweep:
    """The colony under k parameter settings in one call (``settings``: a `ColonyParams`
    whose fields have a leading axis k, e.g. `stack_params`): `vmap` over the params pytree.
    Reports each setting's summed occupancy and length over the real regions, and the best."""
    sols = jax.device_get(_solve_settings(problem, settings, key, config))
    real = np.asarray(problem.real)
    occ = np.asarray(sols.occupancy)[:, real].sum(axis=1)
    length = np.asarray(sols.length)[:, real].sum(axis=1)
    best = int(np.lexsort((length, -occ))[0])
    return Sweep(solutions=sols, occupancy=occ, length=length, best=best)


def stack_params(settings: list[ColonyParams]) -> ColonyParams:
    """k settings as one `ColonyParams` with a leading axis k. A field given in different
    forms (a scalar, per pass ``[2]``, per pass and file ``[2, F]``) is broadcast to the
    fullest, which means the same."""

    def stack(name: str) -> jax.Array:
        xs = [jnp.asarray(getattr(p, name), jnp.float32) for p in settings]
        if name in PER_FILE_WEIGHTS:
            xs = [x[:, None] if x.ndim == 1 else x for x in xs]
        shape = jnp.broadcast_shapes(*(x.shape for x in xs))
        return jnp.stack([jnp.broadcast_to(x, shape) for x in xs])

    return ColonyParams(**{k: stack(k) for k in ColonyParams._fields})
