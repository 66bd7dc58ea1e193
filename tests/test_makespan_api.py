"""The pure annealing API of jaxsched.makespan (init / step / run, AnnealParams, ChainState)
beyond the contract both cores keep (tests/test_contract.py: jit == eager for `run`, vmap over
stacked params == separate calls, `lax.scan` of `step` == `run`, split runs, the key decides
the run, no retracing for new params or step counts): `step` jit == eager, no retracing for a
new key or kernel, vmap over states and problems, the best-so-far never decreases, the moves,
the temperature, `default_params`' checks, memory estimates, and `estimate` as a shell."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import check_chain_state, stack_trees
from makespan_reference import verified_makespan

import jaxsched.makespan as ms
from jaxsched.makespan import (
    SM,
    MakespanError,
    default_params,
    init,
    normalize,
    run,
    step,
    tables,
)
from jaxsched.makespan.anneal import temperature
from jaxsched.makespan.decoder import decode_bytes
from jaxsched.makespan.host import anneal_bytes, plan_estimate

SM4 = SM(schedulers=4, capacity={"L": 1, "C": 4, "S": 1, "D": 0.5})
#: The shapes of every test here (and of tests/test_contract.py's annealer): "LCCSLD" is 7
#: instructions (D doubles), 4 warps, 8 chains.
KERNEL, WARPS, CHAINS, STEPS = "LCCSLD", 4, 8, 24
#: Traces of `RUN` and `STEP` so far (one per new argument signature; see the no-retrace test).
TRACES = {"run": 0, "step": 0}


def _counted(fn):
    def traced(*args):
        TRACES[fn.__name__] += 1
        return fn(*args)

    return traced


#: Reference runs are jitted (an eager fori_loop recompiles per call); jit == eager is tested.
RUN = jax.jit(_counted(run))
STEP = jax.jit(_counted(step))
INIT = jax.jit(init)


@pytest.fixture(scope="module")
def problem():
    """(normalised kernel, tables, start state with key 0) of a small instance, 4 warps x 8
    chains."""
    norm = normalize(KERNEL, SM4)
    tab = tables(norm, WARPS)
    strings, _ = ms.start_strings(norm, WARPS, CHAINS, ms.STARTS, jax.random.key(0))
    return norm, tab, INIT(jax.random.key(0), tab, default_params(), jnp.asarray(strings))


def test_no_retrace_when_params_steps_key_or_kernel_change(problem):
    # RUN and STEP at the problem's shapes (each traced at most once for them, by whichever test
    # calls it first; steps as a Python int, as the other tests pass them).
    norm, tab, state = problem
    before = dict(TRACES)
    out = RUN(state, tab, default_params(50), 5)
    STEP(state, tab, default_params(50))
    assert TRACES["run"] - before["run"] <= 1 and TRACES["step"] - before["step"] <= 1
    first = dict(TRACES)
    # New t0, cooling length, move mix, step count, key and kernel contents: no retrace.
    tab2 = tables(normalize("DSLCCL", SM4), WARPS)
    params2 = default_params(80, t0=1.5, moves=(0.0, 1.0, 3.0))
    rekeyed = out._replace(key=jax.random.key(2))
    RUN(rekeyed, tab2, params2, 9)
    RUN(state, tab, default_params(7, t0=0.0), 3)
    STEP(rekeyed, tab2, params2)
    assert first == TRACES
    check_chain_state(norm, out)
    # The check can fail: another chain count is a new signature (traced, not compiled).
    jax.eval_shape(RUN, jax.tree.map(lambda x: x[..., :4] if x.ndim else x, state), tab, params2, 1)
    assert TRACES["run"] == first["run"] + 1


def test_step_jit_matches_eager_and_best_never_decreases(problem):
    norm, tab, state = problem
    params = default_params(STEPS, t0=0.7, moves=(0.2, 0.3, 0.5))
    eager = step(state, tab, params)  # op by op; its loops compile on the fly
    chex.assert_trees_all_equal(STEP(state, tab, params), eager)
    assert int(eager.iteration) == 1
    np.testing.assert_array_equal(jax.random.key_data(eager.key), jax.random.key_data(state.key))
    check_chain_state(norm, eager)
    # The best-so-far per chain never decreases while the chains move.
    history, current = [np.asarray(state.best_makespan)], state
    for _ in range(STEPS):
        current = RUN(current, tab, params, 1)
        history.append(np.asarray(current.best_makespan))
    assert np.all(np.diff(history, axis=0) >= 0), "best-so-far must not decrease"
    assert not np.array_equal(np.asarray(current.current.string), np.asarray(state.best_string))
    check_chain_state(norm, current)


def test_vmap_over_states_and_problems_equals_separate_calls(problem):
    norm, tab, state = problem
    norm2 = normalize("DSLCCL", SM4)  # same length: same shapes, other instance
    tab2 = tables(norm2, WARPS)
    params = default_params(STEPS, t0=0.5)
    state2 = INIT(jax.random.key(8), tab2, params, state.current.string)  # another key too
    batched = jax.jit(jax.vmap(run, in_axes=(0, 0, None, None)))(
        stack_trees([state, state2]), stack_trees([tab, tab2]), params, STEPS
    )
    separate = [RUN(state, tab, params, STEPS), RUN(state2, tab2, params, STEPS)]
    chex.assert_trees_all_equal(batched, stack_trees(separate))
    check_chain_state(norm, separate[0])
    check_chain_state(norm2, separate[1])


@pytest.mark.parametrize(("move", "weights"), [(0, (1, 0, 0)), (1, (0, 1, 0)), (2, (0, 0, 1))])
def test_move_weights_select_the_documented_move(problem, move, weights):
    # With a huge temperature every candidate is accepted, so each step shows its move.
    _, tab, state = problem
    params = default_params(1000, t0=1e30, moves=weights)
    old = state
    for _ in range(6):
        new = STEP(old, tab, params)
        before, after = np.asarray(old.current.string).T, np.asarray(new.current.string).T
        for x, y in zip(before, after, strict=True):
            diff = np.flatnonzero(x != y)
            if diff.size == 0:
                continue  # equal ids moved
            p, q = diff[0], diff[-1]
            if move == 0:
                assert x[p] == y[q] and x[q] == y[p] and np.array_equal(x[p + 1 : q], y[p + 1 : q])
            else:  # forward: the id at q moves to p; backward: the id at p moves to q
                want = np.roll(x[p : q + 1], 1 if move == 1 else -1)
                assert np.array_equal(want, y[p : q + 1])
        old = new
    assert not np.array_equal(np.asarray(old.current.string), np.asarray(state.current.string))


def test_temperature_schedule():
    params = default_params(100, t0=2.0)
    temps = [float(temperature(params, jnp.int32(i))) for i in (0, 25, 100, 150)]
    assert temps == pytest.approx([2.0, 1.5, 0.0, 0.0])


def test_estimate_is_a_shell_over_the_pure_functions(problem):
    # The problem's shapes: RUN and INIT are compiled already.
    norm, tab, _ = problem
    res = ms.estimate(norm, WARPS, seed=9, chains=CHAINS, iterations=30, chunk=7, t0=0.4)
    k_start, k_run = jax.random.split(jax.random.key(9))
    strings, names = ms.start_strings(norm, WARPS, CHAINS, ms.STARTS, k_start)
    params = default_params(30, t0=0.4)
    state = RUN(INIT(k_run, tab, params, jnp.asarray(strings)), tab, params, 30)
    np.testing.assert_array_equal(res.chain_best, state.best_makespan)
    assert names == res.chain_start
    assert verified_makespan(norm, res.warp_string) == res.makespan
    np.testing.assert_array_equal(res.history_iterations, [0, 7, 14, 21, 28, 30])


def test_estimate_progress_per_device_call(monkeypatch):
    # Long runs are cut into device calls (here one step each) for progress; records and
    # results do not depend on the cut. (The shapes of the shell test above.)
    norm = normalize("LCSDCC", SM4)
    kw = dict(seed=2, chains=CHAINS, iterations=25, chunk=10)
    whole = ms.estimate(norm, WARPS, **kw)
    monkeypatch.setattr("jaxsched.makespan.host.CALL_WORK", 1)
    assert plan_estimate(norm, WARPS, **kw).call_steps == 1
    calls = []
    cut = ms.estimate(norm, WARPS, progress=calls.append, **kw)
    assert calls == [1] * 25
    np.testing.assert_array_equal(cut.history_iterations, [0, 10, 20, 25])
    np.testing.assert_array_equal(cut.history, whole.history)
    np.testing.assert_array_equal(cut.warp_string, whole.warp_string)
    assert verified_makespan(norm, cut.warp_string) == cut.makespan


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"t0": -1.0}, "t0"),
        ({"t0": float("nan")}, "t0"),
        ({"t0": 1e39}, "float32"),
        ({"moves": (1, 2)}, "moves"),
        ({"moves": (0, 0, 0)}, "moves"),
        ({"moves": (1, -1, 1)}, "moves"),
        ({"moves": "abc"}, "moves"),
        ({"cooling_steps": 0}, "cooling_steps"),
    ],
)
def test_default_params_rejects_bad_values(kwargs, match):
    with pytest.raises(MakespanError, match=match):
        default_params(**{"cooling_steps": 10, **kwargs})


def test_default_params_defaults():
    params = default_params()
    assert float(params.cooling_steps) == 2000 and float(params.t0) == pytest.approx(0.3)
    np.testing.assert_allclose(params.moves, [0.5, 0.25, 0.25])
    np.testing.assert_allclose(default_params(10, moves=(2, 1, 1)).moves, [0.5, 0.25, 0.25])


@pytest.mark.parametrize(("n_kernel", "warps", "chains"), [("LCCS", 4, 64), ("LCCSLD" * 8, 16, 32)])
def test_memory_estimates_cover_xla_memory_analysis(n_kernel, warps, chains):
    norm = normalize(n_kernel, SM4)
    tab = tables(norm, warps)
    n = warps * len(norm.kernel)
    strings = jax.ShapeDtypeStruct((n, chains), jnp.int32)
    key, params = jax.random.key(0), default_params(10)
    state = jax.eval_shape(init, key, tab, params, strings)

    def total(fn, *args):
        m = jax.jit(fn).lower(*args).compile().memory_analysis()
        if m is None:
            pytest.skip("no memory analysis on this backend")
        return (
            m.argument_size_in_bytes
            + m.output_size_in_bytes
            - m.alias_size_in_bytes
            + m.temp_size_in_bytes
        )

    used = total(run, state, tab, params, jnp.int32(3))
    assert used <= anneal_bytes(n, warps, chains, records=0)
    assert total(init, key, tab, params, strings) <= decode_bytes(n, warps, chains)
