"""The fused construction kernel (`jaxsched.colony.construction.kernel`) alone: it lowers for
CUDA (Triton) on this CPU-only machine, alone and inside `solve`; the dispatch; its shape
helpers; the batch plan; `jaxsched warmup`. Its results against the `lax` reference (in the
Pallas interpreter): tests/test_backends.py."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from cuda_lowering import TRITON_CALL, lower_for_cuda
from helpers import construction_batch, construction_params

import jaxsched
from jaxsched import colony, fused
from jaxsched.colony.construction import dispatch, kernel, prepared
from jaxsched.colony.params import ColonyConfig, default_params
from jaxsched.errors import InputError
from jaxsched.machines.model import gfx906
from jaxsched.problem.generate import generate_region, generate_regions

MACHINE = gfx906()


@pytest.mark.parametrize(
    "n, ants, regions, tau_dtype",
    [(12, 64, 1, jnp.float32), (60, 256, 3, jnp.float16), (500, 1024, 2, jnp.float32)],
)
def test_kernel_lowers_for_cuda(n: int, ants: int, regions: int, tau_dtype) -> None:
    """The fused construction, `vmap`ped over regions and their pass parameters like the colony,
    with every heuristic feature weighted, lowers for CUDA as one Triton kernel: the lowering
    reports every primitive the Pallas Triton lowering lacks, as it would on the GPU. (Shapes
    only: the batch is abstract, nothing runs.)"""
    reg = [generate_region(k, n) for k in range(regions)]
    params = construction_params(MACHINE, learned=True)
    batch = construction_batch(
        reg, MACHINE, seed=0, tau_dtype=tau_dtype, params=params, abstract=True
    )

    def run(prep, inp, pp, keys, steps, uniform):
        def one(p, i, q, k, u):
            return kernel.construct_ants_fused(
                p, i, q, k, steps, wavefronts=ants // 64, wavefront_size=64,
                uniform_exploration=u,
            )  # fmt: skip

        return jax.vmap(one)(prep, inp, pp, keys, uniform)

    text = lower_for_cuda(run, *batch)
    assert text.count(TRITON_CALL) == 1  # the whole construction is one kernel


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_solve_with_the_kernel_lowers_for_cuda(dtype: str) -> None:
    """`colony.solve` with ``construction="pallas"`` lowers for CUDA with the construction as
    its one Triton kernel, with a float32 and a float16 pheromone table."""
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


def test_dispatch_and_config() -> None:
    """Construction "auto" resolves to "native" on the CPU where it builds, else "pallas" on
    CUDA, else "lax"; the named constructions stay; an unknown one is an `InputError`, and so
    is "pallas" without a GPU."""
    from jaxsched.colony.construction import native

    cpu_native = jax.default_backend() == "cpu" and native.unavailable() is None
    expected = "pallas" if fused.gpu_platform() == "cuda" else "lax"
    assert dispatch.resolve("auto") == ("native" if cpu_native else expected)
    for name in ("lax", "pallas", "interpret"):
        assert dispatch.resolve(name) == name
    with pytest.raises(InputError, match="construction"):
        ColonyConfig(construction="triton")
    if fused.gpu_platform() is None:
        with pytest.raises(InputError, match="needs a GPU"):
            jaxsched.schedule(generate_region(0, 5), MACHINE, ants=64, construction="pallas")


def test_kernel_shape_helpers() -> None:
    """The kernel's decision widths, its ants per program, and the shapes it refuses (sizes that
    are not powers of two)."""
    assert kernel.kernel_widths(64) == (8, 16, 32, 64)
    assert kernel.kernel_widths(8) == (8,)
    assert kernel.block_size(4096) == kernel.DEFAULT_BLOCK
    assert kernel.block_size(96, 64) == 32 and kernel.block_size(7) == 1
    fields = prepared.Prepared._fields
    shapes = {f: (3,) if f == "live_through" else (17, 4) for f in fields}
    prep = prepared.Prepared(**{f: jax.ShapeDtypeStruct(s, jnp.int32) for f, s in shapes.items()})
    assert "register files 3" in kernel.unsupported(prep)


# ---------------------------------------------------------------------------- compile overhead
def test_batch_sizes_are_few_per_bucket() -> None:
    """Batch sizes are powers of 4 up to the cap, and the chosen one pads a count by at most
    1/8 beyond one call."""
    from jaxsched.colony.drivers.planning import batch_sizes, choose_batch

    assert batch_sizes(256) == (1, 4, 16, 64, 256)
    assert batch_sizes(128) == (1, 4, 16, 64, 128)
    assert [choose_batch(c, 256) for c in (1, 3, 5, 17, 200, 256)] == [1, 4, 16, 64, 256, 256]
    assert choose_batch(1000, 256) == 256  # 4 calls, 24 padding
    assert choose_batch(300, 256) == 64  # 5 calls of 64 rather than 2 of 256
    for count in range(1, 700, 7):
        b = choose_batch(count, 256)
        calls = -(-count // b)
        assert b in batch_sizes(256) and (calls == 1 or calls * b <= count * 9 / 8)


def test_plan_uses_one_batch_size_per_bucket() -> None:
    """The batch plan gives every batch of a bucket one size and covers every region once."""
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
def test_warmup_fills_the_executable_store(tmp_path: Path) -> None:
    """A new process after `jaxsched warmup` compiles nothing for a region of a warmed bucket
    (it loads the stored executables)."""
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
