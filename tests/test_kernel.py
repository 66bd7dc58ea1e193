"""The fused construction kernel (`construction.kernel`) against the `lax` reference: identical
orders, peaks, lengths, stalls and deaths on hundreds of generated regions, both passes (Pallas
interpreter on the CPU); the kernel lowers for CUDA (Triton) on this CPU-only machine; the
dispatch and the full `schedule` path."""

from __future__ import annotations

from functools import cache, partial

import chex
import jax
import jax.experimental.pallas.fuser  # for its side effect (see below)
import jax.numpy as jnp
import numpy as np
import pytest
from cuda_lowering import TRITON_CALL, lower_for_cuda

import jaxsched
from jaxsched import colony
from jaxsched.colony.construction import antstate, construct, dispatch, kernel, prepared
from jaxsched.colony.params import PER_FILE_WEIGHTS, ColonyConfig, default_params
from jaxsched.colony.problem import canonical_shape
from jaxsched.errors import InputError
from jaxsched.machines.model import gfx906
from jaxsched.problem.generate import generate_region, generate_regions
from jaxsched.problem.padded import bucket_size, padded_shape, stack
from jaxsched.verify import verify_order

# `jax.experimental.pallas.fuser` is imported for its side effect: it adds a value to JAX's
# tracing context, which the first Pallas interpreter run of a process would otherwise add
# (its lowering imports it), and a function traced before that is traced again after it.
MACHINE = gfx906()
WAVES, WAVE = 2, 16  # 32 ants: blocks of 32 (one program) or 16 (two, see block=16 below)


def _default_params():
    """The default parameters with stall fraction 0.5, the per-file weights (zero) as ``[F]``
    rows: the same weights (both constructions' shared decision code broadcasts a scalar one
    to ``[F]`` before use), in the shapes of `_learned_params`, so both share executables.
    Scalar per-file weights: `test_schedule_with_the_interpreted_kernel_equals_lax`."""
    p = default_params(stall_fraction=0.5)
    F = len(MACHINE.file_names)
    return p._replace(**{k: jnp.broadcast_to(getattr(p, k), (F,)) for k in PER_FILE_WEIGHTS})


@partial(jax.jit, static_argnums=(0, 1))
def _prepare(n: int, ready: int, dev, params, timed, seed):
    """`_batch`'s device part, jitted (run eagerly, each operation would compile apart): the
    `Prepared` tables, heuristic keys, pheromone table and ant keys of a stacked batch."""
    prep = jax.vmap(lambda d: prepared.prepare(d, ready))(dev)
    key = jax.vmap(prepared.static_key, in_axes=(0, None, 0))(prep, params, timed)
    B = timed.shape[0]
    tau = jax.random.uniform(jax.random.key(seed), (B, n + 1, n + 1), minval=1.0, maxval=8.0)
    return prep, key, tau, jax.random.split(jax.random.key(seed + 1), B)


def _batch(regions, seed: int, tau_dtype=jnp.float32, params=None):
    """Stacked `Prepared` and per-region `StepInputs` of ``regions`` (one padded shape), each
    region twice: RP pass then ILP pass. Varied q0, stall budget, issue width and RP limits
    (at or below the input order's peaks, so ants die), soft limits at or below them (half the
    rows below: the waiting rule fires), the pheromone table in ``tau_dtype``."""
    shape = canonical_shape(padded_shape(regions[0], MACHINE))
    for r in regions[1:]:
        shape = shape.join(padded_shape(r, MACHINE))
    dev_np, shape = stack([r for r in regions for _ in (0, 1)], MACHINE, shape)
    params = _default_params() if params is None else params
    rng = np.random.default_rng(seed)
    B = len(regions) * 2
    timed = np.tile([False, True], len(regions))
    prep, key, tau, keys = _prepare(shape.n, shape.ready, dev_np, params, timed, seed)
    # Per-file RP limits around the input order's peaks: ants above them die.
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
    return prep, inp, params, keys, jnp.int32(max(len(r) for r in regions)), ~timed


@cache
def _jitted(fn, extra: tuple):
    """One jitted `vmap` of ``fn`` per (function, keyword arguments): tests with the same
    shapes share its executables (parameters and steps are arguments, not constants)."""
    kw = dict(wavefronts=WAVES, wavefront_size=WAVE, batch_axis="regions", **dict(extra))

    def one(p, i, params, k, steps, u):
        return fn(p, i, params, k, steps, uniform_exploration=u, **kw)

    return jax.jit(jax.vmap(one, in_axes=(0, 0, None, 0, None, 0), axis_name="regions"))


def _run(fn, prep, inp, params, keys, steps, uniform, **extra):
    """``fn``'s results for a batch, `vmap`ped over regions like the colony (on the host)."""
    run = _jitted(fn, tuple(sorted(extra.items())))
    return jax.device_get(run(prep, inp, params, keys, steps, jnp.asarray(uniform)))


def _both(prep, inp, params, keys, steps, uniform, block):
    """(lax results, fused results) for a batch."""
    args = (prep, inp, params, keys, steps, uniform)
    ref = _run(construct.construct_ants, *args)
    return ref, _run(kernel.construct_ants_fused, *args, interpret=True, block=block)


def _bucket_regions(bucket: int) -> list:
    """100 generated regions of ``bucket`` (2..16 or 17..32): one batch shape per bucket."""
    return generate_regions(bucket, 100, 2 if bucket == 16 else bucket // 2 + 1, bucket)


# Buckets 16 and 32 with blocks of 16 ants (two programs per region): decision widths (8, 16)
# and (8, 16, 32); the wide regions below take blocks of 32 and widths 8..128, so a bucket of
# 64 (widths 8..64, blocks of 16) would run no other code.
@pytest.mark.parametrize("bucket, tau_dtype", [(16, jnp.float32), (32, jnp.float16)])
def test_fused_equals_lax_on_generated_regions(bucket, tau_dtype):
    # 100 regions per bucket (2..16, 17..32), both passes each; bucket 32 with a float16
    # pheromone table (scored in f32 by both paths).
    regions = _bucket_regions(bucket)
    assert {bucket_size(len(r)) for r in regions} == {bucket}
    prep, inp, params, keys, steps, uniform = _batch(regions, seed=bucket, tau_dtype=tau_dtype)
    ref, fused = _both(prep, inp, params, keys, steps, uniform, block=16)
    for name in antstate.AntResults._fields:
        a, b = getattr(ref, name), getattr(fused, name)
        diff = np.argwhere((a != b).reshape(a.shape[0], -1).any(axis=1)).ravel()
        assert diff.size == 0, f"{name} differs on batch rows {diff[:10].tolist()}"
    # Not vacuous: ants die, stall, and choose differently.
    assert ref.dead.any() and not ref.dead.all()
    assert (ref.stalls > 0).any()
    distinct = [len({tuple(o) for o in ref.order[b]}) for b in range(ref.order.shape[0])]
    assert max(distinct) > 1
    # The soft limit steers: with it at the RP limit, only the rows that had it lower change.
    plain = inp._replace(soft_limit=inp.rp_limit)
    plain = _run(construct.construct_ants, prep, plain, params, keys, steps, uniform)
    lowered = np.asarray(inp.soft_limit < inp.rp_limit).any(axis=1)
    changed = (plain.order != ref.order).reshape(len(lowered), -1).any(axis=1)
    assert changed[lowered].any() and not changed[~lowered].any()
    # Spot-check the fused orders with the verifier.
    for b in range(0, len(regions) * 2, 17):
        region = regions[b // 2]
        n = len(region)
        rep = verify_order(region, MACHINE, fused.order[b, 0, :n])
        assert [rep.peak_rp[f] for f in MACHINE.file_names] == fused.peak[b, 0].tolist()


@pytest.mark.slow
def test_fused_equals_lax_on_wide_regions():
    # Ready lists past 8 slots (several decision widths), one region per block of 32 ants;
    # with four regions of 33..64 instructions in the same batch (bucket 128).
    regions = [generate_region(s, n) for s, n in [(1, 100), (2, 120), (3, 128), (4, 90)]]
    regions += generate_regions(64, 4, 33, 64)
    prep, inp, params, keys, steps, uniform = _batch(regions, seed=5)
    assert max(r.ready_list_bound() for r in regions) > 8
    ref, fused = _both(prep, inp, params, keys, steps, uniform, block=32)
    for name in antstate.AntResults._fields:
        np.testing.assert_array_equal(getattr(ref, name), getattr(fused, name), err_msg=name)


def _learned_params():
    """Pass parameters of a guiding heuristic using every feature (per-file weights ``[F]``)."""
    F = len(MACHINE.file_names)
    return default_params(
        stall_fraction=0.5,
        weight_successors=0.4,
        weight_latency=0.3,
        weight_position=-0.2,
        weight_wait=0.6,
        weight_last_use=0.5,
    )._replace(
        weight_kill=jnp.linspace(1.0, 0.2, F, dtype=jnp.float32),
        weight_born=jnp.linspace(-0.7, 0.1, F, dtype=jnp.float32),
    )


def test_fused_equals_lax_with_a_learned_heuristic():
    # Every heuristic feature weighted (the kernel computes the same key), and it matters; on
    # the bucket-16 regions of `test_fused_equals_lax_on_generated_regions` (the same shapes:
    # its executables serve).
    regions = _bucket_regions(16)
    prep, inp, params, keys, steps, uniform = _batch(regions, seed=5, params=_learned_params())
    ref, fused = _both(prep, inp, params, keys, steps, uniform, block=16)
    for name in antstate.AntResults._fields:
        np.testing.assert_array_equal(getattr(ref, name), getattr(fused, name), err_msg=name)
    default = _run(construct.construct_ants, prep, inp, _default_params(), keys, steps, uniform)
    assert (default.order != ref.order).any()


@pytest.mark.parametrize(
    "n, ants, regions, tau_dtype",
    [(12, 64, 1, jnp.float32), (60, 256, 3, jnp.float16), (500, 1024, 2, jnp.float32)],
)
def test_kernel_lowers_for_cuda(n, ants, regions, tau_dtype):
    # Catches every primitive the Pallas Triton lowering lacks (as it would on the GPU), with
    # every heuristic feature weighted.
    reg = [generate_region(k, n) for k in range(regions)]
    prep, inp, params, keys, steps, uniform = _batch(
        reg, seed=0, tau_dtype=tau_dtype, params=_learned_params()
    )

    def run(prep, inp, params, keys, steps, uniform):
        def one(p, i, k, u):
            return kernel.construct_ants_fused(
                p, i, params, k, steps, wavefronts=ants // 64, wavefront_size=64,
                uniform_exploration=u,
            )  # fmt: skip

        return jax.vmap(one)(prep, inp, keys, uniform)

    text = lower_for_cuda(run, prep, inp, params, keys, steps, jnp.asarray(uniform))
    assert text.count(TRITON_CALL) == 1  # the whole construction is one kernel


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_solve_with_the_kernel_lowers_for_cuda(dtype):
    regions = [generate_region(k, 20 + k) for k in range(3)]
    prob = colony.problem(regions, MACHINE)
    config = ColonyConfig(
        wavefronts=2,
        wavefront_size=64,
        max_iterations=4,
        construction="pallas",
        pheromone_dtype=dtype,
    )
    text = lower_for_cuda(
        lambda k, p, q: colony.solve(k, p, q, config=config),
        jax.random.key(0),
        prob,
        default_params(),
    )
    assert text.count(TRITON_CALL) == 1


@pytest.mark.slow
def test_schedule_with_the_interpreted_kernel_equals_lax():
    regions = generate_regions(3, 12, 8, 16)  # one bucket: one solve compiled per construction
    kw = dict(ants=64, wavefront_size=32, max_iterations=6, starts=("input",), filters=False)
    ref = jaxsched.schedule(regions, MACHINE, seed=1, construction="lax", **kw)
    fused = jaxsched.schedule(regions, MACHINE, seed=1, construction="interpret", **kw)
    for region, a, b in zip(regions, ref, fused, strict=True):
        assert (a.order, a.history, a.iterations) == (b.order, b.history, b.iterations)
        rep = jaxsched.verify(region, MACHINE, b.cycles, order=b.order)
        assert rep.length == b.length and rep.peak_rp == b.peak_rp
    assert sum(a.iterations[1] for a in ref) > 0  # the colony ran


def test_parameters_do_not_retrace_the_kernel():
    # One row of the bucket-16 batch of `test_fused_equals_lax_on_generated_regions`.
    prep, inp, _, keys, steps, _ = _batch(_bucket_regions(16), seed=16)
    one = jax.tree.map(lambda x: x[1], (prep, inp))

    @jax.jit
    @chex.assert_max_traces(n=1)
    def build(prep, inp, params, key):
        return kernel.construct_ants_fused(
            prep, inp, params, key, steps, wavefronts=1, wavefront_size=32,
            uniform_exploration=False, interpret=True,
        )  # fmt: skip

    chex.clear_trace_counter()
    for decay in (0.8, 0.5):
        out = build(*one, default_params(decay=decay, weight_cp=decay), keys[1])
    assert np.asarray(out.order).shape == (32, prep.succ.shape[1] - 1)


def test_dispatch_and_config():
    from jaxsched.colony.construction import native

    cpu_native = jax.default_backend() == "cpu" and native.unavailable() is None
    expected = "pallas" if dispatch.gpu_platform() == "cuda" else "lax"
    assert dispatch.resolve("auto") == ("native" if cpu_native else expected)
    for name in ("lax", "pallas", "interpret"):
        assert dispatch.resolve(name) == name
    with pytest.raises(InputError, match="construction"):
        ColonyConfig(construction="triton")
    if dispatch.gpu_platform() is None:
        with pytest.raises(InputError, match="needs a GPU"):
            jaxsched.schedule(generate_region(0, 5), MACHINE, ants=64, construction="pallas")


def test_kernel_shape_helpers():
    assert kernel.kernel_widths(64) == (8, 16, 32, 64)
    assert kernel.kernel_widths(8) == (8,)
    assert kernel.block_size(4096) == kernel.DEFAULT_BLOCK
    assert kernel.block_size(96, 64) == 32 and kernel.block_size(7) == 1
    fields = prepared.Prepared._fields
    shapes = {f: (3,) if f == "live_through" else (17, 4) for f in fields}
    prep = prepared.Prepared(**{f: jax.ShapeDtypeStruct(s, jnp.int32) for f, s in shapes.items()})
    assert "register files 3" in kernel.unsupported(prep)


# ---------------------------------------------------------------------------- compile overhead
def test_batch_sizes_are_few_per_bucket():
    from jaxsched.colony.host import batch_sizes, choose_batch

    assert batch_sizes(256) == (1, 4, 16, 64, 256)
    assert batch_sizes(128) == (1, 4, 16, 64, 128)
    assert [choose_batch(c, 256) for c in (1, 3, 5, 17, 200, 256)] == [1, 4, 16, 64, 256, 256]
    assert choose_batch(1000, 256) == 256  # 4 calls, 24 padding
    assert choose_batch(300, 256) == 64  # 5 calls of 64 rather than 2 of 256
    for count in range(1, 700, 7):
        b = choose_batch(count, 256)
        calls = -(-count // b)
        assert b in batch_sizes(256) and (calls == 1 or calls * b <= count * 9 / 8)


def test_plan_uses_one_batch_size_per_bucket():
    from jaxsched.colony.drivers.planning import plan_batches
    from jaxsched.colony.settings import Options

    regions = generate_regions(0, 300, 2, 64)
    plan = plan_batches(regions, MACHINE, ColonyConfig(wavefronts=1), Options(max_batch=64))
    per_bucket: dict = {}
    for b in plan:
        per_bucket.setdefault(b.shape, set()).add(b.size)
        assert len(b.indices) <= b.size
    assert all(len(sizes) == 1 for sizes in per_bucket.values())
    assert sorted(i for b in plan for i in b.indices) == list(range(len(regions)))


@pytest.mark.slow
def test_warmup_fills_the_executable_store(tmp_path):
    # A new process after `jaxsched warmup` compiles nothing for a region of a warmed bucket.
    import os
    import subprocess
    import sys

    env = {**os.environ, "JAXSCHED_CACHE_DIR": str(tmp_path)}
    opts = ["--ants", "64", "--wavefront", "32", "--iterations", "3"]
    cmd = [sys.executable, "-m", "jaxsched", "warmup", "--buckets", "16", "--batches", "1"]
    done = subprocess.run(cmd + opts, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    stored = len(list(tmp_path.glob("*.xla")))
    assert stored >= 1 and f"({stored} compiled" in done.stdout
    script = (
        "import jaxsched\n"
        "from jaxsched.compilation import COMPILED\n"
        "from jaxsched.problem.generate import generate_region\n"
        "r = jaxsched.schedule([generate_region(14, 14)], ants=64, wavefront_size=32,"
        " max_iterations=3, filters=False)[0]\n"
        "print(COMPILED.compilations, COMPILED.loads, sum(r.iterations))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    compilations, loads, iterations = map(int, done.stdout.split())
    assert iterations > 0  # the colony ran: its pool's executable was needed
    assert compilations == 0 and loads >= 1
