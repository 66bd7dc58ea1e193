"""One contract for both JAX cores (docs/conventions.md): the colony (`jaxsched.colony`) and
the warp-makespan annealer (`jaxsched.makespan`), each seen through the same four functions:

    start(key, params) -> state      step(key, state, params) -> state
    run(key, state, params, steps) -> state       (``key`` unused by the colony: its state
                                                   carries its own)

Both must give: jit equal to eager; `vmap` over stacked params equal to separate calls;
`lax.scan` of `step` equal to `run`; `run(a)` then `run(b)` equal to `run(a + b)`; and no
retracing for new parameter values or step counts."""

from __future__ import annotations

from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import shuffled, stack_trees

from jaxsched import colony
from jaxsched import makespan as ms
from jaxsched.machines import generic
from jaxsched.problem.generate import generate_regions


class Core(NamedTuple):
    """One core behind the contract's four functions, and two parameter settings."""

    start: Any  # (key, params) -> state
    step: Any  # (key, state, params) -> state
    run: Any  # (key, state, params, steps) -> state
    params: tuple  # two settings (pytrees of the same structure)


def _colony() -> Core:
    rng = np.random.default_rng(0)
    regs = [r for r in generate_regions(5, 12, 9, 16) if 9 <= len(r) <= 16][:2]
    machine = generic(registers_per_file=32, max_occupancy=8)
    prob = colony.problem([shuffled(r, rng) for r in regs], machine, starts=("input",))
    config = colony.ColonyConfig(wavefronts=2, wavefront_size=16, max_iterations=4)
    settings = (colony.default_params(cycle_threshold=-1.0), colony.default_params(decay=0.5))
    return Core(
        start=lambda key, p: colony.init(key, prob, p, config=config),
        step=lambda key, s, p: colony.step(s, prob, p, config=config),
        run=lambda key, s, p, k: colony.run(s, prob, p, k, config=config),
        params=settings,
    )


def _annealer() -> Core:
    norm = ms.normalize("LCCSLD", ms.SM(schedulers=4, capacity={"L": 1, "C": 4, "S": 1, "D": 0.5}))
    warps, chains = 4, 8
    tab = ms.tables(norm, warps)

    def start(key, p):
        strings, _ = ms.start_strings(norm, warps, chains, ms.STARTS, key)
        return ms.init(tab, jnp.asarray(strings))

    return Core(
        start=start,
        step=lambda key, s, p: ms.step(jax.random.fold_in(key, s.iteration), s, tab, p),
        run=lambda key, s, p, k: ms.run(key, s, tab, p, k),
        params=(ms.make_params(50), ms.make_params(200, t0=2.0, moves=(1.0, 0.0, 0.0))),
    )


CORES = {"colony": _colony, "annealer": _annealer}


@pytest.fixture(scope="module", params=sorted(CORES))
def core(request) -> Core:
    return CORES[request.param]()


def _equal(a, b) -> None:
    chex.assert_trees_all_equal(jax.device_get(a), jax.device_get(b))


def _moved(a, b) -> bool:
    """Some leaf of two states differs (the steps did something)."""
    leaves = jax.tree.leaves(jax.device_get(a)), jax.tree.leaves(jax.device_get(b))
    pairs = zip(*leaves, strict=True)
    return any(not np.array_equal(x, y) for x, y in pairs)


def test_jit_equals_eager(core):
    key, p = jax.random.key(1), core.params[0]
    s0 = core.start(key, p)
    eager = core.run(key, s0, p, 3)
    assert _moved(eager, s0)  # not vacuous: three steps change the state
    _equal(jax.jit(core.run)(key, s0, p, jnp.int32(3)), eager)


def test_vmap_over_params_equals_separate_calls(core):
    key = jax.random.key(2)
    s0 = core.start(key, core.params[0])
    run = jax.jit(core.run)
    separate = [run(key, s0, p, jnp.int32(4)) for p in core.params]
    assert _moved(*separate)  # the two settings give two results
    batched = jax.jit(jax.vmap(core.run, in_axes=(None, None, 0, None)))(
        key, s0, stack_trees(core.params), jnp.int32(4)
    )
    _equal(batched, stack_trees(separate))


def test_scan_of_step_equals_run(core):
    key, p = jax.random.key(3), core.params[0]
    s0 = core.start(key, p)

    @jax.jit
    def scanned(s):
        return jax.lax.scan(lambda st, _: (core.step(key, st, p), None), s, None, length=4)[0]

    _equal(scanned(s0), jax.jit(core.run)(key, s0, p, jnp.int32(4)))


def test_run_a_then_b_equals_run_a_plus_b(core):
    key, p = jax.random.key(4), core.params[0]
    s0 = core.start(key, p)
    run = jax.jit(core.run)
    _equal(run(key, run(key, s0, p, jnp.int32(2)), p, jnp.int32(3)), run(key, s0, p, jnp.int32(5)))


def test_no_retracing_for_new_params_or_step_counts(core):
    key = jax.random.key(5)
    s0 = core.start(key, core.params[0])
    chex.clear_trace_counter()
    run = jax.jit(chex.assert_max_traces(core.run, n=1))
    for p, k in zip(core.params, (2, 3), strict=True):
        run(key, s0, p, jnp.int32(k))


def test_the_entry_points_refuse_arrays_of_inconsistent_shapes():
    """`chex` shape checks at the cores' entry points: a clear error when traced, not an
    index out of range inside a step."""
    rng = np.random.default_rng(0)
    regs = [r for r in generate_regions(5, 12, 9, 16) if 9 <= len(r) <= 16][:2]
    machine = generic(registers_per_file=32, max_occupancy=8)
    prob = colony.problem([shuffled(r, rng) for r in regs], machine, starts=("input",))
    params, key = colony.default_params(), jax.random.key(0)
    jax.eval_shape(lambda: colony.init(key, prob, params))  # consistent: no error
    cut = prob._replace(start_order=prob.start_order[..., :-1])
    with pytest.raises(AssertionError, match="shape"):
        jax.eval_shape(lambda: colony.init(key, cut, params))
    norm = ms.normalize("LCCSLD", ms.SM(schedulers=4, capacity={"L": 1, "C": 4, "S": 1, "D": 1}))
    tab = ms.tables(norm, 4)
    with pytest.raises(AssertionError, match="rank"):
        ms.init(tab, jnp.zeros(24, jnp.int32))
    with pytest.raises(AssertionError, match="type"):
        ms.init(tab, jnp.zeros((24, 8), jnp.float32))
