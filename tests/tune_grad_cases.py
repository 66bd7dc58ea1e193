"""The colony as a distribution (`jaxsched.tune.model`) and its REINFORCE gradient
(`jaxsched.tune.train`): replay equals the sampler, probabilities sum to one over every order
of a 5-instruction region, the estimator is unbiased against the exactly enumerated gradient,
training lowers the exact expected cost, same seed same result (`sweep`: tests/test_core.py)."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsched import colony
from jaxsched.colony.params import ColonyConfig, default_params
from jaxsched.machines.model import gfx906
from jaxsched.problem.region import Region
from jaxsched.tune.model import log_prob, order_costs, replay, sample, take, tune_problem
from jaxsched.tune.train import (
    _update,
    merged,
    region_surrogate,
    train,
    trainable,
)
from jaxsched.verify import verify_order

MACHINE = gfx906()
F = len(MACHINE.file_names)
CONFIG = ColonyConfig(wavefronts=2, wavefront_size=16, max_iterations=4)
ANTS = ColonyConfig(wavefronts=2, wavefront_size=32)
#: One wavefront: no ant may take optional stalls, the distribution `log_prob` gives by default.
ONE_WAVE = ColonyConfig(wavefronts=1, wavefront_size=64)


def _five(live_through: int = 15) -> Region:
    """Two loads feeding two uses and a wide independent def: 30 orders whose occupancy
    (VGPRs near a step with ``live_through``) and length (load latency 4) both vary."""
    return Region.build(
        f"five:{live_through}",
        [
            ("load a", ["a"], []),
            ("load b", ["b"], []),
            ("c = f(a)", ["c"], ["a"]),
            ("d = f(b)", ["d"], ["b"]),
            ("e = k", ["e"], []),
        ],
        {"a": ("VGPR", 4), "b": ("VGPR", 4), "c": ("VGPR", 1), "d": ("VGPR", 1), "e": ("VGPR", 2)},
        [(0, 2, 4), (1, 3, 4)],
        live_out=["c", "d", "e"],
        live_through={"VGPR": live_through},
    )


def _params():
    return default_params(weight_position=[0.3, -0.2], weight_born=0.5, weight_wait=[0.0, 0.4])


def _problem(regions, copies: int = 1, params=None):
    """A `TuneProblem` of ``regions`` repeated ``copies`` times, each copy its own stream."""
    regs = [r for r in regions for _ in range(copies)]
    prob = colony.problem(regs, MACHINE, batch=len(regs))
    prob = prob._replace(ids=jnp.arange(len(regs), dtype=jnp.uint32))
    return tune_problem(jax.random.key(0), prob, params or _params(), CONFIG)


def _all_orders(region: Region, N: int) -> np.ndarray:
    """int32[1, M, N]: every topological order of ``region``, padded with N."""
    n = len(region)
    ok = [
        p for p in itertools.permutations(range(n))
        if all(p.index(e.src) < p.index(e.dst) for e in region.edges)
    ]  # fmt: skip
    out = np.full((1, len(ok), N), N, np.int32)
    out[0, :, :n] = ok
    return out


#: Copies of `_five` in the problems of the replay and unbiasedness tests: the same shapes, so
#: they share the compiles of `tune_problem` and of `sample` with `ONE_WAVE`.
COPIES = 16


@pytest.mark.slow
@pytest.mark.parametrize("timed", [False, True])
def test_replay_reproduces_the_sampler(timed):
    """The replay agrees with the sampler's every decision; a region's order probabilities
    sum to one and its sampled frequencies follow them."""
    tp = _problem([_five()], copies=COPIES)
    constants = tp.ctx.constants._replace(timed=jnp.full(COPIES, timed))
    tp = tp._replace(ctx=tp.ctx._replace(constants=constants))
    params = _params()
    key = jax.random.key(4)
    s = sample(key, tp, params, ANTS)
    n = 5
    for b in range(2):
        for order in np.asarray(s.order[b]):
            verify_order(_five(), MACHINE, order[:n])
    rep = replay(tp, params, s.order, key, ANTS)
    assert bool(rep.agree.all())  # the sampler's own decisions, step by step
    assert np.isfinite(np.asarray(rep.log_prob)).all()
    assert len({tuple(o) for o in np.asarray(s.order[0])}) > 1
    # The probabilities of all orders sum to one; sampled frequencies follow them.
    N = s.order.shape[-1]
    orders = jnp.asarray(_all_orders(_five(), N))
    rows = [take(tp, slice(b, b + 1)) for b in range(COPIES)]
    p = np.exp(np.asarray(log_prob(rows[0], params, orders)))[0]
    assert p.sum() == pytest.approx(1.0, abs=1e-5)
    for row in rows[1:]:  # the copies (streams apart) follow one distribution
        np.testing.assert_array_equal(np.exp(np.asarray(log_prob(row, params, orders)))[0], p)
    # 2048 orders: two calls of one wavefront per copy, as log_prob (no stall wave).
    big = [sample(jax.random.key(9 + k), tp, params, ONE_WAVE).order for k in range(2)]
    index = {tuple(o): k for k, o in enumerate(np.asarray(orders[0]))}
    drawn = np.concatenate([np.asarray(o).reshape(-1, o.shape[-1]) for o in big])
    assert len(drawn) == 2048
    counts = np.bincount([index[tuple(o)] for o in drawn], minlength=len(p))
    freq = counts / counts.sum()
    se = np.sqrt(p * (1 - p) / counts.sum())
    assert (np.abs(freq - p) <= 5 * se + 1e-3).all()


@pytest.mark.slow
def test_reinforce_is_unbiased_on_an_enumerable_region():
    region, copies, rounds = _five(), COPIES, 4
    tp = _problem([region], copies)
    params = _params()
    tuned = trainable(params, F)
    N = tp.prob.prep.succ.shape[1] - 1
    orders = jnp.asarray(_all_orders(region, N))
    one = take(tp, slice(0, 1))
    cost = order_costs(one, orders)

    def exact(t):
        return (jnp.exp(log_prob(one, merged(params, t), orders)) * cost).sum()

    value, g_exact = jax.value_and_grad(exact)(tuned)
    jac = jax.jit(jax.jacrev(lambda t, s: region_surrogate(merged(params, t), tp, s, ONE_WAVE)))
    draws = []
    for k in range(rounds):
        s = sample(jax.random.key(100 + k), tp, params, ONE_WAVE)
        assert abs(float(s.cost.mean()) - float(value)) < 0.2
        draws.append(jac(tuned, s))
    # Every region's estimate is independent: a z-test per component on copies * rounds.
    tested = 0
    for name, exact_g in g_exact.items():
        est = np.concatenate([np.asarray(d[name]) for d in draws]).reshape(copies * rounds, -1)
        mean, se = est.mean(axis=0), est.std(axis=0, ddof=1) / np.sqrt(est.shape[0])
        ex = np.asarray(exact_g).ravel()
        assert (np.abs(mean - ex) <= 4 * se + 1e-6).all(), (name, mean, ex, se)
        tested += int((np.abs(ex) > 4 * se).sum())  # components where 0 would have failed
    assert tested >= 3


@pytest.mark.slow
def test_training_lowers_the_exact_expected_cost():
    regions, copies = [_five(15), _five(14)], 2  # 2 copies per region: each step ~2x faster
    tp = _problem(regions, copies=copies)
    params = _params()
    N = tp.prob.prep.succ.shape[1] - 1
    orders = jnp.asarray(_all_orders(regions[0], N))

    def expected(p):
        out = 0.0
        for b in (0, copies):
            one = take(tp, slice(b, b + 1))
            out += float((jnp.exp(log_prob(one, p, orders)) * order_costs(one, orders)).sum())
        return out

    kw = dict(files=F, steps=12, seed=1, config=ONE_WAVE, learning_rate=0.1)
    trained, log = train([tp], params, **kw)
    assert len(log) == 12 and all(np.isfinite(e.cost) for e in log)
    assert expected(trained) < expected(params) - 0.01
    compiled = _update._cache_size()
    again, _ = train([tp], params, **kw)
    assert _update._cache_size() == compiled  # the same settings reuse the compiled step
    for a, b in zip(trained, again, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
