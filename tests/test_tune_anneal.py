"""`jaxsched.tune.sweep_anneal`: k annealing settings in one call equal k separate runs, every
best string decodes (independently) to its makespan, the reported best is the largest, and the
same state (and so the same key) gives the same sweep."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
from makespan_reference import verified_makespan

import jaxsched.makespan as ms
from jaxsched.tune import sweep_anneal
from jaxsched.tune.anneal import stack_anneal_params

SM4 = ms.SM(schedulers=4, capacity={"L": 1, "C": 4, "S": 1, "D": 0.5})
WARPS, CHAINS, STEPS = 4, 8, 40


def test_sweep_anneal_equals_separate_runs_and_reports_the_largest():
    norm = ms.normalize("LCCSLDLC", SM4)
    tab = ms.tables(norm, WARPS)
    strings, _ = ms.start_strings(norm, WARPS, CHAINS, ms.STARTS, jax.random.key(0))
    settings = [
        ms.default_params(STEPS),
        ms.default_params(STEPS, t0=3.0, moves=(1.0, 0.0, 0.0)),
        ms.default_params(STEPS, t0=0.0, moves=(0.0, 0.5, 0.5)),
    ]
    state = ms.init(jax.random.key(7), tab, settings[0], jnp.asarray(strings))
    out = sweep_anneal(state, tab, stack_anneal_params(settings), STEPS)
    run = jax.jit(ms.run)
    for i, p in enumerate(settings):
        one = jax.device_get(run(state, tab, p, STEPS))
        chex.assert_trees_all_equal(jax.tree.map(lambda x, i=i: x[i], out.states), one)
        best = np.asarray(one.best_string)
        for b in range(CHAINS):
            assert verified_makespan(norm, best[:, b]) == int(one.best_makespan[b])
        assert out.makespan[i] == int(np.max(one.best_makespan))
    assert out.makespan[out.best] == out.makespan.max()
    again = sweep_anneal(state, tab, stack_anneal_params(settings), STEPS)
    chex.assert_trees_all_equal(again.states, out.states)
    # The settings matter (the test could fail if they were ignored).
    cur = np.asarray(out.states.current.string)
    assert not np.array_equal(cur[0], cur[1]) and not np.array_equal(cur[1], cur[2])
