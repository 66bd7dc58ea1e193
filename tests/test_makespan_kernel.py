"""The fused annealing kernel (`jaxsched.makespan.kernel`) against the `lax` reference
(`anneal.run`): identical strings, cycles, units, makespans and bests on many random kernels and
settings (Pallas interpreter on the CPU), edge cases (1 warp, 1 chain, 1 position, tight
capacities, launches cut mid-run); it lowers for CUDA (Triton) on this CPU-only machine, does
not retrace, and is wired through `estimate` and the CLI."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from cuda_lowering import TRITON_CALL, lower_for_cuda
from helpers import check_chain_state

# The Pallas interpreter's first trace imports this module, which defines a configuration value
# of JAX's trace context: every function compiled before it would then trace and compile again.
# Imported first, nothing compiles twice.
from jax.experimental.pallas import fuser  # noqa: F401  # isort: skip

import jaxsched.makespan as ms
from jaxsched import fused
from jaxsched.cli.main import main
from jaxsched.makespan import SM, MakespanError, default_params, init, normalize, run, tables
from jaxsched.makespan.host import plan_estimate
from jaxsched.makespan.kernel import run_fused
from jaxsched.makespan.model import fixed_priority, most_pending, round_robin

RUN = jax.jit(run)
INIT = jax.jit(init)
#: Traces of `FUSED` so far (one per new argument signature; see the no-retrace test).
TRACES = [0]


def _fused(*args):
    TRACES[0] += 1
    return run_fused(*args, interpret=True, block=4, launch_steps=5)


#: The kernel in the interpreter, 5 steps per launch (runs cross launch boundaries), blocks of
#: 4 chains (several programs).
FUSED = jax.jit(_fused)


def _starts(rng: np.random.Generator, norm, warps: int, chains: int) -> np.ndarray:
    """Start strings int32[W*I, chains] as `start_strings` mixes them (round robin, priority,
    most pending, random), the random ones drawn on the host (no compilation per shape)."""
    n_instr = len(norm.kernel)
    templates = (
        round_robin(warps, n_instr),
        fixed_priority(warps, n_instr),
        most_pending(norm, warps),
        None,
    )
    columns = [
        rng.permutation(templates[0]) if templates[c % 4] is None else templates[c % 4]
        for c in range(chains)
    ]
    return np.stack(columns, axis=1).astype(np.int32)


def _instance(rng: np.random.Generator, n_instr: int, warps: int, chains: int):
    """(normalised kernel, tables, start state with a random key) of a random kernel of
    ``n_instr`` instructions on a random SM (1..4 schedulers, integer capacities 1..4: the
    length stays ``n_instr``)."""
    kernel = "".join(rng.choice(list("LCSD"), n_instr))
    caps = {u: int(rng.integers(1, 5)) for u in "LCSD"}
    norm = normalize(kernel, SM(schedulers=int(rng.integers(1, 5)), capacity=caps))
    tab = tables(norm, warps)
    key = jax.random.key(int(rng.integers(1 << 30)))
    strings = _starts(rng, norm, warps, chains)
    return norm, tab, INIT(key, tab, default_params(), jnp.asarray(strings))


def _params(rng: np.random.Generator, steps: int):
    """Random settings: t0 in {0, small, large}, cooling shorter or longer than the run, a
    random move mix (sometimes a single move)."""
    moves = rng.random(3) * (rng.random(3) < 0.8)
    moves = moves if moves.sum() > 0 else np.eye(3)[rng.integers(3)]
    t0 = float(rng.choice([0.0, 0.3, 2.0, 50.0]))
    return default_params(int(rng.integers(max(1, steps // 2), 2 * steps)), t0=t0, moves=moves)


def _assert_same(ref, out) -> None:
    names = ("string", "cycle", "unit", "makespan", "best_string", "best_makespan", "iteration")
    ref_data, out_data = (jax.tree.leaves(s._replace(key=None)) for s in (ref, out))
    for name, a, b in zip(names, ref_data, out_data, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)
    keys = [jax.random.key_data(s.key) for s in (ref, out)]
    np.testing.assert_array_equal(*keys, err_msg="key")


@pytest.mark.parametrize(
    ("n_instr", "warps", "chains", "instances"),
    [
        (6, 4, 16, 8),  # the common case; 4 programs of 4 chains
        (8, 16, 8, 6),  # n = 128: four bit-set words (the shape of the tight-capacities test)
        (7, 1, 4, 4),  # one warp: every string is the same
        (3, 2, 1, 6),  # one chain (one program of one lane)
        (1, 1, 2, 2),  # one position
    ],
)
def test_fused_equals_lax_on_random_instances(n_instr, warps, chains, instances):
    # One shape per case (one compilation); kernels, SMs, settings, keys and step counts vary
    # (traced), so each case covers many instances.
    rng = np.random.default_rng(100 * n_instr + warps)
    for _ in range(instances):
        norm, tab, state = _instance(rng, n_instr, warps, chains)
        steps = int(rng.integers(1, 23))
        params = _params(rng, steps)
        ref = RUN(state, tab, params, jnp.int32(steps))
        out = FUSED(state, tab, params, jnp.int32(steps))
        _assert_same(ref, out)
        check_chain_state(norm, out)


def test_fused_equals_lax_on_tight_capacities_and_resumed_runs():
    # Capacity 1 everywhere: long schedules (four bit-set words); a run split into two calls
    # equals one call (step it draws from fold_in(key, it)).
    norm = normalize("LLLLCSDL", SM(schedulers=2, capacity=dict.fromkeys("LCSD", 1)))
    tab = tables(norm, 16)
    strings = _starts(np.random.default_rng(7), norm, 16, 8)
    params = default_params(30, t0=1.0)
    state = INIT(jax.random.key(8), tab, params, jnp.asarray(strings))
    ref = RUN(state, tab, params, jnp.int32(30))
    half = FUSED(state, tab, params, jnp.int32(13))
    out = FUSED(half, tab, params, jnp.int32(17))
    _assert_same(ref, out)
    check_chain_state(norm, out)
    assert int(np.asarray(ref.best_makespan).max()) > 64  # past the first two words
    changed = np.asarray(ref.best_string) != np.asarray(state.best_string)
    assert changed.any() and (np.asarray(ref.best_makespan) > np.asarray(state.best_makespan)).any()


@pytest.mark.parametrize(("n_instr", "warps", "chains"), [(6, 4, 1), (16, 8, 1024), (64, 64, 512)])
def test_kernel_lowers_for_cuda(n_instr, warps, chains):
    # Catches every primitive the Pallas Triton lowering lacks (as it would on the GPU).
    norm = normalize(
        "LCCSLD" * (n_instr // 6) + "L" * (n_instr % 6),
        SM(schedulers=4, capacity={u: 2 for u in "LCSD"}),
    )
    tab = tables(norm, warps)
    n = warps * n_instr
    params = default_params(10)
    strings = jax.ShapeDtypeStruct((n, chains), jnp.int32)
    state = jax.eval_shape(init, jax.random.key(0), tab, params, strings)
    args = (state, tab, params, jnp.int32(100))
    text = lower_for_cuda(run_fused, *args)
    assert text.count(TRITON_CALL) == 1  # one kernel, launched in a loop


def test_no_retrace_when_params_steps_key_or_kernel_change():
    # FUSED at the shape of the common case above (traced at most once: by whichever runs
    # first), then new settings, step count, key and kernel contents: no new trace.
    rng = np.random.default_rng(3)
    norm, tab, state = _instance(rng, 6, 4, 16)
    before = TRACES[0]
    out = FUSED(state, tab, default_params(50), jnp.int32(5))
    assert TRACES[0] - before <= 1
    first = TRACES[0]
    check_chain_state(norm, out)
    _, tab2, _ = _instance(rng, 6, 4, 16)
    params2 = default_params(80, t0=1.5, moves=(0.0, 1.0, 3.0))
    out = FUSED(out._replace(key=jax.random.key(2)), tab2, params2, jnp.int32(9))
    assert int(out.iteration) == 14
    assert TRACES[0] == first


def test_estimate_and_cli_switch():
    kw = dict(seed=3, chains=8, iterations=40, chunk=10)
    sm = SM(schedulers=2, capacity={"L": 1, "C": 4, "S": 1, "D": 0.5})
    ref = ms.estimate("LCCSLD", 4, sm, annealing="lax", **kw)
    out = ms.estimate("LCCSLD", 4, sm, annealing="interpret", **kw)
    assert out.makespan == ref.makespan
    np.testing.assert_array_equal(out.warp_string, ref.warp_string)
    np.testing.assert_array_equal(out.history, ref.history)
    assert plan_estimate("LCCSLD", 4, sm).annealing == fused.resolve("auto")
    with pytest.raises(MakespanError, match="annealing must be one of"):
        plan_estimate("LCCSLD", 4, sm, annealing="triton")
    if fused.gpu_platform() is None:
        with pytest.raises(MakespanError, match="annealing 'pallas' needs a GPU"):
            plan_estimate("LCCSLD", 4, sm, annealing="pallas")


def test_cli_annealing_option(capsys):
    argv = ["makespan", "--kernel", "LCCSLD", "--warps", "4", "--schedulers", "2"]
    argv += ["--capacity", "L=1,C=4,S=1,D=0.5", "--chains", "8", "--iterations", "20"]
    argv += ["--json", "--quiet"]
    results = []
    for mode in ("lax", "interpret"):
        assert main([*argv, "--annealing", mode]) == 0
        results.append(json.loads(capsys.readouterr().out))
    for key in ("estimate", "warp_string", "cycles"):
        assert results[0][key] == results[1][key]
    if fused.gpu_platform() is None:
        assert main([*argv, "--annealing", "pallas"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "needs a GPU" in err[0]
