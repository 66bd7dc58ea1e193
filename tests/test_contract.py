"""One contract for both JAX cores (docs/conventions.md): the colony (`jaxsched.colony`) and
the warp-makespan annealer (`jaxsched.makespan`) share one protocol, so one table holds both and
every test calls them the same way, with no adapter:

    state = api.init(key, problem, params, **start, **options)
    state = api.step(state, problem, params, **options)
    state = api.run(state, problem, params, steps, **options)

(``options``: the static configuration, the colony's ``config``; ``start``: what else a start
takes, the annealer's start ``strings``). Both must give: jit equal to eager; `vmap` over
stacked params equal to separate calls; `lax.scan` of `step` equal to `run`; `run(a)` then
`run(b)` equal to `run(a + b)`; the same key the same run and another key another run; and no
retracing for new parameter values or step counts."""

from __future__ import annotations

from functools import partial
from types import ModuleType
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
    """One core of the contract: its module and an instance."""

    api: ModuleType  # init, step, run and default_params, with the protocol above
    problem: Any  # the core's problem pytree
    settings: tuple  # two parameter settings from api.default_params (one structure)
    start: dict  # init's arguments beyond (key, problem, params)
    options: dict  # keyword-only static configuration of init, step and run


def _colony_problem() -> colony.ColonyProblem:
    rng = np.random.default_rng(0)
    regs = [r for r in generate_regions(5, 12, 9, 16) if 9 <= len(r) <= 16][:2]
    machine = generic(registers_per_file=32, max_occupancy=8)
    return colony.problem([shuffled(r, rng) for r in regs], machine, starts=("input",))


def _colony() -> Core:
    return Core(
        api=colony,
        problem=_colony_problem(),
        settings=(colony.default_params(cycle_threshold=-1.0), colony.default_params(decay=0.5)),
        start={},
        options={"config": colony.ColonyConfig(wavefronts=2, wavefront_size=16, max_iterations=4)},
    )


SM4 = ms.SM(schedulers=4, capacity={"L": 1, "C": 4, "S": 1, "D": 0.5})


def _annealer() -> Core:
    norm, warps, chains = ms.normalize("LCCSLD", SM4), 4, 8
    strings, _ = ms.start_strings(norm, warps, chains, ms.STARTS, jax.random.key(0))
    return Core(
        api=ms,
        problem=ms.tables(norm, warps),
        settings=(ms.default_params(50), ms.default_params(200, t0=2.0, moves=(1.0, 0.0, 0.0))),
        start={"strings": jnp.asarray(strings)},
        options={},
    )


CORES = {"colony": _colony, "annealer": _annealer}


class Bench(NamedTuple):
    """A core with what its tests share: one compilation of `init` and one of `run`."""

    core: Core
    init: Any  # jitted init
    run: Any  # jitted run, failing when traced a second time (chex.assert_max_traces)
    state: Any  # the state before the first step: key 1, the first setting


@pytest.fixture(scope="module", params=sorted(CORES))
def bench(request) -> Bench:
    core = CORES[request.param]()
    static = tuple(core.options)
    init = jax.jit(core.api.init, static_argnames=static)
    state = init(jax.random.key(1), core.problem, core.settings[0], **core.start, **core.options)
    chex.clear_trace_counter()  # a new jitted run traces anew
    traced_once = chex.assert_max_traces(core.api.run, n=1)
    return Bench(
        core=core, init=init, run=jax.jit(traced_once, static_argnames=static), state=state
    )


def _init(bench: Bench, key: jax.Array, params) -> Any:
    core = bench.core
    return bench.init(key, core.problem, params, **core.start, **core.options)


def _run(bench: Bench, state, params, steps: int) -> Any:
    """``steps`` steps with the shared jitted run (a traced step count: one compilation)."""
    core = bench.core
    return bench.run(state, core.problem, params, jnp.int32(steps), **core.options)


def _equal(a, b) -> None:
    chex.assert_trees_all_equal(jax.device_get(a), jax.device_get(b))


def _data(state) -> list[np.ndarray]:
    """The state's leaves that are not keys."""
    leaves = jax.tree.leaves(jax.device_get(state))
    return [x for x in leaves if not jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)]


def _moved(a, b) -> bool:
    """Some leaf other than a key differs between two states (the steps did something)."""
    pairs = zip(_data(a), _data(b), strict=True)
    return any(not np.array_equal(x, y) for x, y in pairs)


def test_jit_equals_eager(bench):
    core, p = bench.core, bench.core.settings[0]
    eager = core.api.run(bench.state, core.problem, p, 3, **core.options)
    assert _moved(eager, bench.state)  # not vacuous: three steps change the state
    _equal(_run(bench, bench.state, p, 3), eager)


def test_vmap_over_params_equals_separate_calls(bench):
    core = bench.core
    separate = [_run(bench, bench.state, p, 4) for p in core.settings]
    assert _moved(*separate)  # the two settings give two results
    run = partial(core.api.run, **core.options)
    batched = jax.jit(jax.vmap(run, in_axes=(None, None, 0, None)))(
        bench.state, core.problem, stack_trees(core.settings), jnp.int32(4)
    )
    _equal(batched, stack_trees(separate))


def test_scan_of_step_equals_run(bench):
    core, p = bench.core, bench.core.settings[0]
    step = partial(core.api.step, problem=core.problem, params=p, **core.options)

    def body(state, _):
        return step(state), None

    @jax.jit
    def scanned(state):
        return jax.lax.scan(body, state, None, length=4)[0]

    _equal(scanned(bench.state), _run(bench, bench.state, p, 4))


def test_run_a_then_b_equals_run_a_plus_b(bench):
    p = bench.core.settings[0]
    _equal(_run(bench, _run(bench, bench.state, p, 2), p, 3), _run(bench, bench.state, p, 5))


def test_the_key_decides_the_run(bench):
    p = bench.core.settings[0]
    again = _init(bench, jax.random.key(1), p)
    _equal(_run(bench, again, p, 4), _run(bench, bench.state, p, 4))
    other = _run(bench, _init(bench, jax.random.key(2), p), p, 4)
    assert _moved(other, _run(bench, bench.state, p, 4))


def test_no_retracing_for_new_params_or_step_counts(bench):
    # bench.run fails when traced twice; every test of the core used it with its settings and
    # step counts, and here the other setting and new counts once more.
    for p, steps in zip(bench.core.settings, (2, 3), strict=True):
        _run(bench, bench.state, p, steps)
    with pytest.raises(AssertionError, match="traced > 1 times"):  # the check can fail
        _run(bench, jax.tree.map(lambda x: x[None], bench.state), bench.core.settings[0], 1)


def test_the_entry_points_refuse_arrays_of_inconsistent_shapes():
    """`chex` shape checks at the cores' entry points: a clear error when traced, not an
    index out of range inside a step."""
    prob = _colony_problem()
    params, key = colony.default_params(), jax.random.key(0)
    jax.eval_shape(lambda: colony.init(key, prob, params))  # consistent: no error
    cut = prob._replace(start_order=prob.start_order[..., :-1])
    with pytest.raises(AssertionError, match="shape"):
        jax.eval_shape(lambda: colony.init(key, cut, params))
    tab = ms.tables(ms.normalize("LCCSLD", SM4), 4)
    with pytest.raises(AssertionError, match="rank"):
        ms.init(key, tab, ms.default_params(), jnp.zeros(24, jnp.int32))
    with pytest.raises(AssertionError, match="type"):
        ms.init(key, tab, ms.default_params(), jnp.zeros((24, 8), jnp.float32))
