"""The pure annealing API of jaxsched.makespan (init / step / run, AnnealParams, ChainState):
no retracing for new parameter values, jit == eager, vmap over stacked params == separate calls,
a user's own lax.scan over `step` == `run`, determinism per key, and `estimate` as a shell."""

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
    init,
    make_params,
    normalize,
    run,
    step,
    tables,
)
from jaxsched.makespan.anneal import temperature
from jaxsched.makespan.decoder import decode_bytes
from jaxsched.makespan.host import anneal_bytes, plan_estimate

SM4 = SM(schedulers=4, capacity={"L": 1, "C": 4, "S": 1, "D": 0.5})
WARPS, CHAINS, STEPS = 4, 8, 24
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
    """(normalised kernel, tables, start state) of a small instance, 4 warps x 8 chains."""
    norm = normalize("LCCSLD", SM4)
    tab = tables(norm, WARPS)
    strings, _ = ms.start_strings(norm, WARPS, CHAINS, ms.STARTS, jax.random.key(0))
    return norm, tab, INIT(tab, jnp.asarray(strings))


def test_no_retrace_when_params_steps_key_or_kernel_change(problem):
    # RUN and STEP at the problem's shapes (each traced at most once for them, by whichever test
    # calls it first; steps as a Python int, as the other tests pass them).
    norm, tab, state = problem
    before = dict(TRACES)
    key = jax.random.key(1)
    out = RUN(key, state, tab, make_params(50), 5)
    STEP(key, state, tab, make_params(50))
    assert TRACES["run"] - before["run"] <= 1 and TRACES["step"] - before["step"] <= 1
    first = dict(TRACES)
    # New t0, cooling length, move mix, step count, key and kernel contents: no retrace.
    tab2 = tables(normalize("DSLCCL", SM4), WARPS)
    params2 = make_params(80, t0=1.5, moves=(0.0, 1.0, 3.0))
    RUN(jax.random.key(2), out, tab2, params2, 9)
    RUN(key, state, tab, make_params(7, t0=0.0), 3)
    STEP(jax.random.key(5), out, tab2, params2)
    assert first == TRACES
    check_chain_state(norm, out)


def test_jit_matches_eager(problem):
    norm, tab, state = problem
    key, params = jax.random.key(3), make_params(STEPS, t0=0.7, moves=(0.2, 0.3, 0.5))
    eager = run(key, state, tab, params, 4)  # op by op; its loops compile on the fly
    eager_step = step(key, state, tab, params)
    chex.assert_trees_all_equal(RUN(key, state, tab, params, 4), eager)
    chex.assert_trees_all_equal(STEP(key, state, tab, params), eager_step)
    assert int(eager.iteration) == 4
    check_chain_state(norm, eager)


def test_vmap_over_stacked_params_equals_separate_calls(problem):
    norm, tab, state = problem
    key = jax.random.key(4)
    settings = [
        make_params(STEPS),
        make_params(STEPS, t0=2.0, moves=(1.0, 0.0, 0.0)),
        make_params(2 * STEPS, t0=0.0, moves=(0.0, 0.5, 0.5)),
    ]
    batched = jax.jit(jax.vmap(run, in_axes=(None, None, None, 0, None)))(
        key, state, tab, stack_trees(settings), STEPS
    )
    separate = [RUN(key, state, tab, p, STEPS) for p in settings]
    chex.assert_trees_all_equal(batched, stack_trees(separate))
    for s in separate:
        check_chain_state(norm, s)
    # The settings matter (the test could fail if params were ignored).
    strings = [np.asarray(s.current.string) for s in separate]
    assert not np.array_equal(strings[0], strings[1])
    assert not np.array_equal(strings[1], strings[2])


def test_vmap_over_keys_states_and_tables_equals_separate_calls(problem):
    norm, tab, state = problem
    norm2 = normalize("DSLCCL", SM4)  # same length: same shapes, other instance
    tab2 = tables(norm2, WARPS)
    state2 = INIT(tab2, state.current.string)
    keys = jax.random.split(jax.random.key(8), 2)
    params = make_params(STEPS, t0=0.5)
    batched = jax.jit(jax.vmap(run, in_axes=(0, 0, 0, None, None)))(
        keys, stack_trees([state, state2]), stack_trees([tab, tab2]), params, STEPS
    )
    separate = [RUN(keys[0], state, tab, params, STEPS), RUN(keys[1], state2, tab2, params, STEPS)]
    chex.assert_trees_all_equal(batched, stack_trees(separate))
    check_chain_state(norm, separate[0])
    check_chain_state(norm2, separate[1])


def test_user_scan_over_step_equals_run(problem):
    norm, tab, state = problem
    key, params = jax.random.key(5), make_params(STEPS, t0=0.5)

    @jax.jit
    def user_loop(state):
        def body(st, _):
            st = step(jax.random.fold_in(key, st.iteration), st, tab, params)
            return st, st.best_makespan

        return jax.lax.scan(body, state, None, length=STEPS)

    scanned, history = user_loop(state)
    chex.assert_trees_all_equal(scanned, RUN(key, state, tab, params, STEPS))
    assert history.shape == (STEPS, CHAINS)
    assert np.all(np.diff(np.asarray(history), axis=0) >= 0), "best-so-far must not decrease"
    # Split runs continue the same key stream.
    half = RUN(key, state, tab, params, STEPS // 2)
    chex.assert_trees_all_equal(RUN(key, half, tab, params, STEPS - STEPS // 2), scanned)
    check_chain_state(norm, scanned)


def test_deterministic_per_key(problem):
    _, tab, state = problem
    params = make_params(STEPS, t0=1.0)
    a = RUN(jax.random.key(6), state, tab, params, STEPS)
    chex.assert_trees_all_equal(a, RUN(jax.random.key(6), state, tab, params, STEPS))
    b = RUN(jax.random.key(7), state, tab, params, STEPS)
    assert not np.array_equal(np.asarray(a.current.string), np.asarray(b.current.string))


@pytest.mark.parametrize(("move", "weights"), [(0, (1, 0, 0)), (1, (0, 1, 0)), (2, (0, 0, 1))])
def test_move_weights_select_the_documented_move(problem, move, weights):
    # With a huge temperature every candidate is accepted, so each step shows its move.
    _, tab, state = problem
    params = make_params(1000, t0=1e30, moves=weights)
    old = state
    for it in range(6):
        new = STEP(jax.random.key(it), old, tab, params)
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


def test_temperature_schedule():
    params = make_params(100, t0=2.0)
    temps = [float(temperature(params, jnp.int32(i))) for i in (0, 25, 100, 150)]
    assert temps == pytest.approx([2.0, 1.5, 0.0, 0.0])


def test_estimate_is_a_shell_over_the_pure_functions():
    norm = normalize("LLCSD", SM4)
    res = ms.estimate(norm, 3, seed=9, chains=6, iterations=30, chunk=7, t0=0.4)
    k_start, k_run = jax.random.split(jax.random.key(9))
    strings, names = ms.start_strings(norm, 3, 6, ms.STARTS, k_start)
    tab = tables(norm, 3)
    state = RUN(k_run, INIT(tab, jnp.asarray(strings)), tab, make_params(30, t0=0.4), 30)
    np.testing.assert_array_equal(res.chain_best, state.best_makespan)
    assert names == res.chain_start
    assert verified_makespan(norm, res.warp_string) == res.makespan
    np.testing.assert_array_equal(res.history_iterations, [0, 7, 14, 21, 28, 30])


def test_estimate_progress_per_device_call(monkeypatch):
    # Long runs are cut into device calls (here one step each) for progress; records and
    # results do not depend on the cut. (6 instructions, 3 warps, 6 chains: the shapes of the
    # shell test above.)
    norm = normalize("LCSDC", SM4)
    kw = dict(seed=2, chains=6, iterations=25, chunk=10)
    whole = ms.estimate(norm, 3, **kw)
    monkeypatch.setattr("jaxsched.makespan.host.CALL_WORK", 1)
    assert plan_estimate(norm, 3, **kw).call_steps == 1
    calls = []
    cut = ms.estimate(norm, 3, progress=calls.append, **kw)
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
def test_make_params_rejects_bad_values(kwargs, match):
    with pytest.raises(MakespanError, match=match):
        make_params(**{"cooling_steps": 10, **kwargs})


@pytest.mark.parametrize(("n_kernel", "warps", "chains"), [("LCCS", 4, 64), ("LCCSLD" * 8, 16, 32)])
def test_memory_estimates_cover_xla_memory_analysis(n_kernel, warps, chains):
    norm = normalize(n_kernel, SM4)
    tab = tables(norm, warps)
    n = warps * len(norm.kernel)
    strings = jax.ShapeDtypeStruct((n, chains), jnp.int32)
    state = jax.eval_shape(init, tab, strings)

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

    used = total(run, jax.random.key(0), state, tab, make_params(10), jnp.int32(3))
    assert used <= anneal_bytes(n, warps, chains, records=0)
    assert total(init, tab, strings) <= decode_bytes(n, warps, chains)
