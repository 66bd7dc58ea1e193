"""The native construction (`construction.native`, a C++ XLA FFI custom call) against the
`lax` reference: identical orders, peaks, lengths, stalls and deaths (every `AntResults` field)
on generated regions of 8..300 instructions, both passes, several ant counts, a learned
heuristic and a float16 pheromone table, under `jit` and `vmap` over regions; the full
`schedule` path; the fallback without a compiler; a stored executable loaded by a new
process, and rebuilt by one that lacks the FFI target."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from functools import cache, partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsched
from jaxsched.colony.construction import antstate, construct, dispatch, native, prepared
from jaxsched.colony.params import PER_FILE_WEIGHTS, ColonyConfig, default_params, pass_params
from jaxsched.colony.problem import canonical_shape
from jaxsched.errors import InputError
from jaxsched.machines.model import gfx906
from jaxsched.problem.generate import generate_region, generate_regions
from jaxsched.problem.padded import padded_shape, stack
from jaxsched.verify import verify_order

MACHINE = gfx906()

pytestmark = pytest.mark.skipif(
    native.find_compiler() is None or jax.default_backend() != "cpu",
    reason="the native construction needs a C++ compiler and the CPU backend",
)


@partial(jax.jit, static_argnums=(0, 1))
def _prepare(n: int, ready: int, dev, params, timed, seed):
    """`_batch`'s device part, jitted (run eagerly, each operation would compile apart): the
    `Prepared` tables, pass parameters, heuristic keys, pheromone table and ant keys."""
    prep = jax.vmap(lambda d: prepared.prepare(d, ready))(dev)
    pp = jax.vmap(lambda t: pass_params(params, t))(timed)
    key = jax.vmap(prepared.static_key)(prep, pp, timed)
    B = timed.shape[0]
    tau = jax.random.uniform(jax.random.key(seed), (B, n + 1, n + 1), minval=1.0, maxval=8.0)
    return prep, pp, key, tau, jax.random.split(jax.random.key(seed + 1), B)


def _batch(regions, seed: int, tau_dtype=jnp.float32, params=None):
    """Stacked `Prepared` and per-region `StepInputs` of ``regions`` (one padded shape), each
    region twice: RP pass then ILP pass; varied q0, stall budgets, issue widths, RP limits
    around the input order's peaks (ants die) and soft limits at or below them."""
    shape = canonical_shape(padded_shape(regions[0], MACHINE))
    for r in regions[1:]:
        shape = shape.join(padded_shape(r, MACHINE))
    dev_np, shape = stack([r for r in regions for _ in (0, 1)], MACHINE, shape)
    params = _default_params() if params is None else params
    rng = np.random.default_rng(seed)
    B = len(regions) * 2
    timed = np.tile([False, True], len(regions))
    prep, pp, key, tau, keys = _prepare(shape.n, shape.ready, dev_np, params, timed, seed)
    peaks = [verify_order(r, MACHINE, np.arange(len(r))).peak_rp for r in regions]
    peak = np.repeat([[p[f] for f in MACHINE.file_names] for p in peaks], 2, axis=0)
    limit = np.maximum(peak - rng.integers(0, 3, peak.shape), 0)
    lower = np.maximum(limit - rng.integers(1, 4, peak.shape), 0)
    soft = np.where(np.arange(B)[:, None] % 4 < 2, limit, lower)
    inp = antstate.StepInputs(
        tau=tau.astype(tau_dtype),
        q0=jnp.asarray(rng.choice([0.0, 0.5, 0.9], B), jnp.float32),
        rp_limit=jnp.asarray(limit, jnp.int32),
        soft_limit=jnp.asarray(soft, jnp.int32),
        stall_budget=jnp.asarray(rng.integers(1, 9, B), jnp.float32),
        timed=jnp.asarray(timed),
        key=key,
        issue_width=jnp.asarray(rng.integers(1, 3, B), jnp.int32),
    )
    return prep, inp, pp, keys, jnp.int32(max(len(r) for r in regions)), ~timed


@cache
def _jitted(fn, waves: int, wave: int):
    """One jitted `vmap` of ``fn`` (over regions and their pass parameters, like the colony)
    per (function, ants): tests with the same shapes share its executables (parameters and
    steps are arguments, not constants)."""
    kw = dict(wavefronts=waves, wavefront_size=wave)
    if fn is construct.construct_ants:
        kw["batch_axis"] = "regions"

    def one(p, i, pp, k, steps, u):
        return fn(p, i, pp, k, steps, uniform_exploration=u, **kw)

    return jax.jit(jax.vmap(one, in_axes=(0, 0, 0, 0, None, 0), axis_name="regions"))


def _run(fn, prep, inp, params, keys, steps, uniform, *, waves: int, wave: int):
    """``fn``'s results for a batch, `vmap`ped over regions (and their pass parameters) like
    the colony, under `jit`."""
    out = _jitted(fn, waves, wave)(prep, inp, params, keys, steps, jnp.asarray(uniform))
    return jax.device_get(out)


def _assert_identical(regions, batch, *, waves: int, wave: int) -> antstate.AntResults:
    ref = _run(construct.construct_ants, *batch, waves=waves, wave=wave)
    nat = _run(native.construct_ants_native, *batch, waves=waves, wave=wave)
    for name in antstate.AntResults._fields:
        a, b = getattr(ref, name), getattr(nat, name)
        diff = np.argwhere((a != b).reshape(a.shape[0], -1).any(axis=1)).ravel()
        assert diff.size == 0, f"{name} differs on batch rows {diff[:10].tolist()}"
    # Every native order is a schedule whose peaks the verifier confirms.
    for b in range(0, 2 * len(regions), 3):
        region = regions[b // 2]
        for ant in (0, nat.order.shape[1] - 1):
            rep = verify_order(region, MACHINE, nat.order[b, ant, : len(region)])
            assert [rep.peak_rp[f] for f in MACHINE.file_names] == nat.peak[b, ant].tolist()
    return ref


def _default_params():
    """The default parameters with stall fraction 0.5, the per-file weights (zero) given per
    pass and per file (``[2, F]``): the same weights (the shared decision code broadcasts a
    scalar one to ``[F]``), in the shapes of `_learned_params`, so both share executables.
    Scalar per-file weights: `test_schedule_with_native_equals_lax`."""
    p = default_params(stall_fraction=0.5)
    F = len(MACHINE.file_names)
    return p._replace(**{k: jnp.zeros((2, F), jnp.float32) for k in PER_FILE_WEIGHTS})


def _learned_params():
    """A guiding heuristic using every feature, with weights that are not powers of two (their
    products round: the fused multiply-adds must match XLA's); the per-file weights differ per
    pass and per file (``[2, F]``: an ``[F]`` row would be read as per pass)."""
    F = len(MACHINE.file_names)
    return default_params(
        stall_fraction=0.5,
        weight_cp=[0.7, 1.3],
        weight_successors=0.37,
        weight_latency=0.29,
        weight_position=-0.21,
        weight_wait=0.61,
        weight_last_use=0.53,
        weight_last_use_rp=3.3,
        rp_damping=0.77,
        overflow_damping=0.1,
    )._replace(
        weight_kill=jnp.stack([jnp.linspace(1.1, 0.23, F), jnp.linspace(0.37, 0.91, F)]).astype(
            jnp.float32
        ),
        weight_born=jnp.stack([jnp.linspace(-0.71, 0.13, F), jnp.linspace(0.29, -0.53, F)]).astype(
            jnp.float32
        ),
    )


def _regions(lo: int, hi: int) -> list:
    """The generated regions of ``lo..hi`` instructions of a case below (one batch shape)."""
    return generate_regions(lo * 7 + hi, 12 if hi <= 40 else 4, lo, hi)


@pytest.mark.parametrize(
    "sizes, waves, wave, tau_dtype",
    [
        ((8, 16), 2, 16, jnp.float32),
        ((17, 40), 1, 64, jnp.float16),
        ((60, 130), 3, 16, jnp.float32),
    ],
)
def test_native_equals_lax_on_generated_regions(sizes, waves, wave, tau_dtype):
    regions = _regions(*sizes)
    batch = _batch(regions, seed=sizes[1], tau_dtype=tau_dtype)
    ref = _assert_identical(regions, batch, waves=waves, wave=wave)
    # Not vacuous: ants die, stall, and choose differently.
    assert ref.dead.any() and not ref.dead.all()
    assert (ref.stalls > 0).any()
    assert max(len({tuple(o) for o in ref.order[b]}) for b in range(ref.order.shape[0])) > 1


def test_native_equals_lax_with_a_learned_heuristic():
    # The regions, ants and float16 pheromone table of the 17..40 case above: the same shapes
    # (pass parameters included), its executables serve.
    regions = _regions(17, 40)
    batch = _batch(regions, seed=5, tau_dtype=jnp.float16, params=_learned_params())
    ref = _assert_identical(regions, batch, waves=1, wave=64)
    default = _batch(regions, seed=5, tau_dtype=jnp.float16)
    other = _run(construct.construct_ants, *default, waves=1, wave=64)
    assert (other.order != ref.order).any()  # the weights matter


@pytest.mark.slow
def test_native_equals_lax_on_a_large_region():
    regions = [generate_region(3, 300), generate_region(4, 211)]
    _assert_identical(regions, _batch(regions, seed=9, params=_learned_params()), waves=1, wave=32)


def test_native_under_jit_without_vmap_and_inactive_regions():
    # One region of the 17..40 case (its batch shape), its ILP pass; ``active`` traced, both ways.
    prep, inp, pp, keys, steps, uniform = _batch(_regions(17, 40), seed=3)
    prep, inp, pp, keys, uniform = jax.tree.map(lambda x: x[1], (prep, inp, pp, keys, uniform))
    kw = dict(wavefronts=3, wavefront_size=8, uniform_exploration=uniform)
    ref = jax.jit(partial(construct.construct_ants, **kw))(prep, inp, pp, keys, steps)
    run = jax.jit(partial(native.construct_ants_native, **kw))
    nat = run(prep, inp, pp, keys, steps, active=jnp.bool_(True))
    for name in antstate.AntResults._fields:
        np.testing.assert_array_equal(getattr(ref, name), getattr(nat, name), err_msg=name)
    idle = run(prep, inp, pp, keys, steps, active=jnp.bool_(False))
    assert (np.asarray(idle.order) == prep.succ.shape[0] - 1).all()  # no step ran


@pytest.mark.slow
def test_schedule_with_native_equals_lax(kernel_regions):
    regions = [r for r in kernel_regions if len(r) <= 150][:5]
    kw = dict(ants=128, wavefront_size=64)
    ref = jaxsched.schedule(regions, MACHINE, seed=0, construction="lax", **kw)
    nat = jaxsched.schedule(regions, MACHINE, seed=0, construction="native", **kw)
    for region, a, b in zip(regions, ref, nat, strict=True):
        fields = ("order", "length", "peak_rp", "rp_cost", "iterations", "source", "history")
        assert [getattr(a, f) for f in fields] == [getattr(b, f) for f in fields]
        np.testing.assert_array_equal(a.cycles, b.cycles)
        rep = jaxsched.verify(region, MACHINE, b.cycles, order=b.order)
        assert (rep.length, rep.peak_rp, rep.rp_cost) == (b.length, b.peak_rp, b.rp_cost)
    assert sum(a.iterations[0] + a.iterations[1] for a in ref) > 0  # the colony ran


def test_auto_resolves_to_native_on_the_cpu():
    assert native.unavailable() is None
    assert dispatch.resolve("auto") == "native"
    assert dispatch.resolve("native") == "native"
    dispatch.check(ColonyConfig(construction="native"))  # no error
    with pytest.raises(InputError, match="construction"):
        ColonyConfig(construction="c++")


def test_without_a_compiler_auto_falls_back_to_lax(monkeypatch):
    monkeypatch.setattr(native, "find_compiler", lambda: None)
    monkeypatch.setattr(native, "_status", {})
    with pytest.warns(native.NativeWarning, match=r"no C\+\+ compiler"):
        assert dispatch.resolve("auto") == "lax"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dispatch.resolve("auto") == "lax"  # one warning per process
    with pytest.raises(InputError, match=r"construction 'native'.*no C\+\+ compiler"):
        dispatch.check(ColonyConfig(construction="native"))
    region = generate_region(0, 6)
    with pytest.raises(InputError, match="construction 'native'"):
        jaxsched.schedule(region, MACHINE, ants=64, construction="native")


def test_native_rejects_other_backends(monkeypatch):
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    with pytest.raises(InputError, match="CPU only"):
        dispatch.check(ColonyConfig(construction="native"))


def test_the_library_builds_atomically(tmp_path, monkeypatch):
    # Into the folder named by $JAXSCHED_NATIVE_DIR, under a name keyed by the source, the
    # compiler and the host; no temporary file stays.
    monkeypatch.setenv("JAXSCHED_NATIVE_DIR", str(tmp_path))
    cxx = native.find_compiler()
    path = native.build(cxx)
    assert path.parent == tmp_path and path.name.startswith("construct-")
    assert native.build(cxx) == path  # built once
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


@pytest.mark.slow
def test_a_stored_native_executable_loads_in_a_new_process(tmp_path):
    # A process compiles a schedule with the native construction into the store; the next
    # process registers the target at import and loads the executable instead of compiling.
    env = {**os.environ, "JAXSCHED_CACHE_DIR": str(tmp_path)}
    script = (
        "import jaxsched\n"
        "from jaxsched.compilation import COMPILED\n"
        "from jaxsched.problem.generate import generate_region\n"
        "r = jaxsched.schedule([generate_region(14, 14)], ants=64, wavefront_size=32,"
        " max_iterations=3, filters=False, construction='native')[0]\n"
        "print(COMPILED.compilations, COMPILED.loads, r.order)\n"
    )
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=900
        )
        assert done.returncode == 0, done.stderr
        runs.append(done.stdout.split(maxsplit=2))
    assert int(runs[0][0]) >= 1 and int(runs[1][0]) == 0 and int(runs[1][1]) >= 1
    assert runs[0][2] == runs[1][2]


#: A process that runs one native construction through a `CompileCache` on the store in
#: argv[1] and prints its compilations, loads, first order and warnings (JSON).
_STORE_CASE = """
import json, sys, warnings
from functools import partial
import jax, jax.numpy as jnp, numpy as np
from jaxsched.colony.construction import antstate, native, prepared
from jaxsched.colony.params import default_params
from jaxsched.compilation import CompileCache
from jaxsched.machines.model import gfx906
from jaxsched.problem.generate import generate_region
from jaxsched.problem.padded import pad_region, padded_shape
from jaxsched.store import ExecutableStore


@partial(jax.jit, static_argnames=("ready",))
def run(dev, tau, key, *, ready):
    prep = prepared.prepare(dev, ready)
    p = default_params()
    limit = jnp.full(2, 999, jnp.int32)
    inp = antstate.StepInputs(
        tau=tau, q0=jnp.float32(0.5), rp_limit=limit, soft_limit=limit,
        stall_budget=jnp.float32(2.0), timed=jnp.bool_(True),
        key=prepared.static_key(prep, p, jnp.bool_(True)), issue_width=jnp.int32(1))
    return native.construct_ants_native(prep, inp, p, key, prep.n, wavefronts=1,
                                        wavefront_size=8, uniform_exploration=False).order


machine, region = gfx906(), generate_region(1, 10)
shape = padded_shape(region, machine)
dev = jax.tree.map(jnp.asarray, pad_region(region, machine, shape))
tau = jnp.ones((shape.n + 1, shape.n + 1), jnp.float32)
cache = CompileCache(store=ExecutableStore(sys.argv[1]))
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    out = np.asarray(cache(run, {"ready": shape.ready}, dev, tau, jax.random.key(0)))
print(json.dumps({"compilations": cache.compilations, "loads": cache.loads,
                  "order": out[0].tolist(), "warnings": [str(x.message) for x in w]}))
"""


@pytest.mark.slow
def test_a_stored_executable_without_its_target_is_rebuilt(tmp_path):
    # A process whose library folder is empty has no target registered when it loads a stored
    # executable that calls it: the entry is reported, deleted and compiled again (building the
    # library), with the same result.
    script = tmp_path / "case.py"
    script.write_text(_STORE_CASE)

    def run(lib: str) -> dict:
        env = {**os.environ, "JAXSCHED_NATIVE_DIR": str(tmp_path / lib)}
        cmd = [sys.executable, str(script), str(tmp_path / "store")]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    first, again, other = run("lib"), run("lib"), run("empty")
    assert (first["compilations"], again["compilations"], again["loads"]) == (1, 0, 1)
    assert other["compilations"] == 1 and other["loads"] == 0
    assert any("No FFI handler registered" in w for w in other["warnings"])
    assert first["order"] == again["order"] == other["order"]


def test_shapes_the_kernel_does_not_take():
    prep = _batch(_regions(8, 16), seed=16)[0]  # the 8..16 case's batch
    assert native.unsupported(prep) is None
    wide = prep._replace(uses=jnp.zeros((2, 13, 65), jnp.int32))
    assert "65 registers per instruction" in native.unsupported(wide)
    with pytest.raises(InputError, match="region shape"):
        dispatch.construct(
            jax.tree.map(lambda x: x[0], wide), None, None, None, None,
            config=ColonyConfig(construction="native"), uniform_exploration=True,
        )  # fmt: skip
