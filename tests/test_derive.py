"""The colony's per-region preparation on the host (`jaxsched.colony.derive`, NumPy) against
the jitted JAX functions it replaces, bit for bit; and a run whose regions are all settled on
the host compiles nothing."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsched
from jaxsched.colony.derive import LATENCY_PRIORITY, RP_PRIORITY, derive_host
from jaxsched.colony.prepared import prepare
from jaxsched.colony.problem import canonical_shape, problem, problem_host
from jaxsched.compilation import COMPILED
from jaxsched.heuristics.bounds import length_lower_bound_jax, rp_peak_lower_bound_jax
from jaxsched.heuristics.host_schedule import target_schedule_host
from jaxsched.heuristics.list_scheduler import (
    list_schedule,
    order_peak_rp,
    stall_schedule,
    target_schedule,
)
from jaxsched.machines import generic, get_machine
from jaxsched.machines.model import rp_cost_jax, rp_limits
from jaxsched.problem.format import load_regions
from jaxsched.problem.generate import generate_region
from jaxsched.problem.padded import PaddedShape, common_shape, padded_shape, stack
from jaxsched.problem.region import Region

DATA = Path(__file__).resolve().parent / "data"
#: 60 regions of 5..300 instructions from /work/shared/data/real-train.jsonl.gz (gfx906 code).
REAL_SAMPLE = DATA / "real_sample.jsonl.gz"


@partial(jax.jit, static_argnames=("ready_slots", "issue_width"))
def derive_jax(dev, machine, *, ready_slots: int, issue_width: int):
    """The jitted preparation `colony.problem` used before `derive_host` (the reference)."""

    def one(d):
        N = d.valid.shape[0]
        lut, target = machine.lut, machine.target_occupancy
        kw = dict(issue_width=issue_width)
        rp_lb = rp_cost_jax(rp_peak_lower_bound_jax(d), lut, target)
        rp = list_schedule(d, lut, priority=RP_PRIORITY, latencies=False, **kw)
        ilp = list_schedule(d, lut, priority=LATENCY_PRIORITY, latencies=True, **kw)
        inp = jnp.where(d.valid, jnp.arange(N, dtype=jnp.int32), N)
        limited = target_schedule(d, lut, rp_limits(lut, target, rp_lb), target, inp, issue_width)
        orders = jnp.stack([inp, rp.order, ilp.order, limited.order])
        return (
            prepare(d, ready_slots),
            orders,
            jax.vmap(lambda o: order_peak_rp(d, o))(orders),
            jax.vmap(lambda o: stall_schedule(d, o, issue_width)[1])(orders),
            rp_lb,
            length_lower_bound_jax(d, issue_width),
            jnp.max(jnp.where(d.valid, d.cp, 0)),
        )

    return jax.vmap(one)(dev)


def _assert_same(host, ref, what: str) -> None:
    """Equal dtypes, shapes and values, leaf by leaf."""
    h, r = jax.tree.leaves(host), jax.tree.leaves(ref)
    assert len(h) == len(r), what
    for k, (a, b) in enumerate(zip(h, r, strict=True)):
        a, b = np.asarray(a), np.asarray(b)
        assert (a.dtype, a.shape) == (b.dtype, b.shape), f"{what} leaf {k}"
        assert np.array_equal(a, b), f"{what} leaf {k}: {a} != {b}"


def _check(regions: list[Region], machine, shapes: dict[int, PaddedShape]) -> None:
    """Every region, padded to its bucket's shape in ``shapes`` (keyed by bucket size), alone in
    a batch of one: host derive == jitted derive. The jitted reference compiles once per shape
    and machine, whichever test (and region) comes first."""
    iw = machine.issue_width
    m = jax.tree.map(np.asarray, machine.arrays())
    for region in regions:
        shape = shapes[padded_shape(region, machine).n]
        dev, shape = stack([region], machine, shape)
        ref = derive_jax(dev, machine.arrays(), ready_slots=shape.ready, issue_width=iw)
        want = jax.tree.map(lambda x: x[0], jax.device_get(ref))
        row = jax.tree.map(lambda x: x[0], dev)
        got = derive_host(row, m, ready_slots=shape.ready, issue_width=iw)
        fields = (
            got.prep, got.start_order, got.start_peak, got.start_length,
            got.rp_lower_bound, got.length_lower_bound, got.critical_path,
        )  # fmt: skip
        _assert_same(fields, want, f"{machine.name} {region.name} ({len(region)})")


def _bucket_shapes(regions: list[Region], machine) -> dict[int, PaddedShape]:
    """Bucket size -> the canonical shape that every given region of the bucket fits in."""
    groups: dict[int, list[Region]] = {}
    for r in regions:
        groups.setdefault(padded_shape(r, machine).n, []).append(r)
    return {n: canonical_shape(common_shape(rs, machine)) for n, rs in groups.items()}


@pytest.fixture(scope="module")
def real_regions() -> list[Region]:
    return load_regions(REAL_SAMPLE)


GENERATED = [(1, 2), (2, 5), (3, 12), (4, 16), (5, 23), (6, 40), (7, 64), (8, 100)]


@pytest.fixture(scope="module")
def generated() -> list[Region]:
    return [generate_region(s, n) for s, n in GENERATED] + [_chain(1, "one"), _chain(20, "c")]


@pytest.fixture(scope="module")
def gfx906_shapes(real_regions, generated) -> dict[int, PaddedShape]:
    """One shape per bucket (16..512) for the real and generated regions together, so that the
    two gfx906 tests compile each bucket once."""
    return _bucket_shapes(real_regions + generated, jaxsched.gfx906())


def test_generated_regions_gfx906(generated, gfx906_shapes):
    _check(generated, jaxsched.gfx906(), gfx906_shapes)


@pytest.mark.slow
def test_real_regions_gfx906(real_regions, gfx906_shapes):
    assert len(real_regions) == 60
    assert sorted(gfx906_shapes) == [16, 32, 64, 128, 256, 512]  # every bucket checked
    _check(real_regions, jaxsched.gfx906(), gfx906_shapes)


def test_other_machines_and_issue_width_2(real_regions, generated):
    """gfx942 (other occupancy tables and target) and a generic machine issuing 2 per cycle,
    on regions of 2..64 instructions, all padded to one shape (bucket 64's; the gfx906 tests
    check each bucket's own shape): one compile per machine."""
    regions = [r for r in real_regions if len(r) <= 64] + generated[:7]  # not 100, no chains
    for machine in (get_machine("gfx942"), generic(issue_width=2)):
        shape = canonical_shape(common_shape(regions, machine))
        assert shape.n == 64
        _check(regions, machine, dict.fromkeys(_bucket_shapes(regions, machine), shape))


def test_target_schedule_host_under_tight_limits(real_regions):
    """The RP-limit filter (limits no order meets, sinks deferred) on a retargeted list
    schedule, as `engine.Host.retarget` runs it: each cost of the machine's range."""
    machine = jaxsched.gfx906()
    regions = [r for r in real_regions if 16 < len(r) <= 32][:4]
    shape = canonical_shape(common_shape(regions, machine))
    dev, _ = stack(regions, machine, shape)
    lut, target = machine.occupancy_lut, np.int32(machine.target_occupancy)

    @jax.jit
    def ref(dev, limit, feasible):
        return jax.vmap(lambda d, f: target_schedule(d, lut, limit, target, f, 1))(dev, feasible)

    rng = np.random.default_rng(0)  # any order ranks the instructions ("nid" first)
    feasible = np.full((len(regions), shape.n), shape.n, np.int32)
    for b, r in enumerate(regions):
        feasible[b, : len(r)] = rng.permutation(len(r))
    for cost in range(0, 10, 3):
        limit = rp_limits(lut, target, np.int32(cost), xp=np)
        want = jax.device_get(ref(dev, limit, feasible))
        for b in range(len(regions)):
            row = jax.tree.map(lambda x, b=b: x[b], dev)
            got = target_schedule_host(row, lut, limit, target, feasible[b], 1)
            _assert_same(got, jax.tree.map(lambda x, b=b: x[b], want), f"cost {cost} row {b}")


def test_problem_is_problem_host_on_device():
    regions = [generate_region(s, n) for s, n in [(1, 9), (2, 14), (3, 3)]]
    host = problem_host(regions, jaxsched.gfx906(), batch=4)
    dev = problem(regions, jaxsched.gfx906(), batch=4)
    assert all(isinstance(x, np.ndarray | np.generic) for x in jax.tree.leaves(host))
    assert all(isinstance(x, jax.Array) for x in jax.tree.leaves(dev))
    _assert_same(host, dev, "problem")
    derived = (host.dev, host.prep, host.start_order, host.start_peak, host.start_length)
    _assert_same(
        jax.tree.map(lambda x: x[3], derived), jax.tree.map(lambda x: x[0], derived), "pad"
    )
    assert list(host.real) == [True, True, True, False]


# ------------------------------------------------------------------------------ compilations
def _chain(n: int, name: str) -> Region:
    """A chain of ``n`` one-cycle VGPR ops: one order, at its length and RP bounds (settled)."""
    insts = [("v_mov", ["%0"], [])] + [
        (f"v_add {i}", [f"%{i}"], [f"%{i - 1}"]) for i in range(1, n)
    ]
    regs = {f"%{i}": ("VGPR", 1) for i in range(n)}
    edges = [(i - 1, i, 1) for i in range(1, n)]
    return Region.build(name, insts, regs, edges, live_out=[f"%{n - 1}"])


class _Compiles:
    """Counts XLA compilations (`jax.monitoring` backend-compile events) within the block."""

    def __init__(self) -> None:
        self.count = 0

    def _event(self, event: str, duration: float, **kw) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            self.count += 1

    def __enter__(self):
        jax.monitoring.register_event_duration_secs_listener(self._event)
        return self

    def __exit__(self, *exc) -> None:
        jax.monitoring.unregister_event_duration_listener(self._event)


def test_settled_regions_compile_nothing():
    """Regions settled at init (both passes skipped: their starts meet the bounds) are
    scheduled without compiling (or loading) any executable, in a bucket new to the process."""
    machine = jaxsched.gfx906()
    warm = jaxsched.schedule([_chain(3, "warm")], machine, seed=0)  # eager ops of the run
    assert warm[0].iterations == (0, 0)
    regions = [_chain(n, f"chain{n}") for n in (37, 50, 64)]  # bucket 64
    compiles = _Compiles()
    c0, l0 = COMPILED.compilations, COMPILED.loads
    with compiles:
        results = jaxsched.schedule(regions, machine, seed=1)
    assert [r.iterations for r in results] == [(0, 0)] * 3
    assert [r.length for r in results] == [37, 50, 64]
    assert (COMPILED.compilations, COMPILED.loads) == (c0, l0)
    assert compiles.count == 0
