"""Every ant construction back end against the `lax` reference (`construct.construct_ants`): the
fused Pallas kernel (`jaxsched.colony.construction.kernel`, in the Pallas interpreter on the CPU:
``"interpret"``) and the native C++ custom call (`jaxsched.colony.construction.native`:
``"native"``) give identical orders, peaks, lengths, stalls and deaths (every `AntResults`
field) on generated regions of 2..300 instructions, both passes, with default and learned
weights (new weights retrace nothing), under `jit` and `vmap` over regions like the colony; the
full `schedule` path, with a float16 pheromone table. The native construction also under `jit`
alone, for an inactive region.

Each check is written once and parametrised over the back ends. What costs is compilation (a
batch runs in seconds): the `lax` reference is computed once per test process (`_reference`),
and every batch has one shape, so each back end compiles one batched construction, shared by
the default and the learned weights. Checks of one back end alone: tests/test_kernel.py (CUDA
lowering, dispatch, warmup) and tests/test_native.py (build, fallback, stored executables)."""

from __future__ import annotations

from functools import cache, partial

import chex
import jax
import jax.experimental.pallas.fuser  # for its side effect (see below)
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import ConstructionBatch, construction_batch, construction_params

import jaxsched
from jaxsched.colony.construction import antstate, construct, kernel, native
from jaxsched.machines.model import gfx906
from jaxsched.problem.generate import generate_regions
from jaxsched.problem.padded import bucket_size
from jaxsched.problem.region import Region
from jaxsched.verify import verify_order

# `jax.experimental.pallas.fuser` is imported for its side effect: it adds a value to JAX's
# tracing context, which the first Pallas interpreter run of a process would otherwise add
# (its lowering imports it), and a function traced before that is traced again after it.
MACHINE = gfx906()

needs_native = pytest.mark.skipif(
    native.find_compiler() is None or jax.default_backend() != "cpu",
    reason="the native construction needs a C++ compiler and the CPU backend",
)
#: The back ends compared with "lax".
BACKENDS = ["interpret", pytest.param("native", marks=needs_native)]

#: The batch of the construction tests, one padded shape (bucket 512): (count, smallest,
#: largest size) per `generate_regions` call (seeds 5, 6, 7). Ready lists past 8 slots (every
#: decision width: the kernel's per program, `lax`'s over the batch), regions past 256
#: instructions, and small regions, which run their own n steps in the kernel (the `lax` loop
#: runs the batch's largest).
GROUPS = ((8, 2, 64), (4, 65, 256), (2, 257, 300))
#: 48 ants: three wavefronts of 16 (an ant count that is not a power of two), three programs of
#: 16 ants per region in the kernel.
WAVES, WAVE, BLOCK = 3, 16, 16
#: The weights of the batch (`construction_params`): the same regions, limits, pheromone and
#: seeds under both.
WEIGHTS = ("default", "learned")


def _regions() -> list[Region]:
    """The regions of `GROUPS`, in order."""
    return [r for k, g in enumerate(GROUPS) for r in generate_regions(5 + k, *g)]


def _construction(backend: str):
    """``backend``'s construction, with `construct.construct_ants`'s signature."""
    if backend == "lax":
        return partial(construct.construct_ants, batch_axis="regions")
    if backend == "interpret":
        return partial(kernel.construct_ants_fused, interpret=True, block=BLOCK)
    return native.construct_ants_native


#: Traces of each back end's `_jitted` construction (one per back end: parameters are
#: arguments, so new values do not retrace).
TRACES: dict[str, int] = {}


@cache
def _jitted(backend: str):
    """``backend``'s construction under `jit` and a `vmap` over regions (and their pass
    parameters) like the colony's: one executable per back end serves every test (parameters
    and steps are arguments, not constants); its traces are counted in `TRACES`."""
    fn = _construction(backend)

    def one(p, i, pp, k, steps, u):
        TRACES[backend] = TRACES.get(backend, 0) + 1
        return fn(p, i, pp, k, steps, wavefronts=WAVES, wavefront_size=WAVE, uniform_exploration=u)

    return jax.jit(jax.vmap(one, in_axes=(0, 0, 0, 0, None, 0), axis_name="regions"))


def _run(backend: str, batch: ConstructionBatch) -> antstate.AntResults:
    """``backend``'s results for ``batch`` (on the host)."""
    prep, inp, pp, keys, steps, uniform = batch
    return jax.device_get(_jitted(backend)(prep, inp, pp, keys, steps, jnp.asarray(uniform)))


@cache
def _reference(weights: str) -> tuple[list[Region], ConstructionBatch, antstate.AntResults]:
    """The regions, the batch with ``weights`` and its `lax` results (once per process)."""
    regions = _regions()
    params = construction_params(MACHINE, learned=weights == "learned")
    batch = construction_batch(regions, MACHINE, seed=5, params=params)
    return regions, batch, _run("lax", batch)


def _assert_identical(ref: antstate.AntResults, out: antstate.AntResults) -> None:
    """Every field equal, row by row (the differing rows named)."""
    for name in antstate.AntResults._fields:
        a, b = getattr(ref, name), getattr(out, name)
        diff = np.argwhere((a != b).reshape(a.shape[0], -1).any(axis=1)).ravel()
        assert diff.size == 0, f"{name} differs on batch rows {diff[:10].tolist()}"


@pytest.mark.parametrize("weights", WEIGHTS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_backend_equals_lax(backend: str, weights: str) -> None:
    """Every `AntResults` field of ``backend`` equals `lax`'s on every row of the batch (both
    passes of every region), with the default and the learned weights (the learned ones are not
    powers of two: the back ends' multiply-adds must round like XLA's); its orders are schedules
    whose peaks the verifier confirms (every third row, first and last ant). New weights do
    not retrace either construction."""
    regions, batch, ref = _reference(weights)
    out = _run(backend, batch)
    _assert_identical(ref, out)
    assert (TRACES["lax"], TRACES[backend]) == (1, 1)
    for b in range(0, 2 * len(regions), 3):
        region = regions[b // 2]
        for ant in (0, out.order.shape[1] - 1):
            rep = verify_order(region, MACHINE, out.order[b, ant, : len(region)])
            assert [rep.peak_rp[f] for f in MACHINE.file_names] == out.peak[b, ant].tolist()


@pytest.mark.parametrize("weights", WEIGHTS)
def test_the_batch_is_not_vacuous(weights: str) -> None:
    """The equality tests compare more than initial states: some ants die (not all), some
    stall, and the ants of a row choose differently; the batch is bucket 512 with ready lists
    past 8 slots, regions past 256 instructions and regions of a smaller bucket."""
    regions, batch, ref = _reference(weights)
    assert ref.dead.any() and not ref.dead.all()
    assert (ref.stalls > 0).any()
    assert max(len({tuple(o) for o in ref.order[b]}) for b in range(ref.order.shape[0])) > 1
    assert batch.prep.succ.shape[1] - 1 == 512 == max(bucket_size(len(r)) for r in regions)
    assert max(r.ready_list_bound() for r in regions) > 8
    assert min(bucket_size(len(r)) for r in regions) <= 64


def test_the_learned_weights_matter() -> None:
    """The learned weights' `lax` orders differ from the default weights' on the same batch
    (same regions, limits, pheromone and seeds), so the learned case tests the heuristic."""
    assert (_reference("learned")[2].order != _reference("default")[2].order).any()


def test_the_soft_limit_steers() -> None:
    """The soft limit matters: with it at the RP limit, the `lax` orders change on the rows
    that had it lower, and only there (so the equality tests cover the waiting rule)."""
    _, batch, ref = _reference("default")
    plain = _run("lax", batch._replace(inp=batch.inp._replace(soft_limit=batch.inp.rp_limit)))
    lowered = np.asarray(batch.inp.soft_limit < batch.inp.rp_limit).any(axis=1)
    changed = (plain.order != ref.order).reshape(len(lowered), -1).any(axis=1)
    assert changed[lowered].any() and not changed[~lowered].any()


def test_a_regions_ants_do_not_depend_on_its_batch() -> None:
    """Two rows of a batch run alone give the batch's results: XLA fuses products into sums
    (one rounding) depending on the shapes it compiles, so the colony rounds every product
    apart (`antstate.rounded`). On this batch (32 regions of 17..32 instructions, a float16
    pheromone table) rows 24:26 differed alone before it did."""
    batch = construction_batch(generate_regions(32, 16, 17, 32), MACHINE, 32, tau_dtype=jnp.float16)
    fields = ("prep", "inp", "params", "keys", "uniform")
    rows = batch._replace(
        **{f: jax.tree.map(lambda x: x[24:26], getattr(batch, f)) for f in fields}
    )

    def lax_ants(p, i, pp, k, steps, u):
        return construct.construct_ants(
            p, i, pp, k, steps, wavefronts=WAVES, wavefront_size=WAVE, uniform_exploration=u,
            batch_axis="regions",
        )  # fmt: skip

    run = jax.jit(jax.vmap(lax_ants, in_axes=(0, 0, 0, 0, None, 0), axis_name="regions"))
    full, part = (jax.device_get(run(*b[:5], jnp.asarray(b.uniform))) for b in (batch, rows))
    _assert_identical(jax.tree.map(lambda x: x[24:26], full), part)


@needs_native
def test_native_under_jit_without_vmap_inactive_and_not_retraced() -> None:
    """One region's ILP pass by the native construction under `jit` without `vmap` (the FFI
    call unbatched): it equals `lax` (under `vmap`); with ``active`` False no step runs; new
    parameter values and the ``active`` flag are arguments (one trace). (The kernel runs under
    the colony's `vmap` only; that new weights do not retrace it: `test_backend_equals_lax`.)"""
    _, batch, ref = _reference("default")
    prep, inp, pp, keys, steps, uniform = batch
    row = 2 * GROUPS[0][0] + 1  # a region of 65..256 instructions
    prep, inp, pp, key, uniform, ref = jax.tree.map(
        lambda x: x[row], (prep, inp, pp, keys, uniform, ref)
    )

    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(pp, active):
        return native.construct_ants_native(
            prep, inp, pp, key, steps, active=active, uniform_exploration=uniform,
            wavefronts=WAVES, wavefront_size=WAVE,
        )  # fmt: skip

    chex.clear_trace_counter()
    _assert_identical(
        jax.tree.map(lambda x: x[None], ref),
        jax.tree.map(lambda x: np.asarray(x)[None], run(pp, jnp.bool_(True))),
    )
    other = pp._replace(decay=pp.decay * 0.5, weight_cp=pp.weight_cp + 0.5)
    idle = run(other, jnp.bool_(False))
    assert (np.asarray(idle.order) == prep.succ.shape[0] - 1).all()  # no step ran


def _schedule(regions: list[Region], construction: str) -> list:
    """`jaxsched.schedule` of ``regions`` by ``construction``: 64 ants in two wavefronts (two
    kernel programs of 32), a float16 pheromone table, the input order as the only start (so
    the colony runs), the filters on."""
    kw = dict(ants=64, wavefront_size=32, max_iterations=6, starts=("input",))
    return jaxsched.schedule(
        regions, MACHINE, seed=1, construction=construction, pheromone_dtype="float16", **kw
    )


@pytest.fixture(scope="module")
def lax_schedules(kernel_regions: list[Region]) -> tuple[list[Region], list]:
    """The bucket-32 regions of ``examples/kernel.jsonl`` (one bucket: one compilation per
    construction; `lax`'s widest decision is every slot) and their `lax` schedules, shared by
    the back ends."""
    regions = [r for r in kernel_regions if 16 < len(r) <= 32]
    return regions, _schedule(regions, "lax")


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_schedule_equals_lax(backend: str, lax_schedules: tuple[list[Region], list]) -> None:
    """`jaxsched.schedule` with ``backend`` (the colony's `vmap` over regions, passes ending
    apart, scalar weights, the pheromone in float16, the filters) returns `lax`'s results field
    by field; the verifier confirms them; the colony ran."""
    regions, ref = lax_schedules
    out = _schedule(regions, backend)
    fields = ("order", "length", "peak_rp", "rp_cost", "iterations", "source", "history")
    for region, a, b in zip(regions, ref, out, strict=True):
        assert [getattr(a, f) for f in fields] == [getattr(b, f) for f in fields]
        np.testing.assert_array_equal(a.cycles, b.cycles)
        rep = jaxsched.verify(region, MACHINE, b.cycles, order=b.order)
        assert (rep.length, rep.peak_rp, rep.rp_cost) == (b.length, b.peak_rp, b.rp_cost)
    assert sum(a.iterations[1] for a in ref) > 0  # the colony ran
